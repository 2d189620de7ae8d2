"""smallNORB-style renders (LeCun et al. 2004), regenerated for `1k/norb-azimuth` and
`1k/norb-elevation`.

Toys of smallNORB's 5 categories (four-legged animal, human figure, airplane, truck, car) are
built from 3-7 boxes each; every category has 10 instances (its template with the toy's size,
each box's extents and the toy's grey albedo drawn from `data_seed`). A toy stands on
a turntable (not drawn) before a plain backdrop of random grey and is seen by an orthographic
camera, shaded (Lambert) by one of 6 lights fixed in the room. As in smallNORB, the turntable
sets the azimuth (18 values, 0..340 degrees in steps of 20) and the camera the elevation (9
values, 30..70 degrees in steps of 5), and the train split holds instances 0-4 of each
category while validation and test hold the other five (VTAB's smallNORB validation is the
first half of its test split): the label must be read from toys never seen in training. Each
toy's front (head, cab, nose) points along azimuth 0.

Differences from smallNORB: 32x32 grey (as RGB) box models and ray-cast shading instead of
96x96 stereo photographs of real toys; no camera-to-turntable distance change and no shadows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from munet.tasks.sources.vtab1k.common import IMAGE_SIZE, uniform

CATEGORIES = ("animal", "human", "airplane", "truck", "car")
AZIMUTHS = tuple(range(0, 360, 20))  # degrees
ELEVATIONS = tuple(range(30, 75, 5))  # degrees
NUM_INSTANCES = 10
TRAIN_INSTANCES = (0, 1, 2, 3, 4)
HELD_OUT_INSTANCES = (5, 6, 7, 8, 9)  # validation and test
NUM_LIGHTINGS = 6

# Boxes per category in the toy's frame (x forward, y up, z left): centre, half extents.
_TEMPLATES = {
    "animal": [
        (0.0, 0.5, 0.0, 0.55, 0.17, 0.2),  # body
        (0.4, 0.17, 0.13, 0.06, 0.17, 0.06),  # legs
        (0.4, 0.17, -0.13, 0.06, 0.17, 0.06),
        (-0.4, 0.17, 0.13, 0.06, 0.17, 0.06),
        (-0.4, 0.17, -0.13, 0.06, 0.17, 0.06),
        (0.72, 0.72, 0.0, 0.15, 0.12, 0.11),  # head
        (-0.7, 0.6, 0.0, 0.15, 0.03, 0.03),  # tail
    ],
    "human": [
        (0.0, 0.28, 0.1, 0.07, 0.28, 0.07),  # legs
        (0.0, 0.28, -0.1, 0.07, 0.28, 0.07),
        (0.0, 0.78, 0.0, 0.12, 0.22, 0.22),  # torso
        (0.02, 1.12, 0.0, 0.1, 0.11, 0.1),  # head
        (0.18, 0.9, 0.28, 0.2, 0.05, 0.05),  # arms, held forward
        (0.18, 0.9, -0.28, 0.2, 0.05, 0.05),
        (0.1, 0.03, 0.0, 0.1, 0.03, 0.16),  # feet
    ],
    "airplane": [
        (0.0, 0.5, 0.0, 0.85, 0.1, 0.1),  # fuselage
        (0.1, 0.5, 0.0, 0.18, 0.03, 0.8),  # wings
        (-0.75, 0.72, 0.0, 0.1, 0.2, 0.03),  # fin
        (-0.75, 0.52, 0.0, 0.1, 0.02, 0.3),  # tailplane
        (0.0, 0.2, 0.0, 0.04, 0.2, 0.04),  # stand
        (0.9, 0.5, 0.0, 0.07, 0.06, 0.06),  # nose
    ],
    "truck": [
        (0.0, 0.12, 0.0, 0.8, 0.1, 0.3),  # chassis
        (0.55, 0.45, 0.0, 0.22, 0.28, 0.32),  # cab
        (-0.25, 0.5, 0.0, 0.52, 0.35, 0.35),  # cargo box
        (0.8, 0.18, 0.0, 0.04, 0.05, 0.3),  # bumper
    ],
    "car": [
        (0.0, 0.24, 0.0, 0.75, 0.14, 0.35),  # body
        (-0.1, 0.5, 0.0, 0.38, 0.13, 0.3),  # cabin, set back
        (0.45, 0.1, 0.36, 0.12, 0.1, 0.04),  # wheels
        (0.45, 0.1, -0.36, 0.12, 0.1, 0.04),
        (-0.45, 0.1, 0.36, 0.12, 0.1, 0.04),
        (-0.45, 0.1, -0.36, 0.12, 0.1, 0.04),
    ],
}
_MAX_BOXES = max(len(boxes) for boxes in _TEMPLATES.values())
_TARGET_HEIGHT = 0.45  # the point the camera looks at, above the turntable centre
_VIEW_HALF_WIDTH = 1.15  # world units from the image centre to its edge


@dataclass(frozen=True)
class Toys:
    """Every instance's boxes, (C * NUM_INSTANCES, B, 3) each, row = category * 10 + instance."""

    lo: torch.Tensor
    hi: torch.Tensor
    present: torch.Tensor  # (T, B) bool
    albedo: torch.Tensor  # (T,)


