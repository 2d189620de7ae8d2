"""Hybrid ViTs (a ResNet stem before the patch embedding) through export: munet's own folder
(the model tree carries the stem; `load_exported` rebuilds it), ONNX (onnxruntime computes
munet's logits), `--format hf` refused before anything is written, and `predict_files`."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from PIL import Image

from munet.models import AssembledVit, merge_components
from munet.models.arch import StemArch, VitArch
from munet.models.export import ExportError, Preprocessing, load_exported, save_exported
from munet.models.export_hf import hf_refusal, save_hf
from munet.models.predict import predict_files
from munet.models.stem import StemRoot, StemStage
from tests.models.conftest import random_components

# The stem at its smallest: a stride-1 root and one (stride-1) stage: stride 2, a 4 x 4 grid
# at 8 px.
HYBRID = VitArch(
    width=32, num_layers=2, num_heads=2, mlp_dim=64, patch_size=2, num_classes=3,
    stem=StemArch(width=8, stages=(1,), root_kernel=3, root_stride=1, root_pool=False, groups=4),
)  # fmt: skip
# vit_jax's root (7 x 7 / 2 and the 3 x 3 / 2 max pool: XLA's "SAME" padding puts the odd pixel
# after) and a strided second stage: stride 8 over 16 px images.
POOLED = VitArch(
    width=32, num_layers=1, num_heads=2, mlp_dim=64, patch_size=1, num_classes=4,
    stem=StemArch(width=8, stages=(1, 1), groups=4),
)  # fmt: skip
NAMES = ["cat", "dog", "fish"]
# onnxruntime against munet's float32 forward: about 1e-6 measured over these models (logits
# of magnitude 1-4); the bound leaves a margin for other CPUs' kernels.
ONNX_TOLERANCE = {"rtol": 1e-5, "atol": 1e-5}


def _export(tmp_path, arch=HYBRID, image_size=8, names=None, seed=3):
    components = random_components(arch, image_size, seed=seed)
    folder = save_exported(
        tmp_path / "munet",
        {"type": "vit", "arch": arch.to_dict(), "image_size": image_size},
        merge_components(components),
        preprocessing=Preprocessing(image_size, (image_size, image_size)),
        class_names=names,
        provenance={"agent_id": "VitCpu~t", "path_id": 2, "full_id": "VitCpu~t:2"},
        metrics={"test_quality": 0.5},
    )
    return folder, components


def _images(count, size, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return torch.rand(count, 3, size, size, generator=generator) * 2 - 1


def test_the_hybrid_arch_is_a_stem_and_a_vit():
    assert HYBRID.is_hybrid and HYBRID.stride == 2 and HYBRID.grid_size(8) == 4
    assert POOLED.stride == 8 and POOLED.grid_size(16) == 2
    assert VitArch.from_dict(json.loads(json.dumps(HYBRID.to_dict()))) == HYBRID


@pytest.mark.parametrize(("arch", "size"), [(HYBRID, 8), (POOLED, 16)])
def test_munet_export_carries_the_stem_and_gives_the_assembled_logits(tmp_path, arch, size):
    folder, components = _export(tmp_path, arch, size, names=None)
    config = json.loads((folder / "config.json").read_text())
    assert config["model"]["arch"]["stem"] == arch.stem.to_dict()
    model, preprocess = load_exported(folder)
    assert model.arch == arch and preprocess.image_size == size
    assert isinstance(model.stem_root, StemRoot)
    stages = [f"stem_block{i + 1}" for i in range(len(arch.stem.stages))]
    assert all(isinstance(getattr(model, name), StemStage) for name in stages)
    names = [name for name, _ in model.named_children()]
    assert names[: 2 + len(stages)] == ["stem_root", *stages, "embedding"]
    # Every stem tensor is in the file and in the config's table (so the sha256 check covers it).
    stem_tensors = {n for n in model.state_dict() if n.startswith("stem_")}
    assert {"stem_root.conv.weight", "stem_block1.unit1.conv3.weight"} <= stem_tensors
    assert stem_tensors <= set(config["tensors"])
    assert config["num_params"] == sum(p.numel() for p in model.parameters())
    images = _images(3, size)
    expected = AssembledVit(arch, size, components)(images)
    torch.testing.assert_close(model(images), expected, rtol=0, atol=0)


def test_a_changed_stem_tensor_is_refused_naming_it(tmp_path):
    from safetensors.torch import load_file, save_file

    folder, _ = _export(tmp_path)
    flat = load_file(str(folder / "model.safetensors"))
    flat["stem_block1.unit1.conv2.weight"][0, 0, 0, 0] += 1
    save_file(flat, str(folder / "model.safetensors"))
    with pytest.raises(ExportError, match="'stem_block1.unit1.conv2.weight' does not match"):
        load_exported(folder)


@pytest.mark.parametrize(("arch", "size"), [(HYBRID, 8), (POOLED, 16)])
def test_onnx_gives_munet_logits_in_onnxruntime(tmp_path, arch, size):
    onnxruntime = pytest.importorskip("onnxruntime")
    onnx = pytest.importorskip("onnx")
    from munet.models.export_onnx import save_onnx

    folder, _ = _export(tmp_path, arch, size)
    out = save_onnx(folder, tmp_path / "onnx")
    ops = {node.op_type for node in onnx.load(str(out / "model.onnx")).graph.node}
    assert "Conv" in ops  # the stem's convolutions are in the graph
    if arch.stem.root_pool:
        assert "MaxPool" in ops
    session = onnxruntime.InferenceSession(str(out / "model.onnx"))
    model, _ = load_exported(folder)
    for batch in (1, 5):  # the batch size stays free with a stem
        images = _images(batch, size, seed=batch)
        (logits,) = session.run(["logits"], {"pixel_values": images.numpy()})
        with torch.no_grad():
            expected = model(images).numpy()
        assert np.abs(expected).max() > 0.1  # random weights: logits worth comparing
        np.testing.assert_allclose(logits, expected, **ONNX_TOLERANCE)
    config = json.loads((out / "config.json").read_text())
    assert config["model"]["arch"]["stem"] == arch.stem.to_dict()


def test_hf_refuses_a_hybrid_before_writing_anything(tmp_path):
    folder, _ = _export(tmp_path, names=NAMES)
    out = tmp_path / "new" / "hf"
    with pytest.raises(ExportError) as error:
        save_hf(folder, out)
    message = str(error.value)
    assert message.startswith("path VitCpu~t:2: a hybrid ViT")
    assert "transformers 5.x has no ViT-hybrid class" in message
    assert "--format onnx" in message and "--format munet" in message
    assert not (tmp_path / "new").exists()
    # The check reads the model tree alone: a plain ViT and a multipath tree pass it.
    assert hf_refusal({"type": "vit", "arch": HYBRID.replace(stem=None).to_dict()}, "x") is None
    assert hf_refusal({"type": "multipath", "paths": {}}, "x") is None


def test_predict_files_on_an_exported_hybrid(tmp_path):
    folder, _ = _export(tmp_path, names=NAMES)
    model, preprocess = load_exported(folder)
    rng = np.random.default_rng(0)
    files = []
    for index, (shape, mode) in enumerate([((8, 8, 3), "RGB"), ((20, 13, 3), "RGB"),
                                           ((9, 9), "L")]):  # fmt: skip
        files.append(tmp_path / f"image{index}.png")
        Image.fromarray(rng.integers(0, 256, shape, dtype=np.uint8), mode).save(files[-1])
    predictions = list(
        predict_files(model, preprocess, files, top_k=2, batch_size=2, class_names=NAMES)
    )
    assert [p.file for p in predictions] == [str(f) for f in files]
    with torch.no_grad():
        probabilities = model(preprocess([str(f) for f in files])).softmax(-1)
    for prediction, row in zip(predictions, probabilities, strict=True):
        assert prediction.classes[0] == int(row.argmax())
        assert prediction.names[0] == NAMES[prediction.classes[0]]
        assert prediction.probabilities[0] == pytest.approx(float(row.max()), abs=1e-6)
