"""Procedural pretraining images: formula-driven classes, rendered in batches on the fly.

Two recipes, each a fixed set of classes drawn from a seed (the class *is* its formula) and an
endless labelled image stream, vectorised over the batch (no files, no Python loop per image):

- ``fractal`` (FractalDB, Kataoka et al. 2020): each class is one random iterated function
  system (2-4 contractive affine maps of the plane, picked with probability proportional to
  their determinant). An image is the attractor, found by iterating many points in parallel
  (the "chaos game") and splatting them into a density histogram, under a random per-image
  scale, shift and flip, in a random foreground colour on a random background colour.
- ``contours`` (radial contour database, Kataoka et al. 2022): each class is a random closed
  curve r = R(theta) (a few Fourier harmonics) and a ring count; an image draws that many
  concentric, scaled copies of the curve as thin lines, rotated, shifted and coloured at random.

Nothing here reads or resembles an evaluation task: no dataset, no digits, no shapes of
``munet.tasks.sources.synth`` (this module imports nothing from ``munet.tasks``).
Images are float32 (B, 3, S, S) in [-1, 1], like every munet task batch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

RECIPES = ("fractal", "contours")

# Iterations before a point lies on the attractor (each map contracts by <= 0.8, so after
# 12 steps any start is within 0.8**12 ~ 0.07 of it), then iterations whose points are drawn.
_BURN_IN = 12
_DRAWN = 8


@dataclass(frozen=True)
class Recipe:
    """A recipe's fixed classes: ``params`` holds its class tensors (see the constructors)."""

    name: str
    num_classes: int
    seed: int
    params: dict[str, torch.Tensor]


def make_recipe(name: str, num_classes: int, seed: int) -> Recipe:
    """The classes of recipe ``name`` (``fractal`` or ``contours``) drawn from ``seed``.

    Raises:
        ValueError: unknown recipe or a class count below 2.
    """
    if name not in RECIPES:
        raise ValueError(f"unknown pretraining recipe {name!r}; known: {', '.join(RECIPES)}")
    if num_classes < 2:
        raise ValueError(f"num_classes {num_classes!r}: expected at least 2")
    g = torch.Generator().manual_seed(seed)
    params = (
        _fractal_classes(num_classes, g) if name == "fractal" else _contour_classes(num_classes, g)
    )
    return Recipe(name, num_classes, seed, params)


def _fractal_classes(num_classes: int, g: torch.Generator, max_maps: int = 4) -> dict:
    """Per class: ``maps`` (C, M, 2, 3) affine maps [A | b] and ``probs`` (C, M)."""
    num_maps = torch.randint(2, max_maps + 1, (num_classes,), generator=g)
    linear = torch.rand(num_classes, max_maps, 2, 2, generator=g) * 2 - 1
    # Contractive maps: scale each linear part to a spectral norm in [0.35, 0.8] (FractalDB
    # draws maps until the attractor fills the image; a bounded norm gets the same effect
    # without rejection sampling, so a class never degenerates to a point or blows up).
    norm = torch.linalg.matrix_norm(linear, ord=2).clamp_min(1e-3)
    target = 0.35 + 0.45 * torch.rand(num_classes, max_maps, generator=g)
    linear = linear * (target / norm)[..., None, None]
    shift = torch.rand(num_classes, max_maps, 2, 1, generator=g) * 2 - 1
    maps = torch.cat([linear, shift], dim=-1)
    weight = torch.linalg.det(linear).abs() + 0.05
    used = torch.arange(max_maps)[None, :] < num_maps[:, None]
    weight = torch.where(used, weight, torch.zeros_like(weight))
    return {"maps": maps, "probs": weight / weight.sum(dim=1, keepdim=True)}


def _contour_classes(num_classes: int, g: torch.Generator, harmonics: int = 5) -> dict:
    """Per class: Fourier ``amps``/``phases`` (C, K) of R(theta) and a ring count ``rings``."""
    # Harmonic k's amplitude falls as 1/k so the curve stays star-shaped (R > 0).
    amps = torch.rand(num_classes, harmonics, generator=g) * 0.35
    amps = amps / torch.arange(1, harmonics + 1, dtype=torch.float32)
    phases = torch.rand(num_classes, harmonics, generator=g) * 2 * math.pi
    rings = torch.randint(1, 5, (num_classes,), generator=g)
    return {"amps": amps, "phases": phases, "rings": rings}


