"""Pinned fingerprints of rendered pretraining batches (generator_streams.json), for
tests/pretrain/test_generators.py.

A batch is pinned by what it shows, not by its bytes: float images differ in their last bits
from one CPU's SIMD path to another's (AVX-512, AVX2, none: ``ATEN_CPU_CAPABILITY``), by about
1e-6 a pixel, so a hash of them holds on one kind of machine only. Pinned instead, per image:
its mean in each channel, its spread (std), and the first and second moments of its
channel-mean intensity over the pixel grid (x, y in [-1, 1]: where the figure lies and how it
spreads), all within :data:`ATOL`; and the labels, exactly. Between SIMD paths these numbers
move by under 1e-7; a 1 % change of one constant of a generator (a zoom, a size, a contrast, an
instance's scale) moves them by 1e-3 to 6e-2.

The file was written at commit 1cb82d3 with ``ATEN_CPU_CAPABILITY=avx2``, where the fractal
batches matched, bit for bit, the sha256 digests pinned before (recorded on 2026-11-28). (It also
pinned the recipes munet pretrain has no more: fractal_ex, contours, contours_ex, noise and a
mix; their entries left with them.) Rewrite it only for an intended change of the stream:

    python -m tests.pretrain.generator_streams
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from munet.pretrain.generators import RECIPES, make_recipe, sample_batch

FILE = Path(__file__).with_name("generator_streams.json")
# Per image, in this order.
FINGERPRINT = ("mean_r", "mean_g", "mean_b", "std", "x", "y", "xx", "yy", "xy")
ATOL = 1e-4
# What is pinned: `make_recipe(name, 10, 0, instances=K)`, 8 images at 16 px, data seed 3, for
# these recipes with one instance per image and with up to three.
CLASSES, BATCH, SIZE, DATA_SEED = 10, 8, 16, 3
ONE_INSTANCE = RECIPES
THREE_INSTANCES = RECIPES


def render(name: str, instances: int) -> tuple[torch.Tensor, torch.Tensor]:
    recipe = make_recipe(name, CLASSES, 0, instances=instances)
    return sample_batch(recipe, BATCH, SIZE, torch.Generator().manual_seed(DATA_SEED))


def fingerprint(images: torch.Tensor) -> np.ndarray:
    """(B, len(FINGERPRINT)) numbers of images (B, 3, S, S), computed in float64."""
    size = images.shape[-1]
    axis = (torch.arange(size, dtype=torch.float64) + 0.5) / size * 2 - 1
    x, y = axis[None, None, :], axis[None, :, None]
    images = images.double()
    grey = images.mean(dim=1)  # (B, S, S)

    def moment(weight: torch.Tensor) -> torch.Tensor:
        return (grey * weight).mean(dim=(1, 2))

    columns = [
        *images.mean(dim=(2, 3)).T,
        images.flatten(1).std(dim=1),
        moment(x), moment(y), moment(x * x), moment(y * y), moment(x * y),
    ]  # fmt: skip
    return torch.stack(columns, dim=1).numpy()


def pinned(name: str, instances: int) -> dict:
    """The file's ``labels`` and ``fingerprint`` of a recipe's batch."""
    return json.loads(FILE.read_text())[f"{name} x{instances}"]


def check(name: str, instances: int) -> None:
    """Raises AssertionError unless the batch renders as pinned (labels exact, fingerprint
    within ATOL)."""
    images, labels = render(name, instances)
    expected = pinned(name, instances)
    np.testing.assert_array_equal(labels.numpy(), np.array(expected["labels"]))
    np.testing.assert_allclose(
        fingerprint(images), np.array(expected["fingerprint"]), rtol=0, atol=ATOL,
        err_msg=f"{name} with {instances} instance(s): columns {', '.join(FINGERPRINT)}",
    )  # fmt: skip


def write() -> None:
    """Renders the pinned batches and writes their labels and fingerprints to FILE."""
    entries = {}
    cases = [(name, 1) for name in ONE_INSTANCE] + [(name, 3) for name in THREE_INSTANCES]
    for name, instances in cases:
        images, labels = render(name, instances)
        rows = [[round(float(v), 7) for v in row] for row in fingerprint(images)]
        entries[f"{name} x{instances}"] = {"labels": labels.tolist(), "fingerprint": rows}
    lines = ["{"]
    for index, (key, entry) in enumerate(entries.items()):
        rows = ",\n".join(f"      {json.dumps(row)}" for row in entry["fingerprint"])
        comma = "," if index < len(entries) - 1 else ""
        lines += [
            f"  {json.dumps(key)}: {{",
            f'    "labels": {json.dumps(entry["labels"])},',
            f'    "fingerprint": [\n{rows}\n    ]',
            f"  }}{comma}",
        ]
    FILE.write_text("\n".join([*lines, "}"]) + "\n")


if __name__ == "__main__":
    write()
