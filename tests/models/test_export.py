"""Export folders: written from a model tree, loaded as a plain module with exact logits."""

import json

import numpy as np
import pytest
import torch
from PIL import Image
from safetensors.torch import load_file, save_file

from munet.models import AssembledVit, merge_components
from munet.models.export import (
    CONFIG_FILE,
    MODEL_FILE,
    ExportError,
    Preprocessing,
    load_exported,
    save_exported,
)
from munet.models.multipath import MultipathVit
from munet.models.predict import collect_images, predict_files
from tests.models.conftest import TINY, random_components, random_images

HEADLESS = TINY.replace(num_classes=0, width=8, num_heads=2, mlp_dim=16, num_layers=1)
NAMES = ["a", "b", "c", "d", "e"]


def _vit_export(tmp_path, image_size=16, storage=(20, 24)):
    components = random_components(TINY, image_size, seed=3)
    node = {"type": "vit", "arch": TINY.to_dict(), "image_size": image_size}
    folder = save_exported(
        tmp_path / "export",
        node,
        merge_components(components),
        preprocessing=Preprocessing(image_size, storage),
        class_names=NAMES,
        provenance={"agent_id": "VitCpu~t", "path_id": 4, "task_name": "t"},
        metrics={"test_quality": 0.75, "quality": 0.8},
    )
    return folder, components


def test_vit_export_round_trip_gives_exactly_the_assembled_logits(tmp_path):
    folder, components = _vit_export(tmp_path)
    assert sorted(p.name for p in folder.iterdir()) == ["README.md", CONFIG_FILE, MODEL_FILE]
    model, preprocess = load_exported(folder)
    assert isinstance(model, torch.nn.Module) and not model.training
    assert model.class_names == tuple(NAMES)
    images = random_images(4, 16)
    expected = AssembledVit(TINY, 16, components)(images)
    assert torch.equal(model(images), expected)
    assert preprocess.storage_size == (20, 24) and preprocess.image_size == 16
    config = json.loads((folder / CONFIG_FILE).read_text())
    assert config["provenance"]["path_id"] == 4 and config["metrics"]["test_quality"] == 0.75
    card = (folder / "README.md").read_text()
    assert "| test_quality | 0.7500 |" in card and "a, b, c, d, e" in card


def test_multipath_export_gives_exactly_the_multipath_logits(tmp_path):
    main = random_components(TINY, 16, seed=1)
    other = random_components(HEADLESS, 8, seed=2)
    generator = torch.Generator().manual_seed(5)
    router = {
        "norm.weight": torch.randn(5, generator=generator),
        "norm.bias": torch.randn(5, generator=generator),
        "dense.weight": torch.randn(2, 5, generator=generator),
        "dense.bias": torch.randn(2, generator=generator),
    }
    adapter = {"weight": torch.randn(5, 8, generator=generator), "bias": torch.randn(5)}
    node = {
        "type": "multipath",
        "router_lr_mult": 0.05,
        "paths": {
            "path_0": {"type": "vit", "arch": TINY.to_dict(), "image_size": 16},
            "path_1": {"type": "vit", "arch": HEADLESS.to_dict(), "image_size": 8},
        },
    }
    tensors = {f"path_0.{k}": v for k, v in merge_components(main).items()}
    tensors |= {f"path_1.{k}": v for k, v in merge_components(other).items()}
    tensors |= {f"multipath_router.{k}": v for k, v in router.items()}
    tensors |= {f"head_adapter_path_1.{k}": v for k, v in adapter.items()}
    folder = save_exported(
        tmp_path / "mp",
        node,
        tensors,
        preprocessing=Preprocessing([16, 8], (16, 16)),
        class_names=None,
        provenance={},
        metrics={},
    )
    model, preprocess = load_exported(folder)
    system = MultipathVit(
        [AssembledVit(TINY, 16, main), AssembledVit(HEADLESS, 8, other)], router, [adapter], 0.05
    )
    inputs = {16: random_images(3, 16), 8: random_images(3, 8, seed=2)}
    assert torch.equal(model(inputs), system(inputs))
    batch = preprocess(torch.zeros(2, 3, 16, 16, dtype=torch.uint8))
    assert sorted(batch) == [8, 16] and batch[8].shape == (2, 3, 8, 8)


def test_a_changed_tensor_is_refused_naming_it(tmp_path):
    folder, _ = _vit_export(tmp_path)
    original = load_file(str(folder / MODEL_FILE))

    def write(change) -> None:
        tensors = {k: v.clone() for k, v in original.items()}
        change(tensors)
        save_file(tensors, str(folder / MODEL_FILE))

    write(lambda t: t["encoderblock_1.mlp.fc1.bias"].add_(torch.eye(1, 32)[0]))
    with pytest.raises(ExportError, match="'encoderblock_1.mlp.fc1.bias' does not match"):
        load_exported(folder)
    write(lambda t: t.update({"head.bias": torch.zeros(7)}))
    with pytest.raises(ExportError, match=r"'head.bias' has shape \[7\]"):
        load_exported(folder)
    write(lambda t: t.pop("head.bias"))
    with pytest.raises(ExportError, match=r"missing \['head.bias'\]"):
        load_exported(folder)
    (folder / MODEL_FILE).write_bytes(b"not a safetensors file")
    with pytest.raises(ExportError, match="unreadable safetensors"):
        load_exported(folder)
    write(lambda t: None)  # the original bytes load again
    assert load_exported(folder)[0].head.bias.shape == (5,)


