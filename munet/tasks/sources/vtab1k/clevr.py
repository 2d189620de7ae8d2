"""CLEVR-style scenes (Johnson et al. 2017), regenerated for `1k/clevr-count` and
`1k/clevr-distance`.

A grey floor seen by a pinhole camera 4 units above it, tilted 30 degrees down, holds 3 to 10
objects: spheres, cubes and cylinders, in CLEVR's 8 colours, two materials (matte rubber and
shiny metal, with a specular highlight) and two sizes, resting on the floor at distinct cells
of a 4 x 4 grid (jittered) between 4 and 10 units ahead, none mostly hidden behind another.
Objects are shaded by one light and drawn far to near, so near objects hide far ones, and
their size on screen falls with depth (perspective). Labels, as VTAB defines them:

- count_all: the number of objects - 3 (8 classes); the count is drawn stratified;
- closest_object_distance: the bin of d, the smallest camera depth of an object's centre,
  among `DISTANCE_THRESHOLDS` (6 classes). VTAB's thresholds [8, 8.5, 9, 9.5, 10] fit CLEVR's
  camera; these were chosen once on the generated train split (data_seed 0) as the sextiles of
  d, to 0.01, for a near-uniform histogram (the count is drawn stratified as in count_all, so
  both tasks see the same kind of scenes).

Differences from CLEVR: 32x32 px flat-shaded sprites of the solids instead of ray-traced
320x480 renders, no shadows, and cubes facing the camera (not rotated).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from munet.tasks.sources.vtab1k.common import IMAGE_SIZE, coverage, pixel_centres, uniform

SHAPES = ("sphere", "cube", "cylinder")
COLORS = {  # CLEVR's palette
    "gray": (0.34, 0.34, 0.34),
    "red": (0.68, 0.14, 0.14),
    "blue": (0.16, 0.29, 0.84),
    "green": (0.11, 0.41, 0.08),
    "brown": (0.51, 0.29, 0.10),
    "purple": (0.51, 0.15, 0.75),
    "cyan": (0.16, 0.82, 0.82),
    "yellow": (1.00, 0.93, 0.20),
}
MIN_OBJECTS, MAX_OBJECTS = 3, 10
SIZES = (0.3, 0.5)  # object half-size (world units): small, large
# Sextiles of the nearest depth over the generated train split (data_seed 0), to 0.01.
DISTANCE_THRESHOLDS = (5.49, 5.61, 5.74, 5.98, 6.36)
DISTANCE_CLASS_NAMES = (
    "d<5.49", "5.49-5.61", "5.61-5.74", "5.74-5.98", "5.98-6.36", "d>=6.36",
)  # fmt: skip

_CAMERA_HEIGHT = 4.0
_TILT = torch.tensor(30.0).deg2rad()
_FOCAL = 1.3 * IMAGE_SIZE  # pixels
# The floor area objects stand on: rows between depths 4 and 10 ahead, and columns that widen
# with distance (x = u * _SPREAD * z, u in [-1, 1]) so that every cell stays in view.
_GRID_COLUMNS, _GRID_ROWS = 4, 4
_GRID_Z = (4.0, 10.0)
_SPREAD = 10.5 / _FOCAL
_LIGHT = torch.tensor([-0.5, -0.7, 0.5])  # direction towards the light, screen (x, y down, z)


@dataclass
class Scene:
    """K object slots per image, sorted far to near; absent slots have present = False."""

    x: torch.Tensor  # (N, K) world x (right)
    z: torch.Tensor  # (N, K) world z (ahead)
    size: torch.Tensor  # (N, K) half-size
    shape: torch.Tensor  # (N, K) index into SHAPES
    color: torch.Tensor  # (N, K, 3)
    metal: torch.Tensor  # (N, K) bool
    present: torch.Tensor  # (N, K) bool

    def depth(self) -> torch.Tensor:
        """(N, K) camera depth of each object's centre (inf for absent slots)."""
        depth = self.z * torch.cos(_TILT) + (_CAMERA_HEIGHT - self.size) * torch.sin(_TILT)
        return torch.where(self.present, depth, torch.full_like(depth, float("inf")))