def make_toys(g: torch.Generator) -> Toys:
    """The 50 toys: each category's template, sized per instance."""
    count = len(CATEGORIES) * NUM_INSTANCES
    boxes = torch.zeros(count, _MAX_BOXES, 6)
    present = torch.zeros(count, _MAX_BOXES, dtype=torch.bool)
    for c, name in enumerate(CATEGORIES):
        template = torch.tensor(_TEMPLATES[name])
        rows = slice(c * NUM_INSTANCES, (c + 1) * NUM_INSTANCES)
        boxes[rows, : len(template)] = template
        present[rows, : len(template)] = True
    # The whole toy's size, then per axis and per box a little: instances of a category keep
    # its proportions (foreshortening of known proportions is the elevation cue; per-axis
    # factors of 0.8-1.2 left 0.19 validation accuracy against 0.115 chance).
    toy_scale = uniform((count, 1, 1), 0.8, 1.2, g) * uniform((count, 1, 3), 0.95, 1.05, g)
    box_scale = uniform((count, _MAX_BOXES, 3), 0.85, 1.15, g)
    centre = boxes[..., :3] * toy_scale
    half = boxes[..., 3:] * toy_scale * box_scale
    # Keep every toy standing on the turntable after scaling: its lowest box touches y = 0.
    bottom = torch.where(present, centre[..., 1] - half[..., 1], torch.inf).min(dim=1).values
    centre[..., 1] -= bottom[:, None]
    return Toys(centre - half, centre + half, present, uniform((count,), 0.45, 0.85, g))


def _lights() -> torch.Tensor:
    """(6, 3) unit directions towards the 6 room lights (the camera sits on the +x side)."""
    directions = []
    for elevation in (35.0, 65.0):
        for azimuth in (-70.0, 0.0, 70.0):
            e, a = math.radians(elevation), math.radians(azimuth)
            directions.append((math.cos(e) * math.cos(a), math.sin(e), math.cos(e) * math.sin(a)))
    return torch.tensor(directions)


def _rotate_y(v: torch.Tensor, angle: torch.Tensor) -> torch.Tensor:
    """Rotates vectors (..., 3) about the vertical axis by `angle` (broadcast to v[..., 0])."""
    cos, sin = torch.cos(angle), torch.sin(angle)
    x, y, z = v.unbind(-1)
    return torch.stack((cos * x + sin * z, y, -sin * x + cos * z), dim=-1)