def test_bad_folders_and_configs(tmp_path):
    with pytest.raises(ExportError, match="does not exist"):
        load_exported(tmp_path / "nothing")
    folder, _ = _vit_export(tmp_path)
    config = json.loads((folder / CONFIG_FILE).read_text())
    (folder / CONFIG_FILE).write_text(json.dumps({**config, "version": 99}))
    with pytest.raises(ExportError, match="export version 99"):
        load_exported(folder)
    (folder / CONFIG_FILE).write_text("{not json")
    with pytest.raises(ExportError, match="not valid JSON"):
        load_exported(folder)


def test_export_never_overwrites_a_folder_with_files(tmp_path):
    target = tmp_path / "export"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    with pytest.raises(ExportError, match="exists and is not empty"):
        _vit_export(tmp_path)
    assert (target / "keep.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export"]  # no temporary left


def test_tensors_that_do_not_fit_the_tree_are_refused_before_writing(tmp_path):
    components = random_components(TINY, 16)
    del components["head"]
    with pytest.raises(ExportError, match="missing"):
        save_exported(
            tmp_path / "x",
            {"type": "vit", "arch": TINY.to_dict(), "image_size": 16},
            merge_components(components),
            preprocessing=Preprocessing(16, None),
            class_names=None,
            provenance={},
            metrics={},
        )
    assert not (tmp_path / "x").exists()


def test_preprocessing_accepts_any_mode_and_size(tmp_path):
    rng = np.random.default_rng(0)
    rgb = rng.integers(0, 256, (20, 24, 3), dtype=np.uint8)
    grey = rng.integers(0, 256, (31, 17), dtype=np.uint8)
    files = {
        "rgb.png": Image.fromarray(rgb),
        "rgba.png": Image.fromarray(np.dstack([rgb, np.full((20, 24), 7, np.uint8)])),
        "grey.png": Image.fromarray(grey),
        "palette.gif": Image.fromarray(rgb).convert("P"),
    }
    for name, image in files.items():
        image.save(tmp_path / name)
    preprocess = Preprocessing(16, (20, 24))
    # RGBA drops alpha: same pixels as the RGB file.
    assert np.array_equal(preprocess.load_image(tmp_path / "rgba.png"), rgb)
    grey_rgb = preprocess.load_image(tmp_path / "grey.png")
    assert grey_rgb.shape == (20, 24, 3)
    assert np.array_equal(grey_rgb[..., 0], grey_rgb[..., 2])
    batch = preprocess([tmp_path / n for n in files])
    assert batch.shape == (4, 3, 16, 16) and batch.min() >= -1 and batch.max() <= 1
    assert torch.equal(batch[0], batch[1])


def test_predict_files_skips_unreadable_images_and_names_them(tmp_path):
    folder, components = _vit_export(tmp_path)
    model, preprocess = load_exported(folder)
    images = tmp_path / "images"
    (images / "sub").mkdir(parents=True)
    rng = np.random.default_rng(1)
    for i in range(5):
        Image.fromarray(rng.integers(0, 256, (10 + i, 12, 3), dtype=np.uint8)).save(
            images / "sub" / f"{i}.png"
        )
    good = (images / "sub" / "0.png").read_bytes()
    (images / "broken.png").write_bytes(good[: len(good) // 2])  # a truncated file
    (images / "notes.txt").write_text("ignored: not an image extension")
    files = collect_images([images])
    assert [f.name for f in files] == ["broken.png", "0.png", "1.png", "2.png", "3.png", "4.png"]
    errors, progress = [], []
    predictions = list(
        predict_files(
            model, preprocess, files, top_k=3, batch_size=2, class_names=NAMES,
            on_error=lambda f, m: errors.append((f, m)), on_batch=progress.append,
        )
    )  # fmt: skip
    assert [e[0] for e in errors] == [str(images / "broken.png")]
    assert "cannot read image" in errors[0][1]
    assert progress == [2, 2, 2] and len(predictions) == 5
    expected = AssembledVit(TINY, 16, components)(preprocess(files[1:])).softmax(-1)
    top = expected.topk(3, dim=-1)
    for row, prediction in enumerate(predictions):
        assert prediction.classes == tuple(top.indices[row].tolist())
        assert prediction.names == tuple(NAMES[c] for c in prediction.classes)
        assert prediction.probabilities == pytest.approx(top.values[row].tolist(), abs=1e-6)
