"""dSprites-style sprites (Matthey et al. 2017), regenerated for `1k/dsprites-*`.

One white sprite on black, from dSprites' latent grid: shape (square, ellipse, heart), scale
(6 values in [0.5, 1]), orientation (40 values around the circle), x and y position (32 values
each in [0, 1]). Every latent is drawn uniformly; the task's own latent (x index, orientation
index) is drawn stratified over its values. Labels follow VTAB's grouping rule
``floor(value_index / (num_values / num_classes))`` with VTAB's published 16 classes:

- x position: 32 values -> 16 classes of 2 neighbouring positions each;
- orientation: 40 values -> 16 classes of 3 or 2 neighbouring angles (alternately; 2.5 on
  average), so classes hold 60% or 40% of the mean share, as in VTAB.

Differences from dSprites: 32x32 px instead of 64x64 (the sprite at scale 1 spans about a
third of the canvas, as there), antialiased edges instead of binary pixels, and the 40
orientations evenly spaced on [0, 2 pi) (dSprites' linspace includes 2 pi, a copy of 0).
As in dSprites, the square repeats every 90 degrees and the ellipse every 180, so orientation
is ambiguous for them: the best possible accuracy is well below 1.
"""

from __future__ import annotations

import math

import torch

from munet.tasks.sources.vtab1k.common import IMAGE_SIZE, coverage, pixel_centres

SHAPES = ("square", "ellipse", "heart")
NUM_POSITIONS = 32
NUM_ORIENTATIONS = 40
NUM_CLASSES = 16
SCALES = torch.linspace(0.5, 1.0, 6)
_RADIUS_AT_SCALE_1 = 0.17 * IMAGE_SIZE  # pixels
_POSITION_LO, _POSITION_SPAN = 0.2 * IMAGE_SIZE, 0.6 * IMAGE_SIZE  # centre = lo + x * span


def position_label(x_index: torch.Tensor) -> torch.Tensor:
    """VTAB's grouping of the 32 x positions into 16 classes."""
    return torch.div(x_index * NUM_CLASSES, NUM_POSITIONS, rounding_mode="floor")


def orientation_label(orientation_index: torch.Tensor) -> torch.Tensor:
    """VTAB's grouping of the 40 orientations into 16 classes: floor(index / 2.5)."""
    return torch.div(orientation_index * NUM_CLASSES, NUM_ORIENTATIONS, rounding_mode="floor")


def _heart_distance(px: torch.Tensor, py: torch.Tensor) -> torch.Tensor:
    """Signed distance to a unit heart with its tip at the origin and lobes up (y up): the
    union of two discs on the lines at 45 degrees and the square between them."""
    px = px.abs()
    lobe = torch.sqrt((px - 0.25) ** 2 + (py - 0.75) ** 2) - math.sqrt(2.0) / 4.0
    m = 0.5 * (px + py).clamp(min=0.0)
    body = torch.sqrt(
        torch.minimum(px**2 + (py - 1.0) ** 2, (px - m) ** 2 + (py - m) ** 2)
    ) * torch.sign(px - py)
    return torch.where(py + px > 1.0, lobe, body)


def render_sprites(
    shape: torch.Tensor,
    scale_index: torch.Tensor,
    orientation_index: torch.Tensor,
    x_index: torch.Tensor,
    y_index: torch.Tensor,
) -> torch.Tensor:
    """(N, 3, S, S) images in [0, 1] of the sprites with these latent indices (each (N,))."""
    xx, yy = pixel_centres()
    cx = _POSITION_LO + x_index.float() / (NUM_POSITIONS - 1) * _POSITION_SPAN
    cy = _POSITION_LO + y_index.float() / (NUM_POSITIONS - 1) * _POSITION_SPAN
    radius = (_RADIUS_AT_SCALE_1 * SCALES[scale_index]).view(-1, 1, 1)
    angle = (orientation_index.float() * (2 * math.pi / NUM_ORIENTATIONS)).view(-1, 1, 1)
    dx, dy = xx - cx.view(-1, 1, 1), yy - cy.view(-1, 1, 1)
    # Sprite frame: rotate the pixel offsets back by the sprite's angle (counter-clockwise on
    # screen), then y up.
    cos, sin = torch.cos(angle), torch.sin(angle)
    u = cos * dx - sin * dy
    v = -(sin * dx + cos * dy)
    square = torch.maximum(u.abs(), v.abs()) - 0.8 * radius
    # Ellipse: semi-axes r and r/2; the distance is scaled by the minor axis (a bound good
    # enough for antialiasing).
    ellipse = (torch.sqrt((u / radius) ** 2 + (2 * v / radius) ** 2) - 1.0) * 0.5 * radius
    unit = 1.5 * radius / 1.1  # the unit heart is about 1.1 tall; centre it on its middle
    heart = _heart_distance(u / unit, v / unit + 0.55) * unit
    shape = shape.view(-1, 1, 1)
    distance = torch.where(shape == 0, square, torch.where(shape == 1, ellipse, heart))
    return coverage(distance)[:, None].expand(-1, 3, -1, -1).contiguous()


def _other_latents(n: int, g: torch.Generator) -> dict[str, torch.Tensor]:
    return {
        "shape": torch.randint(len(SHAPES), (n,), generator=g),
        "scale_index": torch.randint(len(SCALES), (n,), generator=g),
        "orientation_index": torch.randint(NUM_ORIENTATIONS, (n,), generator=g),
        "x_index": torch.randint(NUM_POSITIONS, (n,), generator=g),
        "y_index": torch.randint(NUM_POSITIONS, (n,), generator=g),
    }


def render_location(x_index: torch.Tensor, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """`1k/dsprites-location`: sprites at x indices `x_index` (0..31); labels 0..15."""
    latents = _other_latents(len(x_index), g) | {"x_index": x_index}
    return render_sprites(**latents), position_label(x_index)


def render_orientation(
    orientation_index: torch.Tensor, g: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """`1k/dsprites-orientation`: sprites at orientation indices (0..39); labels 0..15."""
    latents = _other_latents(len(orientation_index), g) | {"orientation_index": orientation_index}
    return render_sprites(**latents), orientation_label(orientation_index)