def render_toys(
    toys: Toys,
    toy_index: torch.Tensor,
    azimuth_index: torch.Tensor,
    elevation_index: torch.Tensor,
    lighting: torch.Tensor,
    background: torch.Tensor,
) -> torch.Tensor:
    """(N, 3, S, S) grey images in [0, 1]: toy `toy_index` on the turntable turned to the
    azimuth, seen from the elevation, lit by light `lighting`, on a backdrop of grey level
    `background` (each (N,))."""
    n, size = len(toy_index), IMAGE_SIZE
    elevation = torch.tensor(ELEVATIONS, dtype=torch.float32)[elevation_index].deg2rad()
    azimuth = torch.tensor(AZIMUTHS, dtype=torch.float32)[azimuth_index].deg2rad()
    # Orthographic camera on the +x side of the room, looking at the target.
    cos_e, sin_e = torch.cos(elevation)[:, None], torch.sin(elevation)[:, None]
    zeros = torch.zeros_like(cos_e)
    towards_camera = torch.cat((cos_e, sin_e, zeros), dim=1)  # (N, 3)
    right = torch.tensor([0.0, 0.0, -1.0]).expand(n, 3)
    up = torch.cat((-sin_e, cos_e, zeros), dim=1)
    coords = ((torch.arange(size, dtype=torch.float32) + 0.5) / size * 2 - 1) * _VIEW_HALF_WIDTH
    py, px = torch.meshgrid(-coords, coords, indexing="ij")
    px, py = px.reshape(1, -1, 1), py.reshape(1, -1, 1)  # (1, P, 1)
    target = torch.tensor([0.0, _TARGET_HEIGHT, 0.0])
    origin = target + px * right[:, None] + py * up[:, None] + 10.0 * towards_camera[:, None]
    direction = -towards_camera  # (N, 3), the same for every pixel
    # The turntable turns the toy by the azimuth: work in the toy's frame.
    origin_toy = _rotate_y(origin, -azimuth[:, None])  # (N, P, 3)
    direction_toy = _rotate_y(direction, -azimuth)  # (N, 3)
    safe = torch.where(
        direction_toy.abs() < 1e-6, torch.full_like(direction_toy, 1e-6), direction_toy
    )
    lo, hi = toys.lo[toy_index][:, None], toys.hi[toy_index][:, None]  # (N, 1, B, 3)
    o, inv = origin_toy[:, :, None], (1.0 / safe)[:, None, None]  # (N, P, 1, 3), (N, 1, 1, 3)
    t1, t2 = (lo - o) * inv, (hi - o) * inv  # (N, P, B, 3)
    t_near, face = torch.minimum(t1, t2).max(dim=-1)  # entry distance, the axis entered through
    t_far = torch.maximum(t1, t2).min(dim=-1).values
    hit = toys.present[toy_index][:, None] & (t_far >= t_near) & (t_far > 0)
    t_box, box = torch.where(hit, t_near, torch.inf).min(dim=-1)  # (N, P)
    face = face.gather(-1, box[..., None]).squeeze(-1)
    normal = torch.nn.functional.one_hot(face, 3).float() * -torch.sign(safe)[:, None]
    light = _lights()[lighting]  # (N, 3), room frame
    light_toy = _rotate_y(light, -azimuth)
    lambert = (normal * light_toy[:, None]).sum(-1).clamp(min=0)
    albedo = toys.albedo[toy_index][:, None]
    toy_shade = albedo * (0.25 + 0.75 * lambert)
    # A plain backdrop, as smallNORB's: no floor or turntable edge in view, whose outline
    # would give the elevation away (a disc's ellipse measured it to 0.99 validation accuracy).
    shade = torch.where(torch.isfinite(t_box), toy_shade, background[:, None])
    return shade.view(n, 1, size, size).expand(-1, 3, -1, -1).contiguous()


def _views(factor: torch.Tensor, g: torch.Generator, held_out: bool) -> dict[str, torch.Tensor]:
    n = len(factor)
    instances = torch.tensor(HELD_OUT_INSTANCES if held_out else TRAIN_INSTANCES)
    category = torch.randint(len(CATEGORIES), (n,), generator=g)
    instance = instances[torch.randint(len(instances), (n,), generator=g)]
    return {
        "toy_index": category * NUM_INSTANCES + instance,
        "azimuth_index": torch.randint(len(AZIMUTHS), (n,), generator=g),
        "elevation_index": torch.randint(len(ELEVATIONS), (n,), generator=g),
        "lighting": torch.randint(NUM_LIGHTINGS, (n,), generator=g),
        "background": uniform((n,), 0.05, 0.3, g),
    }


def render_views(
    toys: Toys, label: str, factor: torch.Tensor, g: torch.Generator, held_out: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """Renders views whose `label` ("azimuth" or "elevation") index is `factor` (N,), of train
    toys or (held_out) of the validation / test toys; returns images and labels."""
    views = _views(factor, g, held_out) | {f"{label}_index": factor}
    return render_toys(toys, **views), factor
