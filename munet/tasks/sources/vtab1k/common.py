"""Helpers shared by the `1k/*` generators: balanced labels, chunked rendering, uint8 output."""

from __future__ import annotations

from collections.abc import Callable

import torch

from munet.tasks.sources.base import SplitArrays

IMAGE_SIZE = 32  # native side of every generated 1k image (VitCpu resizes to 8-24 px)
CHUNK = 500  # images rendered at once, bounding memory

#: Renders a chunk of `factors` (N,), one balanced factor per example (the label itself, or the
#: latent the label is derived from: dSprites' x index, CLEVR's object count), into (N, 3, S, S)
#: float images in [0, 1], drawing the other factors from the generator; returns the images and
#: their labels.
Renderer = Callable[[torch.Tensor, torch.Generator], tuple[torch.Tensor, torch.Tensor]]


def balanced_labels(n: int, num_classes: int, g: torch.Generator) -> torch.Tensor:
    """`n` labels in [0, num_classes), every class n // num_classes or one more times, shuffled:
    a split of 800 or 200 then holds every class in near-equal numbers (as a stratified sample
    of a uniform dataset would)."""
    labels = torch.arange(n) % num_classes
    return labels[torch.randperm(n, generator=g)]


def uniform(shape: tuple[int, ...], lo: float, hi: float, g: torch.Generator) -> torch.Tensor:
    """Uniform float32 samples in [lo, hi)."""
    return lo + (hi - lo) * torch.rand(shape, generator=g)


def pixel_centres(size: int = IMAGE_SIZE) -> tuple[torch.Tensor, torch.Tensor]:
    """(1, S, S) x and y coordinates of pixel centres (x right, y down), in pixels."""
    coords = torch.arange(size, dtype=torch.float32) + 0.5
    yy, xx = torch.meshgrid(coords, coords, indexing="ij")
    return xx[None], yy[None]


def coverage(distance: torch.Tensor) -> torch.Tensor:
    """Antialiased coverage of a pixel from the signed distance (pixels, negative inside) at
    its centre: the share of a one-pixel-wide box inside a straight edge."""
    return (0.5 - distance).clamp(0.0, 1.0)


def to_uint8(images: torch.Tensor) -> torch.Tensor:
    """[0, 1] float images to uint8."""
    return images.clamp(0, 1).mul(255).round().to(torch.uint8)


def render_split(n: int, num_factors: int, render: Renderer, g: torch.Generator) -> SplitArrays:
    """Renders a split of `n` examples whose balanced factor takes `num_factors` values, chunk
    by chunk (memory stays bounded; the result depends only on the state of `g`)."""
    factors = balanced_labels(n, num_factors, g)
    images, out_labels = [], []
    for start in range(0, n, CHUNK):
        chunk_images, chunk_labels = render(factors[start : start + CHUNK], g)
        images.append(to_uint8(chunk_images))
        out_labels.append(chunk_labels.to(torch.int64))
    if not images:
        empty = torch.empty(0, 3, IMAGE_SIZE, IMAGE_SIZE, dtype=torch.uint8)
        return SplitArrays(empty, torch.empty(0, dtype=torch.int64))
    return SplitArrays(torch.cat(images), torch.cat(out_labels))
