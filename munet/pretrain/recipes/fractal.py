"""``fractal``: iterated-function-system fractals (FractalDB, Kataoka et al. 2020).

Each class is one random iterated function system (2-4 contractive affine maps of the plane,
picked with probability proportional to their determinant). An image is the attractor, found
by iterating many points in parallel (the "chaos game") and splatting them into a density
histogram, under a random per-image zoom, shift and flip (the generator colours it: a random
foreground colour on a random background colour).
"""

from __future__ import annotations

import torch

from munet.pretrain.recipes.common import splat

# Iterations before a point lies on the attractor (each affine part contracts by <= 0.8, so
# after 12 steps any start is within 0.8**12 ~ 0.07 of it), then iterations whose points are
# drawn.
_BURN_IN = 12
_DRAWN = 8


def _affine_maps(num_classes: int, g: torch.Generator, min_maps: int, max_maps: int) -> dict:
    num_maps = torch.randint(min_maps, max_maps + 1, (num_classes,), generator=g)
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


def classes(num_classes: int, g: torch.Generator) -> dict:
    """``fractal``: ``maps`` (C, 4, 2, 3) affine maps [A | b] and ``probs`` (C, 4)."""
    return _affine_maps(num_classes, g, 2, 4)


def _columns(table: torch.Tensor) -> list[torch.Tensor]:
    """Per-class-map numbers (B, M, K) as K flat, dense columns (B * M,)."""
    return [table[..., k].reshape(-1).contiguous() for k in range(table.shape[-1])]


def _pick(columns: list[torch.Tensor], rows: torch.Tensor) -> list[torch.Tensor]:
    """Each point's chosen map's numbers: ``rows`` (B, P) index the columns' B * M entries."""
    flat = rows.reshape(-1)
    return [column.index_select(0, flat).view_as(rows) for column in columns]


def _chaos_game(params: dict, labels: torch.Tensor, image_size: int, g: torch.Generator,
                points: int | None) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """The attractor points of the labelled classes: x and y, (B, N) each."""
    batch = labels.shape[0]
    device = g.device
    chains = points or max(32, image_size * image_size // 2)
    maps = params["maps"][labels].reshape(batch, -1, 6)  # (B, M, 6): a b tx c d ty
    cumulative = params["probs"][labels].cumsum(dim=1)  # (B, M), non-decreasing
    last = maps.shape[1] - 1
    # Each number of the maps as its own dense column, indexed by (image, map): the points'
    # arithmetic below then runs on dense (B, P) tensors (it is most of a batch's rendering).
    map_columns = _columns(maps)
    first_row = torch.arange(batch, device=device)[:, None] * (last + 1)  # (B, 1)
    xy = torch.rand(batch, chains, 2, generator=g, device=device) * 2 - 1
    x, y = xy[..., 0], xy[..., 1]
    drawn_x, drawn_y = [], []
    for step in range(_BURN_IN + _DRAWN):
        # Inverse-CDF draw of one map per point: the number of cumulative probabilities
        # below u, counted one map at a time (M <= 4 dense compares beat torch.multinomial
        # per row and torch.searchsorted on a CPU).
        u = torch.rand(batch, chains, generator=g, device=device)
        choice = torch.zeros(batch, chains, dtype=torch.long, device=device)
        for index in range(last + 1):
            choice += u > cumulative[:, index : index + 1]
        rows = choice.clamp_max(last) + first_row  # (B, P)
        a, b, tx, c, d, ty = _pick(map_columns, rows)
        x, y = a * x + b * y + tx, c * x + d * y + ty
        if step >= _BURN_IN:
            drawn_x.append(x)
            drawn_y.append(y)
    return torch.cat(drawn_x, dim=1), torch.cat(drawn_y, dim=1)


def density(params: dict, labels: torch.Tensor, image_size: int, g: torch.Generator,
            points: int | None = None) -> torch.Tensor:  # fmt: skip
    """Figure intensities (B, S, S) in [0, 1] of the labelled classes' attractors, uncoloured."""
    batch = labels.shape[0]
    device = g.device
    x, y = _chaos_game(params, labels, image_size, g, points)  # (B, N) each
    pts = torch.stack([x, y], dim=-1)  # (B, N, 2)
    # Fit each attractor's bounding box into the image, then a random zoom, shift and flip.
    # (Reduced along the dense x and y rows: much faster than along pts' middle axis.)
    low = torch.stack([x.amin(dim=1), y.amin(dim=1)], dim=-1)[:, None]
    high = torch.stack([x.amax(dim=1), y.amax(dim=1)], dim=-1)[:, None]
    centre = (low + high) / 2
    half = ((high - low) / 2).amax(dim=-1, keepdim=True).clamp_min(1e-4)
    zoom = 0.6 + 0.35 * torch.rand(batch, 1, 1, generator=g, device=device)
    flip = torch.where(torch.rand(batch, 1, 2, generator=g, device=device) < 0.5, -1.0, 1.0)
    shift = (torch.rand(batch, 1, 2, generator=g, device=device) * 2 - 1) * (1 - zoom)
    unit = (pts - centre) / half * zoom * flip + shift  # within [-1, 1]
    return splat(unit, image_size)
