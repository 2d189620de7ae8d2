"""Helpers shared by the recipe renderers (pure torch, device-agnostic)."""

from __future__ import annotations

import torch


def uniform(shape: tuple[int, ...], low: float, high: float, g: torch.Generator) -> torch.Tensor:
    """Uniform floats in [low, high) on ``g``'s device."""
    return low + (high - low) * torch.rand(shape, generator=g, device=g.device)


def colourise(density: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """Per image, a random foreground colour over a random background colour, in [-1, 1].

    Args:
        density: (B, S, S) figure intensities in [0, 1].
        g: the batch's generator (its device is the output's).
    """
    batch = density.shape[0]
    background = torch.rand(batch, 3, 1, 1, generator=g, device=g.device)
    foreground = torch.rand(batch, 3, 1, 1, generator=g, device=g.device)
    # Keep the figure visible: push the foreground away from the background where they match.
    foreground = torch.where(
        (foreground - background).abs() < 0.3, (background + 0.5) % 1.0, foreground
    )
    images = background + (foreground - background) * density[:, None]
    return images * 2 - 1


def pixel_axis(image_size: int, device: torch.device) -> torch.Tensor:
    """Pixel centres in [-1, 1] along one side, (S,)."""
    return (torch.arange(image_size, dtype=torch.float32, device=device) + 0.5) / image_size * 2 - 1


def splat(unit: torch.Tensor, image_size: int) -> torch.Tensor:
    """Log-density images (B, S, S) in [0, 1] of points ``unit`` (B, N, 2) within [-1, 1]."""
    batch = unit.shape[0]
    device = unit.device
    cols = ((unit + 1) / 2 * image_size).long().clamp(0, image_size - 1)
    offsets = (torch.arange(batch, device=device) * image_size**2)[:, None]
    index = cols[..., 1] * image_size + cols[..., 0] + offsets
    hist = torch.zeros(batch * image_size * image_size, device=device)
    hist.index_add_(0, index.reshape(-1), torch.ones(index.numel(), device=device))
    hist = hist.view(batch, image_size, image_size)
    # Log density, normalised per image: thin parts of the attractor stay visible.
    hist = torch.log1p(hist)
    return hist / hist.amax(dim=(1, 2), keepdim=True).clamp_min(1e-6)
