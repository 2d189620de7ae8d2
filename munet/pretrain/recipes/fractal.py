"""Iterated-function-system fractals: ``fractal`` (FractalDB) and ``fractal_ex`` (flames).

- ``fractal`` (FractalDB, Kataoka et al. 2020): each class is one random iterated function
  system (2-4 contractive affine maps of the plane, picked with probability proportional to
  their determinant). An image is the attractor, found by iterating many points in parallel
  (the "chaos game") and splatting them into a density histogram, under a random per-image
  zoom, shift and flip, in a random foreground colour on a random background colour.
- ``fractal_ex`` (harder: more formula parameters per class, as the ExFractalDB / fractal-flame
  line of work): 2-8 affine maps, and per map a blend of four non-linear "variations" (linear,
  sinusoidal, swirl, horseshoe; Draves' fractal flames) applied after the affine part. Each
  variation maps a point to one no farther from the origin, and the blend weights sum to 1, so
  the attractor stays bounded. A class is 8 x (6 + 4) numbers instead of 4 x 6.
"""

from __future__ import annotations

import torch

from munet.pretrain.recipes.common import colourise, splat

# Iterations before a point lies on the attractor (each affine part contracts by <= 0.8, so
# after 12 steps any start is within 0.8**12 ~ 0.07 of it), then iterations whose points are
# drawn.
_BURN_IN = 12
_DRAWN = 8
_VARIATIONS = 4


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


def classes_ex(num_classes: int, g: torch.Generator) -> dict:
    """``fractal_ex``: 2-8 maps (``maps`` (C, 8, 2, 3), ``probs``) and per map a variation
    blend ``variations`` (C, 8, 4), rows summing to 1."""
    params = _affine_maps(num_classes, g, 2, 8)
    # Dirichlet(0.5)-like blends via normalised -log(u)**2: most maps lean on one variation.
    raw = (-torch.log(torch.rand(num_classes, 8, _VARIATIONS, generator=g).clamp_min(1e-6))) ** 2
    params["variations"] = raw / raw.sum(dim=-1, keepdim=True)
    return params


def _vary(
    x: torch.Tensor, y: torch.Tensor, weights: list[torch.Tensor]
) -> tuple[torch.Tensor, torch.Tensor]:
    """Blend of the four radius-non-increasing variations; x, y and the four weights (B, P)."""
    r2 = x * x + y * y
    r = torch.sqrt(r2).clamp_min(1e-6)
    sin_r2, cos_r2 = torch.sin(r2), torch.cos(r2)
    out_x = (
        weights[0] * x
        + weights[1] * torch.sin(x)
        + weights[2] * (x * sin_r2 - y * cos_r2)
        + weights[3] * (x - y) * (x + y) / r
    )
    out_y = (
        weights[0] * y
        + weights[1] * torch.sin(y)
        + weights[2] * (x * cos_r2 + y * sin_r2)
        + weights[3] * 2 * x * y / r
    )
    return out_x, out_y


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
    variations = params.get("variations")
    weight_columns = _columns(variations[labels]) if variations is not None else None
    first_row = torch.arange(batch, device=device)[:, None] * (last + 1)  # (B, 1)
    xy = torch.rand(batch, chains, 2, generator=g, device=device) * 2 - 1
    x, y = xy[..., 0], xy[..., 1]
    drawn_x, drawn_y = [], []
    for step in range(_BURN_IN + _DRAWN):
        # Inverse-CDF draw of one map per point: the number of cumulative probabilities
        # below u, counted one map at a time (M <= 8 dense compares beat torch.multinomial
        # per row and torch.searchsorted on a CPU).
        u = torch.rand(batch, chains, generator=g, device=device)
        choice = torch.zeros(batch, chains, dtype=torch.long, device=device)
        for index in range(last + 1):
            choice += u > cumulative[:, index : index + 1]
        rows = choice.clamp_max(last) + first_row  # (B, P)
        a, b, tx, c, d, ty = _pick(map_columns, rows)
        x, y = a * x + b * y + tx, c * x + d * y + ty
        if weight_columns is not None:
            x, y = _vary(x, y, _pick(weight_columns, rows))
        if step >= _BURN_IN:
            drawn_x.append(x)
            drawn_y.append(y)
    return torch.cat(drawn_x, dim=1), torch.cat(drawn_y, dim=1)


def render(params: dict, labels: torch.Tensor, image_size: int, g: torch.Generator,
           points: int | None = None) -> torch.Tensor:  # fmt: skip
    """Images (B, 3, S, S) in [-1, 1] of the labelled classes' attractors."""
    return colourise(density(params, labels, image_size, g, points), g)


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
