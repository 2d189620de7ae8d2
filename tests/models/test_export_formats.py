"""`--format hf` and `--format onnx`: munet's logits in transformers and onnxruntime."""

import json

import numpy as np
import pytest
import torch
from PIL import Image

from munet.models import merge_components
from munet.models.arch import VitArch
from munet.models.export import ExportError, Preprocessing, load_exported, save_exported
from munet.models.export_hf import save_hf
from munet.models.export_onnx import save_onnx
from tests.models.conftest import random_components

NAMES = ["cat", "dog", "fish", "bird", "frog", "newt", "hare"]
# Not a multiple of the patch size's defaults in transformers (16), 7 classes (top-5 applies).
ARCH = VitArch(width=24, num_layers=2, num_heads=3, mlp_dim=40, patch_size=4, num_classes=7)


def _export(tmp_path, image_size=12, arch=ARCH, names=NAMES):
    components = random_components(arch, image_size, seed=11)
    return save_exported(
        tmp_path / "munet",
        {"type": "vit", "arch": arch.to_dict(), "image_size": image_size},
        merge_components(components),
        preprocessing=Preprocessing(image_size, (image_size, image_size)),
        class_names=names,
        provenance={"agent_id": "VitCpu~t", "path_id": 3, "task_name": "t"},
        metrics={"test_quality": 0.5},
    )


def _images(count, size, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return torch.rand(count, 3, size, size, generator=generator) * 2 - 1


def test_hf_folder_gives_munet_logits_in_transformers(tmp_path):
    transformers = pytest.importorskip("transformers")
    folder = _export(tmp_path)
    hf = save_hf(folder, tmp_path / "hf")
    assert {p.name for p in hf.iterdir()} == {
        "config.json", "model.safetensors", "preprocessor_config.json", "README.md",
        "image_processing_munet.py",
    }  # fmt: skip
    model = transformers.ViTForImageClassification.from_pretrained(str(hf)).eval()
    munet_model, _ = load_exported(folder)
    images = _images(5, 12)
    with torch.no_grad():
        theirs = model(pixel_values=images).logits
    ours = munet_model(images)
    torch.testing.assert_close(theirs, ours, rtol=1e-5, atol=1e-5)
    assert model.config.id2label[2] == "fish" and model.config.label2id["hare"] == 6
    assert model.config.layer_norm_eps == 1e-6 and model.config.image_size == 12
    card = (hf / "README.md").read_text()
    assert (
        card.startswith("---\nlibrary_name: transformers") and "ViTForImageClassification" in card
    )


def test_hf_processor_gives_munet_inputs_for_images_at_the_image_size(tmp_path):
    transformers = pytest.importorskip("transformers")
    folder = _export(tmp_path)
    hf = save_hf(folder, tmp_path / "hf")
    processor = transformers.AutoImageProcessor.from_pretrained(str(hf))
    rng = np.random.default_rng(0)
    pictures = [Image.fromarray(rng.integers(0, 256, (12, 12, 3), dtype=np.uint8)) for _ in "ab"]
    pictures.append(Image.fromarray(rng.integers(0, 256, (12, 12), dtype=np.uint8)))  # grey
    theirs = processor(images=pictures, return_tensors="pt")["pixel_values"]
    _, preprocess = load_exported(folder)
    ours = preprocess(pictures)
    torch.testing.assert_close(theirs, ours, rtol=0, atol=1e-6)
    model = transformers.ViTForImageClassification.from_pretrained(str(hf)).eval()
    munet_model, _ = load_exported(folder)
    with torch.no_grad():
        torch.testing.assert_close(model(pixel_values=theirs).logits, munet_model(ours),
                                   rtol=1e-5, atol=1e-5)  # fmt: skip


def test_hf_folder_reads_back_into_munet_with_the_same_tensors(tmp_path):
    """The inverse map is the inverse: munet's own Hugging Face reader gets the tensors back."""
    from munet.models.checkpoints.huggingface import read_folder

    folder = _export(tmp_path)
    hf = save_hf(folder, tmp_path / "hf")
    raw = read_folder(hf, None)
    model, _ = load_exported(folder)
    for name, tensor in model.state_dict().items():
        torch.testing.assert_close(raw.tensors[name], tensor, rtol=0, atol=0)


def test_onnx_model_gives_munet_logits_in_onnxruntime(tmp_path):
    onnxruntime = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    folder = _export(tmp_path)
    out = save_onnx(folder, tmp_path / "onnx")
    assert {p.name for p in out.iterdir()} == {"model.onnx", "config.json", "README.md"}
    session = onnxruntime.InferenceSession(str(out / "model.onnx"))
    munet_model, _ = load_exported(folder)
    for batch in (1, 6):  # the batch size is free
        images = _images(batch, 12, seed=batch)
        (logits,) = session.run(["logits"], {"pixel_values": images.numpy()})
        np.testing.assert_allclose(logits, munet_model(images).numpy(), rtol=1e-5, atol=1e-5)
    meta = session.get_modelmeta().custom_metadata_map
    assert json.loads(meta["class_names"]) == NAMES
    config = json.loads((out / "config.json").read_text())
    assert config["format"] == "munet-onnx-model" and "tensors" not in config


def _multipath_export(tmp_path):
    from tests.models.test_export import HEADLESS, TINY

    main = random_components(TINY, 16, seed=1)
    other = random_components(HEADLESS, 8, seed=2)
    router = {"norm.weight": torch.ones(5), "norm.bias": torch.zeros(5),
              "dense.weight": torch.zeros(2, 5), "dense.bias": torch.zeros(2)}  # fmt: skip
    tensors = {f"path_0.{k}": v for k, v in merge_components(main).items()}
    tensors |= {f"path_1.{k}": v for k, v in merge_components(other).items()}
    tensors |= {f"multipath_router.{k}": v for k, v in router.items()}
    tensors |= {"head_adapter_path_1.weight": torch.zeros(5, 8),
                "head_adapter_path_1.bias": torch.zeros(5)}  # fmt: skip
    node = {
        "type": "multipath",
        "router_lr_mult": 0.05,
        "paths": {
            "path_0": {"type": "vit", "arch": TINY.to_dict(), "image_size": 16},
            "path_1": {"type": "vit", "arch": HEADLESS.to_dict(), "image_size": 8},
        },
    }
    return save_exported(tmp_path / "multi", node, tensors, preprocessing=Preprocessing(
        [16, 8], None), class_names=None, provenance={}, metrics={})  # fmt: skip


@pytest.mark.parametrize("writer", [save_hf, save_onnx])
def test_multipath_models_are_refused_with_a_clear_error(tmp_path, writer):
    folder = _multipath_export(tmp_path)
    with pytest.raises(ExportError, match="singlepath paths only.*--format munet"):
        writer(folder, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


@pytest.mark.parametrize("writer", [save_hf, save_onnx])
def test_a_busy_out_folder_is_refused_and_kept(tmp_path, writer):
    folder = _export(tmp_path)
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "keep.txt").write_text("mine")
    with pytest.raises(ExportError, match="not empty"):
        writer(folder, busy)
    assert (busy / "keep.txt").read_text() == "mine"
