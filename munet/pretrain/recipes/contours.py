"""Radial contours: ``contours`` (RCDB) and ``contours_ex`` (more parameters per class).

- ``contours`` (radial contour database, Kataoka et al. 2022): each class is a random closed
  curve r = R(theta) (5 Fourier harmonics) and a ring count; an image draws that many
  concentric, scaled copies of the curve as thin lines, rotated, shifted and coloured at random.
- ``contours_ex``: 12 harmonics with a per-class spectral decay, 1-8 rings spaced by a per-class
  power law (r_i ~ (i / rings) ** spacing), a per-class line width and a per-class angular
  wobble of the line width: 12 + 12 + 4 numbers per class instead of 11.
"""

from __future__ import annotations

import math

import torch

from munet.pretrain.recipes.common import colourise, pixel_axis


def classes(num_classes: int, g: torch.Generator, harmonics: int = 5) -> dict:
    """``contours``: Fourier ``amps``/``phases`` (C, K) of R(theta) and ``rings`` (C,)."""
    # Harmonic k's amplitude falls as 1/k so the curve stays star-shaped (R > 0).
    amps = torch.rand(num_classes, harmonics, generator=g) * 0.35
    amps = amps / torch.arange(1, harmonics + 1, dtype=torch.float32)
    phases = torch.rand(num_classes, harmonics, generator=g) * 2 * math.pi
    rings = torch.randint(1, 5, (num_classes,), generator=g)
    return {"amps": amps, "phases": phases, "rings": rings}


def classes_ex(num_classes: int, g: torch.Generator, harmonics: int = 12) -> dict:
    """``contours_ex``: ``amps``/``phases`` (C, 12), ``rings``, ``spacing``, ``width``,
    ``wobble`` (C,)."""
    decay = 0.5 + torch.rand(num_classes, 1, generator=g)  # amplitude ~ k ** -decay
    amps = torch.rand(num_classes, harmonics, generator=g)
    amps = amps * torch.arange(1, harmonics + 1, dtype=torch.float32) ** -decay
    # Star-shaped: the harmonics together never cancel the unit radius (sum < 0.7).
    amps = amps * (0.7 * torch.rand(num_classes, 1, generator=g) / amps.sum(1, keepdim=True))
    phases = torch.rand(num_classes, harmonics, generator=g) * 2 * math.pi
    return {
        "amps": amps,
        "phases": phases,
        "rings": torch.randint(1, 9, (num_classes,), generator=g),
        "spacing": 0.6 + torch.rand(num_classes, generator=g),
        "width": 0.6 + 1.2 * torch.rand(num_classes, generator=g),
        "wobble": torch.randint(0, 6, (num_classes,), generator=g).float(),
    }


def render(params: dict, labels: torch.Tensor, image_size: int, g: torch.Generator) -> torch.Tensor:
    """Images (B, 3, S, S) in [-1, 1] of the labelled classes' concentric contours."""
    return colourise(density(params, labels, image_size, g), g)


def density(
    params: dict, labels: torch.Tensor, image_size: int, g: torch.Generator
) -> torch.Tensor:
    """Line intensities (B, S, S) in [0, 1] of the labelled classes' contours, uncoloured."""
    batch = labels.shape[0]
    device = g.device
    amps = params["amps"][labels][:, :, None, None]  # (B, K, 1, 1)
    phases = params["phases"][labels][:, :, None, None]
    rings = params["rings"][labels].float()[:, None, None]  # (B, 1, 1)
    centre = (torch.rand(batch, 2, generator=g, device=device) * 2 - 1) * 0.2
    rotation = torch.rand(batch, 1, 1, generator=g, device=device) * 2 * math.pi
    size = 0.55 + 0.35 * torch.rand(batch, 1, 1, generator=g, device=device)
    axis = pixel_axis(image_size, device)
    y = axis[None, :, None] - centre[:, 1, None, None]
    x = axis[None, None, :] - centre[:, 0, None, None]
    radius = torch.sqrt(x * x + y * y)  # (B, S, S)
    theta = torch.atan2(y, x)[:, None] + rotation[:, None]  # (B, 1, S, S)
    harmonic = torch.arange(1, amps.shape[1] + 1, dtype=torch.float32, device=device)
    harmonic = harmonic[None, :, None, None]
    curve = 1 + (amps * torch.cos(harmonic * theta + phases)).sum(dim=1)  # (B, S, S)
    scale = curve * size
    if "spacing" in params:
        # Ring i lies where (radius / scale) ** (1 / spacing) * rings == i.
        spacing = params["spacing"][labels][:, None, None]
        level = (radius / scale).clamp_min(1e-6) ** (1 / spacing) * rings
        # Local ring gap in pixels: d radius / d level, from the power law.
        gap = scale * spacing * (level / rings).clamp_min(1e-3) ** (spacing - 1) / rings
        wobble = params["wobble"][labels][:, None, None]
        width = params["width"][labels][:, None, None] * (1 + 0.5 * torch.cos(wobble * theta[:, 0]))
    else:
        level = radius / scale * rings  # ring i lies where level == i
        gap = scale / rings
        width = torch.ones_like(level)
    distance = (level - level.round()).abs() * gap * image_size / 2
    inside = (level.round() >= 1) & (level.round() <= rings)
    # Lines about ``width`` pixels wide, anti-aliased.
    return torch.where(inside, (width / 2 + 0.5 - distance).clamp(0, 1), torch.zeros_like(level))