def _draw_layout(n: int, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """(N, K) world x, z of K objects at distinct jittered grid cells."""
    k = MAX_OBJECTS
    cells = torch.rand(n, _GRID_COLUMNS * _GRID_ROWS, generator=g).argsort(dim=1)[:, :k]
    cell_d = (_GRID_Z[1] - _GRID_Z[0]) / _GRID_ROWS
    u = -1 + (cells % _GRID_COLUMNS + uniform((n, k), 0.3, 0.7, g)) * (2 / _GRID_COLUMNS)
    z = _GRID_Z[0] + (cells // _GRID_COLUMNS + uniform((n, k), 0.1, 0.9, g)) * cell_d
    return u * _SPREAD * z, z


def hidden_objects(scene: Scene) -> torch.Tensor:
    """(N, K) whether a present object's centre lies on screen inside a nearer object's
    half-size (it would show less than about half of itself; CLEVR rejects scenes with
    objects that are barely visible)."""
    sx, sy, half = _project(scene)
    depth = scene.depth()
    dist = torch.hypot(sx[:, :, None] - sx[:, None, :], sy[:, :, None] - sy[:, None, :])
    # [i, j]: object j is nearer than object i and covers i's centre.
    covers = (depth[:, None, :] < depth[:, :, None]) & (dist < half[:, None, :])
    covers &= scene.present[:, None, :] & scene.present[:, :, None]
    return covers.any(dim=2)


def sample_scenes(counts: torch.Tensor, g: torch.Generator) -> Scene:
    """Scenes holding `counts` (N,) objects each, at distinct jittered grid cells, sorted far to
    near. A layout in which an object would be mostly hidden is drawn again, up to 100 times
    (measured: 6% of first layouts of 3 objects are redrawn, 68% of those of 10 objects)."""
    n, k = len(counts), MAX_OBJECTS
    x, z = _draw_layout(n, g)
    size = torch.tensor(SIZES)[torch.randint(len(SIZES), (n, k), generator=g)]
    palette = torch.tensor(list(COLORS.values()))
    scene = Scene(
        x=x,
        z=z,
        size=size,
        shape=torch.randint(len(SHAPES), (n, k), generator=g),
        color=palette[torch.randint(len(COLORS), (n, k), generator=g)],
        metal=torch.rand(n, k, generator=g) < 0.5,
        present=torch.arange(k)[None, :] < counts[:, None],
    )
    for _ in range(100):
        redraw = hidden_objects(scene).any(dim=1)
        if not redraw.any():
            break
        x, z = _draw_layout(int(redraw.sum()), g)
        scene.x[redraw], scene.z[redraw] = x, z
    order = scene.depth().masked_fill(~scene.present, -1.0).argsort(dim=1, descending=True)
    for field in ("x", "z", "size", "shape", "metal", "present"):
        setattr(scene, field, getattr(scene, field).gather(1, order))
    scene.color = scene.color.gather(1, order[..., None].expand(-1, -1, 3))
    return scene


def _project(scene: Scene) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(N, K) screen x, y (pixels) of each object's centre and its screen half-size."""
    height = scene.size - _CAMERA_HEIGHT  # centre height relative to the camera
    depth = scene.z * torch.cos(_TILT) - height * torch.sin(_TILT)
    up = height * torch.cos(_TILT) + scene.z * torch.sin(_TILT)
    sx = IMAGE_SIZE / 2 + _FOCAL * scene.x / depth
    sy = IMAGE_SIZE / 2 - _FOCAL * up / depth
    return sx, sy, _FOCAL * scene.size / depth


def _floor(n: int, g: torch.Generator) -> torch.Tensor:
    """(N, 3, S, S) grey floor, lighter towards the horizon, with a little noise."""
    _, yy = pixel_centres()
    base = uniform((n, 1, 1, 1), 0.42, 0.55, g)
    gradient = 0.12 * (1 - yy / IMAGE_SIZE)[None]
    noise = 0.015 * torch.randn(n, 1, IMAGE_SIZE, IMAGE_SIZE, generator=g)
    return (base + gradient + noise).expand(-1, 3, -1, -1).clone()


def render_scenes(scene: Scene, g: torch.Generator) -> torch.Tensor:
    """(N, 3, S, S) images in [0, 1] of the scenes (slots painted in order: far to near)."""
    image = _floor(scene.x.shape[0], g)
    xx, yy = pixel_centres()
    sx, sy, half = _project(scene)
    light = _LIGHT / _LIGHT.norm()
    for slot in range(scene.x.shape[1]):
        cx, cy = sx[:, slot, None, None], sy[:, slot, None, None]
        r = half[:, slot, None, None]
        dx, dy = xx - cx, yy - cy
        shape = scene.shape[:, slot, None, None]
        # Sphere: a disc shaded by its normal; cube: a square with a lighter top face;
        # cylinder: a rectangle with a lighter elliptic top, shaded across its width.
        rho2 = ((dx**2 + dy**2) / r**2).clamp(max=1.0)
        sphere_shade = (
            light[0] * dx / r + light[1] * dy / r + light[2] * torch.sqrt(1 - rho2)
        ).clamp(min=0)
        top = 0.35 * r  # apparent depth of a top face at this tilt
        cube_d = torch.maximum(dx.abs() - 0.85 * r, (dy + 0.5 * top).abs() - (0.85 * r + 0.5 * top))
        cube_shade = torch.where(dy < -0.85 * r + top * 0.5, 0.95, 0.6 - 0.15 * dx / r)
        body = torch.maximum(dx.abs() - 0.8 * r, dy.abs() - 0.8 * r)
        cap = torch.sqrt((dx / (0.8 * r)) ** 2 + ((dy + 0.8 * r) / (0.3 * r)) ** 2) - 1.0
        bottom = torch.sqrt((dx / (0.8 * r)) ** 2 + ((dy - 0.8 * r) / (0.3 * r)) ** 2) - 1.0
        cylinder_d = torch.minimum(torch.minimum(body, cap * 0.3 * r), bottom * 0.3 * r)
        cylinder_shade = torch.where(cap < 0, 0.95, 0.75 - 0.3 * (dx / r) ** 2 - 0.1 * dx / r)
        distance = torch.where(
            shape == 0,
            torch.sqrt(dx**2 + dy**2) - r,
            torch.where(shape == 1, cube_d, cylinder_d),
        )
        shade = torch.where(
            shape == 0,
            0.25 + 0.75 * sphere_shade,
            torch.where(shape == 1, cube_shade, cylinder_shade),
        )
        color = scene.color[:, slot, :, None, None] * shade[:, None]
        # Metal: a small specular highlight up and to the left of the centre.
        glint = torch.exp(-((dx + 0.35 * r) ** 2 + (dy + 0.35 * r) ** 2) / (0.08 * r**2 + 0.3))
        metal = scene.metal[:, slot, None, None, None]
        color = torch.where(metal, color + 0.7 * glint[:, None], color)
        mask = coverage(distance) * scene.present[:, slot, None, None]
        image = torch.lerp(image, color.clamp(0, 1), mask[:, None])
    return image


def distance_label(scene: Scene) -> torch.Tensor:
    """The bin of each scene's nearest object depth among DISTANCE_THRESHOLDS."""
    nearest = scene.depth().min(dim=1).values
    return torch.bucketize(nearest, torch.tensor(DISTANCE_THRESHOLDS), right=True)


def render_count(
    count_index: torch.Tensor, g: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """`1k/clevr-count`: scenes of count_index + 3 objects; labels = count_index."""
    scene = sample_scenes(count_index + MIN_OBJECTS, g)
    return render_scenes(scene, g), count_index


def render_distance(
    count_index: torch.Tensor, g: torch.Generator, record: list[torch.Tensor] | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """`1k/clevr-distance`: scenes of count_index + 3 objects; labels = the nearest-depth bin.
    With `record`, each scene's nearest depth is appended to it (how the thresholds were
    chosen on train data: munet.tasks.sources.vtab1k.clevr_nearest_depths)."""
    scene = sample_scenes(count_index + MIN_OBJECTS, g)
    if record is not None:
        record.append(scene.depth().min(dim=1).values)
    return render_scenes(scene, g), distance_label(scene)
