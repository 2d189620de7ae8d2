"""Procedural pretraining images: formula-driven classes, rendered in batches on the fly.

Recipes (one module each in :mod:`munet.pretrain.recipes`; every class *is* its formula,
drawn from a seed; images are vectorised over the batch, on any torch device):

- ``fractal``: FractalDB iterated function systems (2-4 affine maps).
- ``fractal_ex``: fractal flames (2-8 affine maps, each with a blend of 4 non-linear
  variations): more parameters per class, a harder task.
- ``contours``: radial contours (RCDB; 5 harmonics, 1-4 rings).
- ``contours_ex``: radial contours with 12 harmonics, 1-8 power-law-spaced rings, per-class
  line width and width wobble.
- ``noise``: coloured spectral noise (1/f^alpha, orientation, band-pass peak, a colour mean and
  mixing matrix per class): colour and texture statistics, no figure at all.

**Several instances per image** (``instances`` K > 1, the multi-instance images of the
formula-driven detection work): an image of a figure recipe (fractal, contours) shows 1 to K
instances of its class, each drawn anew (its own zoom, shift, flip or rotation), shrunk by a
factor in [0.7, 1] / sqrt(count) and placed at random, overlapping where they meet, in one
colour. The count is uniform in 1..K per image. ``noise`` has no figure, so it ignores K.
K = 1 renders exactly as before (bit for bit).

A *mix* joins recipes with ``+`` (``fractal_ex+contours_ex+noise``): the classes are split
among them (the first ones take the remainder), class ``i`` of the mix is a class of one
recipe; each recipe fills its share of every batch (its share of the classes), with labels
uniform within it, and the batch is shuffled. Each recipe's classes come
from their own seed derived from the mix's, so for a class count a recipe's classes do not
depend on its neighbours in the mix.

Nothing here reads or resembles an evaluation task: no dataset, no digits, no shapes on a
background, no sprites, no rendered solids (these modules import nothing from munet outside
:mod:`munet.pretrain.recipes`; tests/pretrain/test_generators.py checks it and compares images).
Images are float32 (B, 3, S, S) in [-1, 1], like every munet task batch.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from munet.pretrain.recipes import contours, fractal, noise
from munet.pretrain.recipes.common import colourise, uniform


@dataclass(frozen=True)
class RecipeKind:
    """A recipe family member: how to draw its classes and render a batch of them.

    ``density`` (figure recipes only) renders the uncoloured figures (B, S, S) that ``render``
    colours; several instances per image are composed from it.
    """

    classes: Callable[[int, torch.Generator], dict]
    render: Callable[..., torch.Tensor]
    density: Callable[..., torch.Tensor] | None = None


KINDS: dict[str, RecipeKind] = {
    "fractal": RecipeKind(fractal.classes, fractal.render, fractal.density),
    "fractal_ex": RecipeKind(fractal.classes_ex, fractal.render, fractal.density),
    "contours": RecipeKind(contours.classes, contours.render, contours.density),
    "contours_ex": RecipeKind(contours.classes_ex, contours.render, contours.density),
    "noise": RecipeKind(noise.classes, noise.render),
}
RECIPES = tuple(KINDS)
MIX_SEPARATOR = "+"


@dataclass(frozen=True)
class Recipe:
    """A recipe's fixed classes.

    ``parts`` is one ``(kind, first_label, num_classes, params)`` per recipe of the mix (one
    for a plain recipe); ``params`` holds that recipe's class tensors. ``instances``: at most
    this many instances of the class per image (figure recipes; module docstring).
    """

    name: str
    num_classes: int
    seed: int
    parts: tuple[tuple[str, int, int, dict[str, torch.Tensor]], ...] = field(repr=False)
    instances: int = 1

    @property
    def params(self) -> dict[str, torch.Tensor]:
        """The class tensors of a plain (unmixed) recipe."""
        return self.parts[0][3]

    def to(self, device: torch.device | str) -> Recipe:
        """The same classes with their tensors on ``device`` (render there)."""
        parts = tuple(
            (kind, first, count, {k: v.to(device) for k, v in params.items()})
            for kind, first, count, params in self.parts
        )
        return Recipe(self.name, self.num_classes, self.seed, parts, self.instances)


def recipe_kinds(name: str) -> list[str]:
    """The recipes of ``name`` (one, or several joined by ``+``).

    Raises:
        ValueError: an unknown or repeated recipe, naming it and the known ones.
    """
    kinds = name.split(MIX_SEPARATOR)
    for kind in kinds:
        if kind not in KINDS:
            raise ValueError(
                f"unknown pretraining recipe {kind!r} in {name!r}; known: {', '.join(RECIPES)} "
                f"(join several with '{MIX_SEPARATOR}')"
            )
    if len(set(kinds)) != len(kinds):
        raise ValueError(f"recipe {name!r} names a recipe twice")
    return kinds


def _part_seed(seed: int, kind: str) -> int:
    digest = hashlib.sha256(f"munet-recipe/{kind}/{seed}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)


def make_recipe(name: str, num_classes: int, seed: int, instances: int = 1) -> Recipe:
    """The classes of recipe ``name`` (a recipe of :data:`RECIPES` or a ``+`` mix) from ``seed``,
    rendered with up to ``instances`` instances per image.

    Raises:
        ValueError: unknown recipe, fewer than 2 classes (per recipe of a mix), or
            ``instances`` below 1.
    """
    kinds = recipe_kinds(name)
    if not (isinstance(instances, int) and instances >= 1):
        raise ValueError(f"instances {instances!r}: expected an integer >= 1 (per image)")
    if num_classes < 2 * len(kinds):
        raise ValueError(
            f"num_classes {num_classes!r}: expected at least 2 per recipe ({2 * len(kinds)})"
        )
    if len(kinds) == 1:
        # A plain recipe draws from the seed itself (the shipped roots' classes stay as made).
        g = torch.Generator().manual_seed(seed)
        parts = ((name, 0, num_classes, KINDS[name].classes(num_classes, g)),)
        return Recipe(name, num_classes, seed, parts, instances)
    parts = []
    first = 0
    for index, kind in enumerate(kinds):
        count = num_classes // len(kinds) + (1 if index < num_classes % len(kinds) else 0)
        g = torch.Generator().manual_seed(_part_seed(seed, kind))
        parts.append((kind, first, count, KINDS[kind].classes(count, g)))
        first += count
    return Recipe(name, num_classes, seed, tuple(parts), instances)


def sample_batch(
    recipe: Recipe,
    batch_size: int,
    image_size: int,
    g: torch.Generator,
    points: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch of (images (B, 3, S, S) in [-1, 1], labels (B,) int64), classes uniform
    (for a mix: uniform within each recipe's fixed share of the batch).

    Everything is drawn from ``g`` and made on its device (``recipe`` must be there too:
    :meth:`Recipe.to`). ``points``: chaos-game chains per fractal image (default one per two
    output pixels; each chain draws several points).
    """
    device = g.device
    if len(recipe.parts) == 1:
        labels = torch.randint(0, recipe.num_classes, (batch_size,), generator=g, device=device)
        kind, _, _, params = recipe.parts[0]
        return _render(kind, params, labels, image_size, g, points, recipe.instances), labels
    # A mix: each recipe gets a fixed share of the batch (its share of the classes), so the
    # split needs no look at the labels (on a GPU that would stall the stream), then the
    # batch is shuffled. Labels are uniform within each recipe.
    images, labels = [], []
    for (kind, first, count, params), size in zip(
        recipe.parts, _shares(recipe, batch_size), strict=True
    ):
        if size == 0:
            continue
        local = torch.randint(0, count, (size,), generator=g, device=device)
        images.append(_render(kind, params, local, image_size, g, points, recipe.instances))
        labels.append(local + first)
    order = torch.randperm(batch_size, generator=g, device=device)
    return torch.cat(images)[order], torch.cat(labels)[order]


