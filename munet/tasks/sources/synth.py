"""`synth/*`: procedurally generated image tasks that share generative factors.

Every image is a 32x32 RGB scene: a textured background (a desaturated base colour, sinusoidal
stripes of random orientation, frequency and phase, and pixel noise) with one or more objects
painted on it. Each object has a shape (circle, square, triangle, cross), a colour (red, green,
blue, yellow, magenta, cyan, each jittered), a size and a position. All factors vary in every
task; a task only changes which factor is the label (and the range the others are drawn from).
So a model that learned to find objects and read their shape, colour or extent on one task has
features that help on the others.

| task             | classes | label                                             |
|------------------|---------|---------------------------------------------------|
| synth/shape      | 4       | the shape of the single object                    |
| synth/color      | 6       | the colour of the single object                   |
| synth/count      | 5       | how many objects (1..5), small, on a 4x4 grid     |
| synth/position   | 9       | the 3x3 grid cell holding the single object       |
| synth/size       | 3       | the radius band of the single object (S, M, L)    |

Splits: train 4000, validation 500, test 1000 examples for each task (`SYNTH_SPLIT_SIZES`).
Edges are antialiased (coverage from the signed distance to each shape). Generation is vectorised
(about a second per task on one CPU core) and deterministic: the data depend only on the task
name and `data_seed` (default 0, fixed so every process sees the same examples).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch

from munet.tasks.sources.base import SPLITS, ArraySource, SplitArrays

IMAGE_SIZE = 32
SYNTH_SPLIT_SIZES = {"train": 4000, "validation": 500, "test": 1000}
SHAPES = ("circle", "square", "triangle", "cross")
COLORS = {
    "red": (0.90, 0.12, 0.10),
    "green": (0.12, 0.78, 0.15),
    "blue": (0.15, 0.30, 0.95),
    "yellow": (0.95, 0.88, 0.10),
    "magenta": (0.88, 0.15, 0.85),
    "cyan": (0.10, 0.85, 0.90),
}
SIZE_BANDS = ((2.5, 3.5), (5.0, 6.0), (8.0, 9.5))  # radius ranges in pixels for synth/size
_CHUNK = 1000  # images rendered at once, bounding memory


@dataclass(frozen=True)
class SynthTaskSpec:
    name: str
    num_classes: int
    class_names: tuple[str, ...]
    description: str


SYNTH_TASKS: dict[str, SynthTaskSpec] = {
    spec.name: spec
    for spec in (
        SynthTaskSpec("synth/shape", 4, SHAPES, "shape of one object"),
        SynthTaskSpec("synth/color", 6, tuple(COLORS), "colour of one object"),
        SynthTaskSpec("synth/count", 5, ("1", "2", "3", "4", "5"), "number of objects"),
        SynthTaskSpec(
            "synth/position",
            9,
            tuple(f"cell{r}{c}" for r in range(3) for c in range(3)),
            "3x3 grid cell of one object",
        ),
        SynthTaskSpec("synth/size", 3, ("small", "medium", "large"), "size band of one object"),
    )
}
_TASK_INDEX = {name: i for i, name in enumerate(SYNTH_TASKS)}


@dataclass
class Objects:
    """Scene objects, K slots per image; absent slots have present = False."""

    cx: torch.Tensor  # (N, K) pixels
    cy: torch.Tensor  # (N, K)
    radius: torch.Tensor  # (N, K)
    shape: torch.Tensor  # (N, K) int64 index into SHAPES
    color: torch.Tensor  # (N, K, 3) in [0, 1]
    present: torch.Tensor  # (N, K) bool


def _uniform(shape: tuple[int, ...], lo: float, hi: float, g: torch.Generator) -> torch.Tensor:
    return lo + (hi - lo) * torch.rand(shape, generator=g)


def random_colors(index: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """Palette colours at `index` (any shape), jittered per channel and in brightness."""
    palette = torch.tensor(list(COLORS.values()))
    base = palette[index]
    jitter = _uniform((*index.shape, 3), -0.08, 0.08, g)
    gain = _uniform((*index.shape, 1), 0.8, 1.05, g)
    return ((base + jitter) * gain).clamp(0, 1)


def _single_objects(
    n: int, g: torch.Generator, radius: torch.Tensor, shape=None, color=None
) -> Objects:
    """One object per image, anywhere it fits entirely inside the canvas."""
    shape = torch.randint(len(SHAPES), (n,), generator=g) if shape is None else shape
    color_index = torch.randint(len(COLORS), (n,), generator=g) if color is None else color
    margin = radius + 1.0
    cx = margin + torch.rand(n, generator=g) * (IMAGE_SIZE - 2 * margin)
    cy = margin + torch.rand(n, generator=g) * (IMAGE_SIZE - 2 * margin)
    return Objects(
        cx=cx[:, None],
        cy=cy[:, None],
        radius=radius[:, None],
        shape=shape[:, None],
        color=random_colors(color_index, g)[:, None],
        present=torch.ones(n, 1, dtype=torch.bool),
    )


def _grid_objects(
    n: int,
    g: torch.Generator,
    grid: int,
    cells: torch.Tensor,
    present: torch.Tensor,
    radius: torch.Tensor,
) -> Objects:
    """Objects centred in grid cells `cells` (N, K) with jitter that keeps them in the cell."""
    cell = IMAGE_SIZE / grid
    k = cells.shape[1]
    slack = (cell / 2 - radius - 0.5).clamp(min=0.0)
    cx = (cells % grid + 0.5) * cell + (torch.rand(n, k, generator=g) * 2 - 1) * slack
    cy = (cells // grid + 0.5) * cell + (torch.rand(n, k, generator=g) * 2 - 1) * slack
    return Objects(
        cx=cx,
        cy=cy,
        radius=radius,
        shape=torch.randint(len(SHAPES), (n, k), generator=g),
        color=random_colors(torch.randint(len(COLORS), (n, k), generator=g), g),
        present=present,
    )


def _sample_scene(task: str, n: int, g: torch.Generator) -> tuple[Objects, torch.Tensor]:
    """Draws objects and labels for `n` examples of `task`."""
    if task == "synth/shape":
        labels = torch.randint(4, (n,), generator=g)
        return _single_objects(n, g, _uniform((n,), 7.0, 10.0, g), shape=labels), labels
    if task == "synth/color":
        labels = torch.randint(6, (n,), generator=g)
        return _single_objects(n, g, _uniform((n,), 4.0, 8.0, g), color=labels), labels
    if task == "synth/size":
        labels = torch.randint(3, (n,), generator=g)
        bands = torch.tensor(SIZE_BANDS)[labels]
        radius = bands[:, 0] + torch.rand(n, generator=g) * (bands[:, 1] - bands[:, 0])
        return _single_objects(n, g, radius), labels
    if task == "synth/position":
        labels = torch.randint(9, (n,), generator=g)
        radius = _uniform((n, 1), 3.0, 4.5, g)
        present = torch.ones(n, 1, dtype=torch.bool)
        return _grid_objects(n, g, 3, labels[:, None], present, radius), labels
    if task == "synth/count":
        labels = torch.randint(5, (n,), generator=g)
        # 5 distinct cells of a 4x4 grid per image; the first (label + 1) hold an object.
        cells = torch.rand(n, 16, generator=g).argsort(dim=1)[:, :5]
        present = torch.arange(5)[None, :] <= labels[:, None]
        radius = _uniform((n, 5), 2.5, 3.5, g)
        return _grid_objects(n, g, 4, cells, present, radius), labels
    raise ValueError(f"unknown synthetic task {task!r}; known: {', '.join(SYNTH_TASKS)}")


def backgrounds(n: int, g: torch.Generator) -> torch.Tensor:
    """(N, 3, S, S) desaturated striped, noisy textures in [0, 1]."""
    size = IMAGE_SIZE
    gray = _uniform((n, 1, 1, 1), 0.2, 0.6, g)
    base = gray + _uniform((n, 3, 1, 1), -0.06, 0.06, g)
    coords = torch.arange(size, dtype=torch.float32)
    yy, xx = torch.meshgrid(coords, coords, indexing="ij")
    angle = _uniform((n, 1, 1), 0, math.pi, g)
    freq = _uniform((n, 1, 1), 0.2, 1.2, g)
    phase = _uniform((n, 1, 1), 0, 2 * math.pi, g)
    amplitude = _uniform((n, 1, 1, 1), 0.02, 0.12, g)
    stripes = torch.sin(freq * (xx * torch.cos(angle) + yy * torch.sin(angle)) + phase)
    noise = torch.randn((n, 1, size, size), generator=g) * 0.03
    return (base + amplitude * stripes[:, None] + noise).clamp(0, 1)


def _signed_distance(shape: int, dx: torch.Tensor, dy: torch.Tensor, r: torch.Tensor):
    """Approximate signed distance (pixels, negative inside) from pixel centres to a shape."""
    adx, ady = dx.abs(), dy.abs()
    if shape == 0:  # circle
        return torch.sqrt(dx * dx + dy * dy) - r
    if shape == 1:  # square
        return torch.maximum(adx, ady) - 0.85 * r
    if shape == 2:  # upward triangle: apex at -r, base at +0.75 r, 0.95 r half-width at base
        side = (1.75 * adx - 0.95 * (dy + r)) / 1.9912  # normalised by hypot(1.75, 0.95)
        return torch.maximum(dy - 0.75 * r, side)
    arm = 0.32 * r  # cross: union of two bars
    return torch.minimum(torch.maximum(adx - arm, ady - r), torch.maximum(ady - arm, adx - r))


def shape_masks(objects: Objects) -> torch.Tensor:
    """(N, K, S, S) antialiased coverage of each object (area of the pixel inside the shape,
    approximated from the signed distance at its centre); absent objects cover nothing."""
    n, k = objects.cx.shape
    coords = torch.arange(IMAGE_SIZE, dtype=torch.float32) + 0.5
    coverage = torch.zeros(n * k, IMAGE_SIZE, IMAGE_SIZE)
    flat_shape = objects.shape.reshape(-1)
    present = objects.present.reshape(-1)
    for shape in range(len(SHAPES)):
        rows = torch.nonzero(present & (flat_shape == shape)).squeeze(1)
        if rows.numel() == 0:
            continue
        dx = coords.view(1, 1, -1) - objects.cx.reshape(-1)[rows].view(-1, 1, 1)
        dy = coords.view(1, -1, 1) - objects.cy.reshape(-1)[rows].view(-1, 1, 1)
        r = objects.radius.reshape(-1)[rows].view(-1, 1, 1)
        distance = _signed_distance(shape, dx, dy, r)
        coverage[rows] = (0.5 - distance).clamp_(0.0, 1.0)
    return coverage.view(n, k, IMAGE_SIZE, IMAGE_SIZE)


def _render(objects: Objects, background: torch.Tensor) -> torch.Tensor:
    """Paints objects in slot order over the background; returns uint8 (N, 3, S, S)."""
    image = background
    masks = shape_masks(objects)
    for k in range(masks.shape[1]):
        color = objects.color[:, k, :, None, None].expand_as(image)
        image.lerp_(color, masks[:, k : k + 1])  # in place: background is ours to overwrite
    return image.mul_(255).round_().clamp_(0, 255).to(torch.uint8)


def generate_synth_split(task: str, n: int, seed: int) -> SplitArrays:
    """Generates `n` examples of `task` deterministically from `seed`."""
    g = torch.Generator().manual_seed(seed)
    images, labels = [], []
    for start in range(0, n, _CHUNK):
        count = min(_CHUNK, n - start)
        objects, chunk_labels = _sample_scene(task, count, g)
        images.append(_render(objects, backgrounds(count, g)))
        labels.append(chunk_labels)
    if not images:
        return SplitArrays(
            torch.empty(0, 3, IMAGE_SIZE, IMAGE_SIZE, dtype=torch.uint8),
            torch.empty(0, dtype=torch.int64),
        )
    return SplitArrays(torch.cat(images), torch.cat(labels).to(torch.int64))


@functools.lru_cache(maxsize=16)
def load_synth_source(task: str, data_seed: int = 0) -> ArraySource:
    """Builds (once per process and seed) the source of a `synth/*` task.

    Raises:
        ValueError: an unknown synthetic task name.
    """
    if task not in SYNTH_TASKS:
        raise ValueError(f"unknown synthetic task {task!r}; known: {', '.join(SYNTH_TASKS)}")
    spec = SYNTH_TASKS[task]
    splits = {}
    for split_index, split in enumerate(SPLITS):
        # Distinct, stable streams per (seed, task, split); no Python hash() (it is salted).
        seed = (data_seed * 1000 + _TASK_INDEX[task]) * 10 + split_index
        splits[split] = generate_synth_split(task, SYNTH_SPLIT_SIZES[split], seed)
    return ArraySource(task, splits, spec.num_classes, class_names=spec.class_names)
