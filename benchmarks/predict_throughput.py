"""`munet predict`'s batched prediction against one image at a time, measured in one run.

    python benchmarks/predict_throughput.py [--images 256] [--batch-size 64] [--rounds 5]

Writes PNG files of mixed sizes and modes, exports a randomly initialised VitCpu-sized ViT
(4 blocks, 64 wide, 16 px), then times `predict_files` over the files with `--batch-size` and
with batch size 1 (the plain loop a user would write: decode, preprocess, forward, per file).
Prints images/s of both and `ratio: X` = batched over one-at-a-time. Rounds alternate the two,
and the rates are medians, so load drifting during the run hits both alike.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from munet.models import VitArch, init_components, merge_components
from munet.models.export import Preprocessing, load_exported, save_exported
from munet.models.predict import predict_files


def write_images(folder: Path, count: int) -> list[Path]:
    rng = np.random.default_rng(0)
    files = []
    for i in range(count):
        h, w = (int(v) for v in rng.integers(24, 64, size=2))
        image = Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
        image = image.convert(("RGB", "L", "RGBA", "P")[i % 4])
        path = folder / f"{i:05d}.png"
        image.save(path)
        files.append(path)
    return files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "images").mkdir()
        files = write_images(root / "images", args.images)
        arch = VitArch.from_size("mu/4", num_layers=4, num_classes=10)
        components = init_components(arch, 16, torch.Generator().manual_seed(0))
        save_exported(
            root / "model",
            {"type": "vit", "arch": arch.to_dict(), "image_size": 16},
            merge_components(components),
            preprocessing=Preprocessing(16, (32, 32)),
            class_names=None,
            provenance={},
            metrics={},
        )
        model, preprocess = load_exported(root / "model")

        def images_per_second(batch_size: int) -> float:
            start = time.perf_counter()
            count = sum(1 for _ in predict_files(model, preprocess, files, batch_size=batch_size))
            return count / (time.perf_counter() - start)

        images_per_second(args.batch_size)  # warm-up
        batched, single = [], []
        for _ in range(args.rounds):
            batched.append(images_per_second(args.batch_size))
            single.append(images_per_second(1))
    batched_rate, single_rate = statistics.median(batched), statistics.median(single)
    print(f"threads: {torch.get_num_threads()}  images: {args.images}")
    print(f"batched (batch {args.batch_size}): {batched_rate:.1f} images/s")
    print(f"one at a time: {single_rate:.1f} images/s")
    print(f"ratio: {batched_rate / single_rate:.2f}")


if __name__ == "__main__":
    main()
