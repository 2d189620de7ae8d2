"""Harder synthetic scenes for `1k/synth-*`: binding, clutter and occlusion.

They reuse `munet.tasks.sources.synth`'s painting (its textured backgrounds, its four shapes
and six jittered colours, antialiased coverage) but draw scenes of their own, in which reading
the label needs more than one object's global colour or extent:

- conjunction: one object of each shape (circle, square, triangle, cross), one per quadrant,
  small (radius 4-5.5 px); label = the triangle's colour (6). The other objects' colours are
  drawn from all six, so the triangle's colour is often also present elsewhere: a model must
  bind colour to shape.
- clutter: one large object among 10 small ones of every shape and colour, some painted over
  it; label = the large object's shape (4).
- occlusion: one large object with a bar of random colour and angle across it, hiding about
  half of it; label = the object's shape (4).
"""

from __future__ import annotations

import math

import torch

from munet.tasks.sources.synth import (
    COLORS,
    SHAPES,
    Objects,
    backgrounds,
    random_colors,
    shape_masks,
)
from munet.tasks.sources.vtab1k.common import IMAGE_SIZE, coverage, pixel_centres, uniform

_TRIANGLE = SHAPES.index("triangle")
_NUM_CLUTTER = 10


def _paint(objects: Objects, image: torch.Tensor) -> torch.Tensor:
    """Paints `objects` in slot order over `image` (N, 3, S, S) in [0, 1]."""
    masks = shape_masks(objects)
    for k in range(masks.shape[1]):
        image = torch.lerp(image, objects.color[:, k, :, None, None], masks[:, k : k + 1])
    return image


def render_conjunction(
    colour: torch.Tensor, g: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """`1k/synth-conjunction`: labels = the triangle's colour index (N,)."""
    n, k = len(colour), len(SHAPES)
    # One object of each shape, one per quadrant in a random order.
    shape = torch.rand(n, k, generator=g).argsort(dim=1)
    colours = torch.randint(len(COLORS), (n, k), generator=g)
    colours = torch.where(shape == _TRIANGLE, colour[:, None], colours)
    radius = uniform((n, k), 4.0, 5.5, g)
    half = IMAGE_SIZE / 2
    slack = half / 2 - radius - 0.5
    quadrant = torch.arange(k).expand(n, k)
    cx = (quadrant % 2 + 0.5) * half + (torch.rand(n, k, generator=g) * 2 - 1) * slack
    cy = (quadrant // 2 + 0.5) * half + (torch.rand(n, k, generator=g) * 2 - 1) * slack
    objects = Objects(
        cx=cx,
        cy=cy,
        radius=radius,
        shape=shape,
        color=random_colors(colours, g),
        present=torch.ones(n, k, dtype=torch.bool),
    )
    return _paint(objects, backgrounds(n, g)), colour


def render_clutter(shape: torch.Tensor, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """`1k/synth-clutter`: labels = the large object's shape index (N,)."""
    n, k = len(shape), 1 + _NUM_CLUTTER
    radius = torch.cat((uniform((n, 1), 6.5, 8.5, g), uniform((n, k - 1), 1.8, 3.0, g)), dim=1)
    margin = radius + 1.0
    cx = margin + torch.rand(n, k, generator=g) * (IMAGE_SIZE - 2 * margin)
    cy = margin + torch.rand(n, k, generator=g) * (IMAGE_SIZE - 2 * margin)
    shapes = torch.cat((shape[:, None], torch.randint(len(SHAPES), (n, k - 1), generator=g)), 1)
    objects = Objects(
        cx=cx,
        cy=cy,
        radius=radius,
        shape=shapes,
        color=random_colors(torch.randint(len(COLORS), (n, k), generator=g), g),
        present=torch.ones(n, k, dtype=torch.bool),
    )
    return _paint(objects, backgrounds(n, g)), shape


def render_occlusion(shape: torch.Tensor, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """`1k/synth-occlusion`: labels = the occluded object's shape index (N,)."""
    n = len(shape)
    radius = uniform((n,), 8.0, 10.0, g)
    margin = radius + 1.0
    cx = margin + torch.rand(n, generator=g) * (IMAGE_SIZE - 2 * margin)
    cy = margin + torch.rand(n, generator=g) * (IMAGE_SIZE - 2 * margin)
    objects = Objects(
        cx=cx[:, None],
        cy=cy[:, None],
        radius=radius[:, None],
        shape=shape[:, None],
        color=random_colors(torch.randint(len(COLORS), (n, 1), generator=g), g),
        present=torch.ones(n, 1, dtype=torch.bool),
    )
    image = _paint(objects, backgrounds(n, g))
    # The bar: a band of width 0.8-1.2 r at a random angle, its axis within 0.3 r of the
    # object's centre, in a random palette colour or grey.
    angle = uniform((n, 1, 1), 0.0, math.pi, g)
    offset = uniform((n, 1, 1), -0.3, 0.3, g) * radius.view(-1, 1, 1)
    width = uniform((n, 1, 1), 0.8, 1.2, g) * radius.view(-1, 1, 1)
    xx, yy = pixel_centres()
    across = (xx - cx.view(-1, 1, 1)) * -torch.sin(angle) + (yy - cy.view(-1, 1, 1)) * torch.cos(
        angle
    )
    bar = coverage((across - offset).abs() - width / 2)
    palette = random_colors(torch.randint(len(COLORS), (n,), generator=g), g)
    grey = uniform((n, 1), 0.2, 0.8, g).expand(-1, 3)
    colour = torch.where(torch.rand(n, 1, generator=g) < 0.5, palette, grey)
    return torch.lerp(image, colour[:, :, None, None].expand_as(image), bar[:, None]), shape
