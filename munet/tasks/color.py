"""Colour augmentation on image batches (step 6 of munet.tasks.augment's pipeline): the seed's
`tf.image.random_brightness|contrast|saturation|hue` semantics on a [0, 1] scale, applied
per image to (B, 3, H, W) tensors without a full HSV round trip, and the HSV maps they use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from munet.tasks.augment import AugmentConfig


def rgb_to_hsv(rgb: torch.Tensor) -> torch.Tensor:
    """(B, 3, H, W) RGB in [0, 1] -> HSV, hue in [0, 1) turns."""
    value, chroma, hue6 = _value_chroma_hue6(rgb)
    sat = torch.where(value > 0, chroma / value.clamp_min(1e-12), torch.zeros_like(value))
    return torch.cat([torch.remainder(hue6, 6.0) / 6.0, sat, value], dim=1)


def hsv_to_rgb(hsv: torch.Tensor) -> torch.Tensor:
    """(B, 3, H, W) HSV (hue in turns) -> RGB in [0, 1]."""
    hue, sat, value = hsv.split(1, dim=1)
    return _rgb_from_hue6(value, value * sat, torch.remainder(hue, 1.0) * 6.0)


def _max_min(rgb: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, tuple[torch.Tensor, ...]]:
    """Per-pixel max and min over the channels of (B, 3, H, W), and the channels, (B, 1, H, W).

    Two elementwise maxima beat a reduction over a strided dimension of size 3."""
    r, g, b = rgb.split(1, dim=1)
    return torch.maximum(torch.maximum(r, g), b), torch.minimum(torch.minimum(r, g), b), (r, g, b)


def _value_chroma_hue6(rgb: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """HSV value (max), chroma (max - min) and hue in units of 60 degrees, not yet wrapped:
    in [-1, 5). Callers add a shift and wrap once.

    Returns:
        value, chroma, hue6, each (B, 1, H, W).
    """
    value, minimum, (r, g, b) = _max_min(rgb)
    chroma = value - minimum
    # Red is the max: (g - b) / C; green: (b - r) / C + 2; blue: (r - g) / C + 4.
    hue6 = torch.where(
        r == value, g - b, torch.where(g == value, (b - r) + 2.0 * chroma, (r - g) + 4.0 * chroma)
    )
    hue6 = hue6 / torch.where(chroma > 0, chroma, torch.ones_like(chroma))
    return value, chroma, hue6


# Offsets n of the closed-form HSV -> RGB map, channel = V - C * clamp(min(k, 4 - k), 0, 1)
# with k = (n + 6 H) mod 6 (C = V * S, the chroma).
_HUE_OFFSETS = torch.tensor([5.0, 3.0, 1.0]).view(1, 3, 1, 1)


def _rgb_from_hue6(value: torch.Tensor, chroma: torch.Tensor, hue6: torch.Tensor) -> torch.Tensor:
    """RGB (B, 3, H, W) from value, chroma and hue in [0, 6), each (B, 1, H, W)."""
    k = (
        _HUE_OFFSETS.to(hue6.device) + hue6
    )  # in [1, 11): one conditional wrap replaces a slow remainder
    k = torch.where(k >= 6.0, k - 6.0, k)
    weight = torch.minimum(k, 4.0 - k).clamp_(0.0, 1.0).mul_(chroma)
    return torch.sub(value, weight)


@dataclass(frozen=True)
class ColorParams:
    """Per-image colour draws, shared by every output size of one batch."""

    brightness: torch.Tensor | None
    contrast: torch.Tensor | None
    saturation: torch.Tensor | None
    hue: torch.Tensor | None


def sample_color_params(n: int, cfg: AugmentConfig, generator: torch.Generator) -> ColorParams:
    """Draws each image's brightness shift and contrast, saturation and hue factors from
    ``cfg``'s deltas (None for a delta of 0: that edit is skipped)."""

    def uniform(lo: float, hi: float) -> torch.Tensor:
        return (lo + (hi - lo) * torch.rand(n, generator=generator)).view(n, 1, 1, 1)

    return ColorParams(
        brightness=(
            uniform(-cfg.brightness_delta, cfg.brightness_delta)
            if cfg.brightness_delta > 0
            else None
        ),
        contrast=(
            uniform(1 - cfg.contrast_delta, 1 + cfg.contrast_delta)
            if cfg.contrast_delta > 0
            else None
        ),
        saturation=(
            uniform(1 - cfg.saturation_delta, 1 + cfg.saturation_delta)
            if cfg.saturation_delta > 0
            else None
        ),
        hue=uniform(-cfg.hue_delta, cfg.hue_delta) if cfg.hue_delta > 0 else None,
    )


def apply_color(images: torch.Tensor, params: ColorParams) -> torch.Tensor:
    """Brightness, contrast, saturation, hue (in this order) on (B, 3, H, W) in [0, 1] scale."""
    x = images
    # Brightness then contrast is one affine map per image and channel:
    # ((x + b) - (m + b)) * c + (m + b) = c * x + (1 - c) * m + b, with m the channel mean.
    if params.contrast is not None:
        offset = (1.0 - params.contrast) * x.mean(dim=(2, 3), keepdim=True)
        if params.brightness is not None:
            offset = offset + params.brightness
        x = torch.addcmul(offset, x, params.contrast)
    elif params.brightness is not None:
        x = x + params.brightness
    if params.saturation is None and params.hue is None:
        return x
    # HSV edits without a full round trip. With V = max, C = max - min and H the hue of a pixel,
    # each channel is V - C * w(H) (w: the closed-form HSV -> RGB weight). Scaling saturation
    # by f (clipped at 1) scales C by min(f, V / C) and keeps V and H; a hue shift changes H.
    x = x.clamp(0.0, 1.0)
    if params.hue is None:
        value, minimum, _ = _max_min(x)
        chroma = value - minimum
        limit = torch.where(chroma > 0, value / chroma.clamp_min(1e-12), params.saturation)
        factor = torch.minimum(params.saturation, limit)
        return torch.addcmul((1.0 - factor) * value, x, factor)  # V + f * (x - V)
    value, chroma, hue6 = _value_chroma_hue6(x)
    if params.saturation is not None:
        chroma = torch.minimum(chroma * params.saturation, value)
    return _rgb_from_hue6(value, chroma, torch.remainder(hue6 + 6.0 * params.hue, 6.0))


def color_slice(params: ColorParams, start: int, stop: int) -> ColorParams:
    """The draws of images ``start:stop`` (a chunk of the batch)."""
    return ColorParams(
        *(
            None if v is None else v[start:stop]
            for v in (params.brightness, params.contrast, params.saturation, params.hue)
        )
    )
