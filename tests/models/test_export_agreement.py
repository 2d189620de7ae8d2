"""The exports' own preprocessing predicts like `munet predict` on images of any size and mode.

A random tiny ViT (12 px, patch 4) whose task stored images at 18 x 14 (height x width, so a
swapped axis shows), against a folder of PNG files at 20, 32, 47 x 33, 64 px, the image size
and the storage size, in RGB, grey, RGBA with transparent pixels and palette mode. Each form
is used as its model card says: transformers through `AutoImageProcessor` (with the folder's
processor; the stock one where it is exact), onnxruntime through the card's own code.
"""

import re
import sys

import numpy as np
import pytest
import torch
from PIL import Image

from munet.models import merge_components
from munet.models.arch import VitArch
from munet.models.export import Preprocessing, load_exported, save_exported
from munet.models.export_check import check, hf_logits, munet_logits, onnx_logits
from munet.models.export_hf import save_hf, stock_processor_is_exact
from munet.models.export_onnx import save_onnx
from munet.models.predict import collect_images, file_logits, predict_files
from tests.models.conftest import random_components

ARCH = VitArch(width=24, num_layers=2, num_heads=3, mlp_dim=40, patch_size=4, num_classes=6)
SIZE = 12
STORAGE = (18, 14)
# float32 rounding through two runtimes: about 1e-5 measured (the ONNX resize computes its
# sample positions in another order than torch's).
LOGIT_ATOL = 1e-4
# (width, height) of the files, and their modes.
FILE_SIZES = [(20, 20), (32, 32), (47, 33), (64, 64), (SIZE, SIZE), (STORAGE[1], STORAGE[0])]
MODES = ["RGB", "L", "RGBA", "P"]


def _export(tmp_path, storage=STORAGE, name="munet"):
    components = random_components(ARCH, SIZE, seed=5)
    return save_exported(
        tmp_path / name,
        {"type": "vit", "arch": ARCH.to_dict(), "image_size": SIZE},
        merge_components(components),
        preprocessing=Preprocessing(SIZE, storage),
        class_names=[f"c{i}" for i in range(6)],
        provenance={"agent_id": "VitCpu~t", "path_id": 1, "task_name": "t"},
        metrics={},
    )


