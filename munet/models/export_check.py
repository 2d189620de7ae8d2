"""How closely an export's Hugging Face and ONNX forms predict like `munet predict`.

    python -m munet.models.export_check MUNET_DIR IMAGES_OR_FOLDERS... [--hf DIR] [--onnx DIR]

prints one line per form: the images compared, on how many the top-1 class differs from
`munet predict`'s, and the largest absolute logit difference. Each form is used the way its
model card says:

    hf        AutoImageProcessor.from_pretrained(DIR, trust_remote_code=True): the folder's
              image_processing_munet.py, munet's two-step resize; ViTForImageClassification
    hf-stock  AutoImageProcessor.from_pretrained(DIR): transformers' stock ViTImageProcessor
              (one PIL bilinear resize); the same model
    onnx      RGB, PIL bilinear resize to the storage size, x / 127.5 - 1 (the card's code);
              onnxruntime

MUNET_DIR is the munet export of the same path (`munet export`, the reference). `hf` runs the
folder's Python file (transformers copies it into its modules cache first).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from munet.models.export import load_exported
from munet.models.predict import collect_images, file_logits

FORMS = ("hf", "hf-stock", "onnx")


@dataclass(frozen=True)
class Agreement:
    """How one form's logits compare with `munet predict`'s on the same files.

    Attributes:
        form: "hf", "hf-stock" or "onnx".
        images: files compared.
        top1_differ: files whose top-1 class differs.
        max_logit_diff: the largest |logit - munet's logit| over files and classes.
    """

    form: str
    images: int
    top1_differ: int
    max_logit_diff: float

    def line(self) -> str:
        return (
            f"{self.form:9s} {self.images} images, top-1 differs on {self.top1_differ}, "
            f"max |logit diff| {self.max_logit_diff:.3g}"
        )


def agreement(form: str, reference: np.ndarray, logits: np.ndarray) -> Agreement:
    """Compares (N, classes) logits with munet's.

    Raises:
        ValueError: the shapes differ.
    """
    reference, logits = np.asarray(reference), np.asarray(logits)
    if reference.shape != logits.shape:
        raise ValueError(f"{form}: logits of shape {logits.shape}; munet's are {reference.shape}")
    differ = int((reference.argmax(-1) != logits.argmax(-1)).sum())
    return Agreement(form, len(reference), differ, float(np.abs(reference - logits).max()))


def munet_logits(folder: str | os.PathLike[str], files: Sequence[Path]) -> np.ndarray:
    """`munet predict`'s logits for the files (the reference)."""
    model, preprocess = load_exported(folder)
    return file_logits(model, preprocess, files).numpy()


def hf_logits(
    folder: str | os.PathLike[str],
    files: Sequence[Path],
    *,
    trust_remote_code: bool,
    batch_size: int = 64,
) -> np.ndarray:
    """transformers' logits for the files: AutoImageProcessor + ViTForImageClassification,
    each image opened with PIL as a user would."""
    from PIL import Image
    from transformers import AutoImageProcessor, ViTForImageClassification

    processor = AutoImageProcessor.from_pretrained(str(folder), trust_remote_code=trust_remote_code)
    model = ViTForImageClassification.from_pretrained(str(folder)).eval()
    rows = []
    for start in range(0, len(files), batch_size):
        images = []
        for file in files[start : start + batch_size]:
            with Image.open(file) as image:
                image.load()
                images.append(image.copy())
        inputs = processor(images=images, return_tensors="pt")
        with torch.inference_mode():
            rows.append(model(**inputs).logits.float().numpy())
    return np.concatenate(rows)


def onnx_pixel_values(
    file: str | os.PathLike[str], storage_size: Sequence[int] | None
) -> np.ndarray:
    """The ONNX model card's preprocessing of one image file: (3, H, W) float32 in [-1, 1]."""
    from PIL import Image

    with Image.open(file) as opened:
        image = opened.convert("RGB")
    if storage_size:
        height, width = storage_size
        if image.size != (width, height):
            image = image.resize((width, height), Image.BILINEAR)
    return (np.asarray(image, np.float32) / 127.5 - 1).transpose(2, 0, 1)


def onnx_logits(folder: str | os.PathLike[str], files: Sequence[Path]) -> np.ndarray:
    """onnxruntime's logits for the files, through the card's preprocessing (one run per
    image when the export has no storage size: the images then keep their own sizes)."""
    import onnxruntime

    config = json.loads((Path(folder) / "config.json").read_text())
    storage = config["onnx"].get("input_size")
    session = onnxruntime.InferenceSession(str(Path(folder) / config["onnx"]["file"]))
    chunk = 64 if storage else 1
    rows = []
    for start in range(0, len(files), chunk):
        batch = np.stack([onnx_pixel_values(f, storage) for f in files[start : start + chunk]])
        rows.append(session.run(["logits"], {"pixel_values": batch})[0])
    return np.concatenate(rows)


def check(
    munet_folder: str | os.PathLike[str],
    images: Sequence[str | os.PathLike[str]],
    *,
    hf_folder: str | os.PathLike[str] | None = None,
    onnx_folder: str | os.PathLike[str] | None = None,
) -> list[Agreement]:
    """Every given form against `munet predict` on the image files (folders expanded).

    Raises:
        ValueError: no image files, or one that cannot be read.
    """
    files = collect_images(images)
    if not files:
        raise ValueError(f"no image files in {[str(i) for i in images]}")
    reference = munet_logits(munet_folder, files)
    results = []
    if hf_folder is not None:
        for form, trust in (("hf", True), ("hf-stock", False)):
            logits = hf_logits(hf_folder, files, trust_remote_code=trust)
            results.append(agreement(form, reference, logits))
    if onnx_folder is not None:
        results.append(agreement("onnx", reference, onnx_logits(onnx_folder, files)))
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m munet.models.export_check",
        description="Compare an export's Hugging Face and ONNX forms with munet predict.",
    )
    parser.add_argument("munet_folder", help="the munet export (munet export --out DIR)")
    parser.add_argument("images", nargs="+", help="image files or folders")
    parser.add_argument("--hf", help="the --format hf folder of the same path")
    parser.add_argument("--onnx", help="the --format onnx folder of the same path")
    args = parser.parse_args(argv)
    if args.hf is None and args.onnx is None:
        parser.error("give --hf DIR, --onnx DIR or both")
    try:
        results = check(args.munet_folder, args.images, hf_folder=args.hf, onnx_folder=args.onnx)
    except (ValueError, FileNotFoundError, ImportError) as error:  # ExportError included
        print(f"export_check: error: {error}", file=sys.stderr)
        return 2
    for result in results:
        print(result.line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