def _shares(recipe: Recipe, batch_size: int) -> list[int]:
    """Images per recipe of a mix: proportional to its classes, the remainder to the first."""
    sizes = [batch_size * count // recipe.num_classes for _, _, count, _ in recipe.parts]
    for index in range(batch_size - sum(sizes)):
        sizes[index % len(sizes)] += 1
    return sizes


def _render(kind: str, params: dict, labels: torch.Tensor, image_size: int, g: torch.Generator,
            points: int | None, instances: int) -> torch.Tensor:  # fmt: skip
    extra = (points,) if kind.startswith("fractal") else ()
    recipe = KINDS[kind]
    if instances == 1 or recipe.density is None:
        return recipe.render(params, labels, image_size, g, *extra)
    return _compose(kind, params, labels[:, None].expand(-1, instances), image_size, g, points)


def _compose(kind: str, params: dict, labels: torch.Tensor, image_size: int, g: torch.Generator,
             points: int | None) -> torch.Tensor:  # fmt: skip
    """Images of 1 to K figures of a figure recipe, one per instance label (B, K); an image
    shows the first ``count`` of its row."""
    extra = (points,) if kind.startswith("fractal") else ()
    # Every image draws K instances (fixed shapes, no look at the counts); those past its
    # count are masked out.
    batch, instances = labels.shape
    figures = KINDS[kind].density(params, labels.reshape(-1), image_size, g, *extra)
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
