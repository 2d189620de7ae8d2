"""Procedural pretraining images: formula-driven classes, rendered in batches on the fly.

A recipe (one module in :mod:`munet.pretrain.recipes`, registered in :data:`KINDS`) draws its
classes from a seed, every class *is* its formula, and renders the figures of a batch of
classes, vectorised over the batch, on any torch device; this module colours them. The one
recipe is ``fractal``: FractalDB iterated function systems (2-4 affine maps), the recipe of
every shipped root. (The other recipes measured beside it, ``fractal_ex``, ``contours``,
``contours_ex``, ``noise`` and ``+`` mixes, made no shipped root, so munet does not carry
them: their runs are in experiments/pretrain_log.md, their code in git history.)

**Several instances per image** (``instances`` K > 1, the multi-instance images of the
formula-driven detection work): an image shows 1 to K instances of its class, each drawn anew
(its own zoom, shift and flip), shrunk by a factor in [0.7, 1] / sqrt(count) and placed at
random, overlapping where they meet, in one colour. The count is uniform in 1..K per image.
K = 1 renders one instance per image, the stream of the single-instance roots, bit for bit
(pinned in tests/pretrain/generator_streams.json).

Nothing here reads or resembles an evaluation task: no dataset, no digits, no shapes on a
background, no sprites, no rendered solids (these modules import nothing from munet outside
:mod:`munet.pretrain.recipes`; tests/pretrain/test_generators.py checks it and compares images).
Images are float32 (B, 3, S, S) in [-1, 1], like every munet task batch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from munet.pretrain.recipes import fractal
from munet.pretrain.recipes.common import colourise, uniform


@dataclass(frozen=True)
class RecipeKind:
    """A recipe: how to draw its classes (``classes(num_classes, g)``, on the CPU) and the
    uncoloured figures (B, S, S) in [0, 1] of a batch of them (``density(params, labels,
    image_size, g, points)``)."""

    classes: Callable[[int, torch.Generator], dict]
    density: Callable[..., torch.Tensor]


KINDS: dict[str, RecipeKind] = {
    "fractal": RecipeKind(fractal.classes, fractal.density),
}
RECIPES = tuple(KINDS)
# Recipes munet pretrain had once (stored cards may name them): refused, saying so.
REMOVED_RECIPES = ("fractal_ex", "contours", "contours_ex", "noise")


@dataclass(frozen=True)
class Recipe:
    """A recipe's fixed classes: ``params`` holds its class tensors. ``instances``: at most this
    many instances of the class per image (module docstring)."""

    name: str
    num_classes: int
    seed: int
    params: dict[str, torch.Tensor] = field(repr=False)
    instances: int = 1

    @property
    def device(self) -> torch.device:
        return next(iter(self.params.values())).device

    def to(self, device: torch.device | str) -> Recipe:
        """The same classes with their tensors on ``device`` (render there)."""
        params = {k: v.to(device) for k, v in self.params.items()}
        return Recipe(self.name, self.num_classes, self.seed, params, self.instances)


def check_recipe(name: str) -> None:
    """Raises ValueError naming an unknown recipe and the known ones."""
    if name not in KINDS:
        removed = any(kind in REMOVED_RECIPES for kind in name.split("+"))
        note = (
            " (fractal_ex, contours, contours_ex, noise and '+' mixes were removed: no shipped "
            "root used them; their runs are in experiments/pretrain_log.md)"
            if removed or "+" in name
            else ""
        )
        raise ValueError(
            f"unknown pretraining recipe {name!r}; known: {', '.join(RECIPES)}{note}"
        )


def make_recipe(name: str, num_classes: int, seed: int, instances: int = 1) -> Recipe:
    """The classes of recipe ``name`` (one of :data:`RECIPES`) from ``seed``, rendered with up
    to ``instances`` instances per image.

    Raises:
        ValueError: unknown recipe, fewer than 2 classes, or ``instances`` below 1.
    """
    check_recipe(name)
    if not (isinstance(instances, int) and instances >= 1):
        raise ValueError(f"instances {instances!r}: expected an integer >= 1 (per image)")
    if num_classes < 2:
        raise ValueError(f"num_classes {num_classes!r}: expected at least 2")
    g = torch.Generator().manual_seed(seed)
    return Recipe(name, num_classes, seed, KINDS[name].classes(num_classes, g), instances)


def sample_batch(
    recipe: Recipe,
    batch_size: int,
    image_size: int,
    g: torch.Generator,
    points: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch of (images (B, 3, S, S) in [-1, 1], labels (B,) int64), classes uniform.

    Everything is drawn from ``g`` and made on its device (``recipe`` must be there too:
    :meth:`Recipe.to`). ``points``: chaos-game chains per fractal image (default one per two
    output pixels; each chain draws several points).
    """
    labels = torch.randint(0, recipe.num_classes, (batch_size,), generator=g, device=g.device)
    return _render(recipe, labels, image_size, g, points), labels


def _render(recipe: Recipe, labels: torch.Tensor, image_size: int, g: torch.Generator,
            points: int | None) -> torch.Tensor:  # fmt: skip
    density = KINDS[recipe.name].density
    if recipe.instances == 1:
        return colourise(density(recipe.params, labels, image_size, g, points), g)
    # Every image draws K instances (fixed shapes, no look at the counts); those past its
    # count are masked out.
    batch, instances = labels.shape[0], recipe.instances
    per_instance = labels[:, None].expand(-1, instances).reshape(-1)
    figures = density(recipe.params, per_instance, image_size, g, points)
    figures = figures.view(batch, instances, image_size, image_size)
    count = torch.randint(1, instances + 1, (batch, 1), generator=g, device=g.device)
    shown = torch.arange(instances, device=g.device)[None, :] < count  # (B, K)
    scale = uniform((batch, instances), 0.7, 1.0, g) / count.float().sqrt()
    centre = uniform((batch, instances, 2), -1.0, 1.0, g) * (1 - scale)[..., None]
    flat = figures.reshape(-1, 1, image_size, image_size)
    placed = _place(flat, scale.reshape(-1), centre.reshape(-1, 2)).view_as(figures)
    return colourise((placed * shown[..., None, None]).amax(dim=1), g)


def _place(figures: torch.Tensor, scale: torch.Tensor, centre: torch.Tensor) -> torch.Tensor:
    """Figures (N, 1, S, S) shrunk by ``scale`` (N,) and moved to ``centre`` (N, 2; x, y in
    [-1, 1]), zero outside: an output point p reads the figure at (p - centre) / scale."""
    inverse = 1 / scale
    theta = torch.zeros(scale.shape[0], 2, 3, device=scale.device)
    theta[:, 0, 0] = inverse
    theta[:, 1, 1] = inverse
    theta[:, :, 2] = -centre * inverse[:, None]
    grid = F.affine_grid(theta, list(figures.shape), align_corners=False)
    return F.grid_sample(figures, grid, padding_mode="zeros", align_corners=False)[:, 0]