def _picture(rng, width, height, mode):
    # Smooth content (a coarse random grid, upsampled) so resizes matter but stay tame.
    coarse = rng.integers(0, 256, (4, 4, 3), dtype=np.uint8)
    image = Image.fromarray(coarse).resize((width, height), Image.BICUBIC)
    if mode == "RGBA":
        alpha = rng.integers(0, 256, (height, width), dtype=np.uint8)
        alpha[: height // 2] = 0  # transparent pixels whose colour munet still reads
        image.putalpha(Image.fromarray(alpha))
        return image
    if mode == "P":
        return image.quantize(colors=16)
    return image.convert(mode)


def _image_folder(tmp_path, opaque=False):
    folder = tmp_path / "images"
    folder.mkdir()
    rng = np.random.default_rng(3)
    for i, (width, height) in enumerate(FILE_SIZES):
        for mode in MODES:
            if opaque and mode == "RGBA":
                mode = "RGB"
            _picture(rng, width, height, mode).save(folder / f"{width}x{height}_{mode}_{i}.png")
    return folder


@pytest.fixture
def hf_modules(tmp_path, monkeypatch):
    """transformers copies remote-code files into its modules cache: a temporary one here."""
    dynamic = pytest.importorskip("transformers.dynamic_module_utils")
    monkeypatch.setattr(dynamic, "HF_MODULES_CACHE", str(tmp_path / "hf_modules"))
    monkeypatch.setattr(sys, "path", list(sys.path))


def _assert_predicts_like_munet(reference, logits):
    np.testing.assert_array_equal(logits.argmax(-1), reference.argmax(-1))
    np.testing.assert_allclose(logits, reference, rtol=0, atol=LOGIT_ATOL)


def test_the_reference_logits_are_munet_predicts(tmp_path):
    folder = _export(tmp_path)
    files = collect_images([_image_folder(tmp_path)])
    model, preprocess = load_exported(folder)
    logits = file_logits(model, preprocess, files, batch_size=5)
    assert logits.shape == (len(files), 6) and len(files) == len(FILE_SIZES) * len(MODES)
    predictions = list(predict_files(model, preprocess, files, top_k=1, batch_size=7))
    assert [p.classes[0] for p in predictions] == logits.argmax(-1).tolist()
    assert len(set(logits.argmax(-1).tolist())) > 1  # the images are told apart
    with torch.no_grad():  # one file at a time, straight through the preprocessing
        one = model(preprocess([str(files[3])]))
    torch.testing.assert_close(logits[3:4], one, rtol=0, atol=1e-6)


def test_hf_with_the_folders_processor_predicts_like_munet(tmp_path, hf_modules):
    transformers = pytest.importorskip("transformers")
    folder = _export(tmp_path)
    hf = save_hf(folder, tmp_path / "hf")
    images = _image_folder(tmp_path)
    files = collect_images([images])
    processor = transformers.AutoImageProcessor.from_pretrained(str(hf), trust_remote_code=True)
    assert type(processor).__name__ == "MunetImageProcessor"
    _, preprocess = load_exported(folder)
    for file in files:  # the pixel values themselves, image by image
        with Image.open(file) as image:
            theirs = processor(images=image, return_tensors="pt")["pixel_values"]
        torch.testing.assert_close(theirs, preprocess([str(file)]), rtol=0, atol=1e-6)
    _assert_predicts_like_munet(
        munet_logits(folder, files), hf_logits(hf, files, trust_remote_code=True)
    )
    (result,) = check(folder, [images], hf_folder=hf)[:1]
    assert result.form == "hf" and result.top1_differ == 0 and result.images == len(files)


def test_hf_cards_code_predicts_like_munet(tmp_path, hf_modules):
    pytest.importorskip("transformers")
    folder = _export(tmp_path)
    hf = save_hf(folder, tmp_path / "hf")
    files = collect_images([_image_folder(tmp_path)])
    card = (hf / "README.md").read_text()
    reference = munet_logits(folder, files)
    for index in (2, 9):  # an RGBA file with transparent pixels, another size and mode
        namespace: dict = {}
        code = _python_block(card, "Use with transformers")
        code = code.replace("THIS_FOLDER", str(hf)).replace("cat.png", str(files[index]))
        exec(code, namespace)  # the card's code, as a user would paste it
        assert namespace["label"] == f"c{reference[index].argmax()}"


def test_onnx_with_the_cards_preprocessing_predicts_like_munet(tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    folder = _export(tmp_path)
    out = save_onnx(folder, tmp_path / "onnx")
    images = _image_folder(tmp_path)
    files = collect_images([images])
    reference = munet_logits(folder, files)
    _assert_predicts_like_munet(reference, onnx_logits(out, files))
    card = (out / "README.md").read_text()
    assert "image.resize((14, 18), Image.BILINEAR)" in card  # (width, height) for PIL
    for index in (2, 9, len(files) - 1):
        namespace: dict = {}
        code = _python_block(card, "Use with onnxruntime")
        code = code.replace("THIS_FOLDER", str(out)).replace("cat.png", str(files[index]))
        exec(code, namespace)
        _assert_predicts_like_munet(reference[index : index + 1], namespace["logits"])


def test_the_check_command_prints_one_line_per_form(tmp_path, capsys):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from munet.models.export_check import main

    folder = _export(tmp_path)
    out = save_onnx(folder, tmp_path / "onnx")
    images = _image_folder(tmp_path)
    assert main([str(folder), str(images), "--onnx", str(out)]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith(f"onnx      {len(FILE_SIZES) * len(MODES)} images, top-1 differs on 0,")
    with pytest.raises(SystemExit):
        main([str(folder), str(images)])  # no form to compare
    assert "give --hf DIR, --onnx DIR or both" in capsys.readouterr().err
    assert main([str(tmp_path / "nothing"), str(images), "--onnx", str(out)]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_onnx_still_takes_munets_own_inputs_at_the_image_size(tmp_path):
    """The resize in the graph is the identity for what munet's preprocessing returns."""
    onnxruntime = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    folder = _export(tmp_path)
    out = save_onnx(folder, tmp_path / "onnx")
    model, preprocess = load_exported(folder)
    inputs = preprocess([str(f) for f in collect_images([_image_folder(tmp_path)])[:8]])
    session = onnxruntime.InferenceSession(str(out / "model.onnx"))
    (logits,) = session.run(["logits"], {"pixel_values": inputs.numpy()})
    with torch.no_grad():
        np.testing.assert_allclose(logits, model(inputs).numpy(), rtol=0, atol=1e-5)


def test_without_a_storage_size_every_form_resizes_straight_to_the_image_size(
    tmp_path, hf_modules
):
    pytest.importorskip("transformers")
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    folder = _export(tmp_path, storage=None)
    hf = save_hf(folder, tmp_path / "hf")
    out = save_onnx(folder, tmp_path / "onnx")
    files = collect_images([_image_folder(tmp_path)])
    reference = munet_logits(folder, files)
    _assert_predicts_like_munet(reference, hf_logits(hf, files, trust_remote_code=True))
    _assert_predicts_like_munet(reference, onnx_logits(out, files))


def test_the_stock_processor_is_exact_when_the_storage_size_is_the_image_size(tmp_path):
    """No remote code: transformers' own ViTImageProcessor, for images without transparency
    (it composites those onto white, munet drops the alpha channel: docs/export.md)."""
    transformers = pytest.importorskip("transformers")
    assert stock_processor_is_exact(SIZE, (SIZE, SIZE))
    assert not stock_processor_is_exact(SIZE, STORAGE) and not stock_processor_is_exact(SIZE, None)
    folder = _export(tmp_path, storage=(SIZE, SIZE))
    hf = save_hf(folder, tmp_path / "hf")
    processor = transformers.AutoImageProcessor.from_pretrained(str(hf))
    assert type(processor).__name__.startswith("ViTImageProcessor")
    files = collect_images([_image_folder(tmp_path, opaque=True)])
    reference = munet_logits(folder, files)
    _assert_predicts_like_munet(reference, hf_logits(hf, files, trust_remote_code=False))
    assert "also gives munet's input" in (hf / "README.md").read_text()


def test_the_stock_processor_card_says_it_differs_where_it_does(tmp_path):
    folder = _export(tmp_path)
    card = (save_hf(folder, tmp_path / "hf") / "README.md").read_text()
    assert "to the task's storage size (18 x 14), then to 12 px" in card
    assert "differ from munet's on some images" in card


def _python_block(card: str, heading: str) -> str:
    section = card.split(f"## {heading}\n", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None, f"no python block under {heading!r}"
    return match.group(1)


def test_munets_processor_takes_arrays_and_names_what_it_cannot_take():
    pytest.importorskip("transformers")
    from munet.models.export_hf_processor import MunetImageProcessor

    processor = MunetImageProcessor(size={"height": SIZE, "width": SIZE}, storage_size=STORAGE)
    preprocess = Preprocessing(SIZE, STORAGE)
    rng = np.random.default_rng(1)
    for array in (rng.integers(0, 256, (30, 22), dtype=np.uint8),
                  rng.integers(0, 256, (9, 40, 4), dtype=np.uint8)):  # fmt: skip
        theirs = processor(array, return_tensors="pt")["pixel_values"]
        torch.testing.assert_close(theirs, preprocess([array]), rtol=0, atol=1e-6)
    assert processor([array, array])["pixel_values"].shape == (2, 3, SIZE, SIZE)  # numpy
    with pytest.raises(ValueError, match=r"shape \(3, 8, 8\): expected a PIL image"):
        processor(np.zeros((3, 8, 8), np.uint8))  # channels first
    with pytest.raises(ValueError, match="size=.*expected"):
        MunetImageProcessor(size={"height": 12, "width": 16})
