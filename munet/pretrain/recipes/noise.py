"""``noise``: coloured spectral noise, a recipe that carries colour and texture statistics.

After Baradad et al. 2021 ("Learning to see by looking at noise"), whose best procedural
images were the ones with natural-image statistics: a 1/f^alpha amplitude spectrum, oriented
structure and colour correlations. Here each class is one such texture *process* (no figure,
no object, nothing on a background):

- a power-law exponent ``alpha`` in [0.5, 3] (smooth clouds to fine grain),
- an orientation and an anisotropy (streaks along one direction),
- a band-pass peak frequency and its weight (a dominant texture scale),
- a colour: the mean colour and a 3x3 mixing matrix of the three noise channels, so classes
  differ in hue and in how colour varies with the texture.

An image is one draw of the process: random phases (white noise, filtered in the Fourier
domain by the class's amplitude spectrum), per-image contrast and brightness jitter.
"""

from __future__ import annotations

import math

import torch


def classes(num_classes: int, g: torch.Generator) -> dict:
    """Per class: ``spectrum`` (C, 6): alpha, angle, anisotropy, peak, peak width, peak weight;
    ``mean`` (C, 3) colour in [0.2, 0.8]; ``mixing`` (C, 3, 3) colour matrix."""
    alpha = 0.5 + 2.5 * torch.rand(num_classes, generator=g)
    angle = math.pi * torch.rand(num_classes, generator=g)
    anisotropy = 0.85 * torch.rand(num_classes, generator=g)
    peak = 0.05 + 0.35 * torch.rand(num_classes, generator=g)  # cycles per pixel
    peak_width = 0.02 + 0.08 * torch.rand(num_classes, generator=g)
    peak_weight = torch.rand(num_classes, generator=g)
    spectrum = torch.stack([alpha, angle, anisotropy, peak, peak_width, peak_weight], dim=1)
    mean = 0.2 + 0.6 * torch.rand(num_classes, 3, generator=g)
    mixing = torch.randn(num_classes, 3, 3, generator=g)
    # Scale each matrix so the strongest colour direction has spread ~0.25 (within [0, 1]).
    mixing = mixing / torch.linalg.matrix_norm(mixing, ord=2)[:, None, None].clamp_min(1e-3) * 0.25
    return {"spectrum": spectrum, "mean": mean, "mixing": mixing}


def _amplitude(spectrum: torch.Tensor, image_size: int, device: torch.device) -> torch.Tensor:
    """Amplitude spectra (B, S, S // 2 + 1) of the rows of ``spectrum`` (B, 6)."""
    fy = torch.fft.fftfreq(image_size, device=device)[:, None]  # (S, 1)
    fx = torch.fft.rfftfreq(image_size, device=device)[None, :]  # (1, S//2+1)
    alpha, angle, aniso, peak, width, weight = (spectrum[:, i, None, None] for i in range(6))
    # Rotate, then stretch one axis: an elliptic radius makes streaks along ``angle``.
    along = fx * torch.cos(angle) + fy * torch.sin(angle)
    across = -fx * torch.sin(angle) + fy * torch.cos(angle)
    radius = torch.sqrt(along**2 * (1 - aniso) ** 2 + across**2).clamp_min(1.0 / image_size)
    power_law = radius ** (-alpha)
    band = torch.exp(-(((radius - peak) / width) ** 2) / 2)
    amplitude = power_law / power_law.amax(dim=(1, 2), keepdim=True) * (1 - weight) + band * weight
    amplitude[:, 0, 0] = 0.0  # no DC: the class's mean colour sets the image mean
    return amplitude


def render(params: dict, labels: torch.Tensor, image_size: int, g: torch.Generator) -> torch.Tensor:
    """Images (B, 3, S, S) in [-1, 1], one draw of each labelled class's texture process."""
    batch = labels.shape[0]
    device = g.device
    amplitude = _amplitude(params["spectrum"][labels], image_size, device)  # (B, S, F)
    white = torch.randn(batch, 3, image_size, image_size, generator=g, device=device)
    textured = torch.fft.irfft2(torch.fft.rfft2(white) * amplitude[:, None], s=white.shape[-2:])
    textured = textured / textured.flatten(2).std(dim=2)[..., None, None].clamp_min(1e-6)
    coloured = torch.einsum("bij,bjhw->bihw", params["mixing"][labels], textured)
    contrast = 0.7 + 0.6 * torch.rand(batch, 1, 1, 1, generator=g, device=device)
    brightness = (torch.rand(batch, 1, 1, 1, generator=g, device=device) - 0.5) * 0.2
    mean = params["mean"][labels][:, :, None, None]
    images = (mean + brightness + contrast * coloured).clamp(0, 1)
    return images * 2 - 1