def sample_batch(
    recipe: Recipe,
    batch_size: int,
    image_size: int,
    g: torch.Generator,
    points: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch of (images (B, 3, S, S) in [-1, 1], labels (B,) int64), classes uniform.

    ``points``: chaos-game chains per fractal image (default one per two output pixels;
    each chain draws several points).
    """
    labels = torch.randint(0, recipe.num_classes, (batch_size,), generator=g)
    if recipe.name == "fractal":
        density = _render_fractals(recipe.params, labels, image_size, g, points)
    else:
        density = _render_contours(recipe.params, labels, image_size, g)
    return _colourise(density, g), labels


def _render_fractals(
    params: dict, labels: torch.Tensor, image_size: int, g: torch.Generator, points: int | None
) -> torch.Tensor:
    """Density images (B, S, S) in [0, 1] of the labelled classes' attractors."""
    batch = labels.shape[0]
    chains = points or max(32, image_size * image_size // 2)
    maps = params["maps"][labels].reshape(batch, -1, 6)  # (B, M, 6): a b tx c d ty
    cumulative = params["probs"][labels].cumsum(dim=1)  # (B, M)
    last = maps.shape[1] - 1
    xy = torch.rand(batch, chains, 2, generator=g) * 2 - 1
    drawn = []
    for step in range(_BURN_IN + _DRAWN):
        # Inverse-CDF draw of one map per point (cheaper than torch.multinomial per row).
        u = torch.rand(batch, chains, 1, generator=g)
        choice = (u > cumulative[:, None, :]).sum(dim=-1).clamp_max(last)  # (B, P)
        m = torch.gather(maps, 1, choice[..., None].expand(-1, -1, 6))  # (B, P, 6)
        x, y = xy[..., 0], xy[..., 1]
        xy = torch.stack(
            [m[..., 0] * x + m[..., 1] * y + m[..., 2], m[..., 3] * x + m[..., 4] * y + m[..., 5]],
            dim=-1,
        )
        if step >= _BURN_IN:
            drawn.append(xy)
    pts = torch.cat(drawn, dim=1)  # (B, N, 2)
    # Fit each attractor's bounding box into the image, then a random zoom, shift and flip.
    low = pts.amin(dim=1, keepdim=True)
    high = pts.amax(dim=1, keepdim=True)
    centre = (low + high) / 2
    half = ((high - low) / 2).amax(dim=-1, keepdim=True).clamp_min(1e-4)
    zoom = 0.6 + 0.35 * torch.rand(batch, 1, 1, generator=g)
    flip = torch.where(torch.rand(batch, 1, 2, generator=g) < 0.5, -1.0, 1.0)
    shift = (torch.rand(batch, 1, 2, generator=g) * 2 - 1) * (1 - zoom)
    unit = (pts - centre) / half * zoom * flip + shift  # within [-1, 1]
    cols = ((unit + 1) / 2 * image_size).long().clamp(0, image_size - 1)
    offsets = (torch.arange(batch) * image_size**2)[:, None]
    index = cols[..., 1] * image_size + cols[..., 0] + offsets
    hist = torch.zeros(batch * image_size * image_size)
    hist.index_add_(0, index.reshape(-1), torch.ones(index.numel()))
    hist = hist.view(batch, image_size, image_size)
    # Log density, normalised per image: thin parts of the attractor stay visible.
    hist = torch.log1p(hist)
    return hist / hist.amax(dim=(1, 2), keepdim=True).clamp_min(1e-6)


def _render_contours(
    params: dict, labels: torch.Tensor, image_size: int, g: torch.Generator
) -> torch.Tensor:
    """Line images (B, S, S) in [0, 1] of the labelled classes' concentric contours."""
    batch = labels.shape[0]
    amps = params["amps"][labels][:, :, None, None]  # (B, K, 1, 1)
    phases = params["phases"][labels][:, :, None, None]
    rings = params["rings"][labels].float()[:, None, None]  # (B, 1, 1)
    centre = (torch.rand(batch, 2, generator=g) * 2 - 1) * 0.2
    rotation = torch.rand(batch, 1, 1, generator=g) * 2 * math.pi
    size = 0.55 + 0.35 * torch.rand(batch, 1, 1, generator=g)
    axis = (torch.arange(image_size, dtype=torch.float32) + 0.5) / image_size * 2 - 1
    y = axis[None, :, None] - centre[:, 1, None, None]
    x = axis[None, None, :] - centre[:, 0, None, None]
    radius = torch.sqrt(x * x + y * y)  # (B, S, S)
    theta = torch.atan2(y, x)[:, None] + rotation[:, None]  # (B, 1, S, S)
    harmonic = torch.arange(1, amps.shape[1] + 1, dtype=torch.float32)[None, :, None, None]
    curve = 1 + (amps * torch.cos(harmonic * theta + phases)).sum(dim=1)  # (B, S, S)
    level = radius / (curve * size) * rings  # ring i lies where level == i
    distance = (level - level.round()).abs() * (curve * size / rings) * image_size / 2
    inside = (level.round() >= 1) & (level.round() <= rings)
    # Lines about one pixel wide, anti-aliased.
    return torch.where(inside, (1.0 - distance).clamp(0, 1), torch.zeros_like(level))


def _colourise(density: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """Per image, a random foreground colour over a random background colour, in [-1, 1]."""
    batch = density.shape[0]
    background = torch.rand(batch, 3, 1, 1, generator=g)
    foreground = torch.rand(batch, 3, 1, 1, generator=g)
    # Keep the figure visible: push the foreground away from the background where they match.
    foreground = torch.where(
        (foreground - background).abs() < 0.3, (background + 0.5) % 1.0, foreground
    )
    images = background + (foreground - background) * density[:, None]
    return images * 2 - 1
