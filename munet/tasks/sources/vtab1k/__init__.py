"""The `1k/*` suite's sources: VTAB-1k-sized embedded tasks (see munet.tasks.suite).

Each generated task is a `SuiteTaskSpec`: its classes, label rule, the VTAB task it mirrors and
a renderer. `load_suite_source(name, data_seed)` builds a task's splits (train 800,
validation 200, test 2000; `1k/digits`: 800, 200, 797), deterministically from the task and
`data_seed` (a few seconds per task on one core; cached per process).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from munet.tasks.sources.base import SPLITS, ArraySource, SplitArrays
from munet.tasks.sources.vtab1k import clevr, dsprites, norb, scenes
from munet.tasks.sources.vtab1k.common import Renderer, render_split
from munet.tasks.suite import DIGITS_1K_SPLIT_SIZES, SUITE_SPLIT_SIZES, SUITE_TASKS

#: Renderer of a split: (split, data_seed) -> Renderer.
RendererFactory = Callable[[str, int], Renderer]


@dataclass(frozen=True)
class SuiteTaskSpec:
    """A generated suite task: what its label means and how its images are drawn."""

    name: str
    class_names: tuple[str, ...]
    label: str  # the label rule, one line
    mirrors: str  # the VTAB task it regenerates, or what it stands for
    num_factors: int  # values of the factor drawn stratified (the label or its latent)
    renderer: RendererFactory

    @property
    def num_classes(self) -> int:
        return len(self.class_names)


def _fixed(render: Renderer) -> RendererFactory:
    return lambda split, data_seed: render


@functools.lru_cache(maxsize=4)
def _toys(data_seed: int) -> norb.Toys:
    # Both norb tasks share the toys of a data_seed.
    return norb.make_toys(torch.Generator().manual_seed(data_seed * 1000 + 999))


def _norb(label: str) -> RendererFactory:
    def factory(split: str, data_seed: int) -> Renderer:
        return functools.partial(
            norb.render_views, _toys(data_seed), label, held_out=split != "train"
        )

    return factory


def _orientation_class_names() -> tuple[str, ...]:
    """Each orientation class's angle range, from VTAB's grouping of the 40 angles."""
    step = 360 / dsprites.NUM_ORIENTATIONS
    groups = dsprites.orientation_label(torch.arange(dsprites.NUM_ORIENTATIONS)).tolist()
    names = []
    for c in range(dsprites.NUM_CLASSES):
        members = [i for i, label in enumerate(groups) if label == c]
        names.append(f"{members[0] * step:g}-{(members[-1] + 1) * step:g}deg")
    return tuple(names)


SUITE_SPECS: dict[str, SuiteTaskSpec] = {
    spec.name: spec
    for spec in (
        SuiteTaskSpec(
            "1k/synth-conjunction",
            tuple(scenes.COLORS),
            "colour of the triangle among 4 objects, one of each shape (others of any colour)",
            "feature binding (shape x colour conjunction)",
            len(scenes.COLORS),
            _fixed(scenes.render_conjunction),
        ),
        SuiteTaskSpec(
            "1k/synth-clutter",
            scenes.SHAPES,
            "shape of the one large object among 10 small ones",
            "object recognition in clutter",
            len(scenes.SHAPES),
            _fixed(scenes.render_clutter),
        ),
        SuiteTaskSpec(
            "1k/synth-occlusion",
            scenes.SHAPES,
            "shape of the object behind a bar that hides about half of it",
            "recognition under occlusion",
            len(scenes.SHAPES),
            _fixed(scenes.render_occlusion),
        ),
        SuiteTaskSpec(
            "1k/dsprites-location",
            tuple(f"x{2 * c:02d}-{2 * c + 1:02d}" for c in range(dsprites.NUM_CLASSES)),
            "x position index (32 values in [0, 1]) // 2, VTAB's 16-class grouping",
            "dsprites/label_x_position, 16 classes",
            dsprites.NUM_POSITIONS,
            _fixed(dsprites.render_location),
        ),
        SuiteTaskSpec(
            "1k/dsprites-orientation",
            _orientation_class_names(),
            "orientation index (40 values around the circle) // 2.5, VTAB's 16-class grouping",
            "dsprites/label_orientation, 16 classes",
            dsprites.NUM_ORIENTATIONS,
            _fixed(dsprites.render_orientation),
        ),
        SuiteTaskSpec(
            "1k/clevr-count",
            tuple(str(k) for k in range(clevr.MIN_OBJECTS, clevr.MAX_OBJECTS + 1)),
            "number of objects - 3 (3..10 spheres, cubes, cylinders on a floor)",
            "clevr/count_all",
            clevr.MAX_OBJECTS - clevr.MIN_OBJECTS + 1,
            _fixed(clevr.render_count),
        ),
        SuiteTaskSpec(
            "1k/clevr-distance",
            clevr.DISTANCE_CLASS_NAMES,
            "bin of the nearest object's camera depth, thresholds "
            + ", ".join(f"{t:.2f}" for t in clevr.DISTANCE_THRESHOLDS),
            "clevr/closest_object_distance",
            clevr.MAX_OBJECTS - clevr.MIN_OBJECTS + 1,
            _fixed(clevr.render_distance),
        ),
        SuiteTaskSpec(
            "1k/norb-azimuth",
            tuple(f"{a}deg" for a in norb.AZIMUTHS),
            "turntable azimuth, 0..340 deg in steps of 20 (validation, test: unseen toys)",
            "smallnorb/label_azimuth",
            len(norb.AZIMUTHS),
            _norb("azimuth"),
        ),
        SuiteTaskSpec(
            "1k/norb-elevation",
            tuple(f"{e}deg" for e in norb.ELEVATIONS),
            "camera elevation, 30..70 deg in steps of 5 (validation, test: unseen toys)",
            "smallnorb/label_elevation",
            len(norb.ELEVATIONS),
            _norb("elevation"),
        ),
    )
}
DIGITS_1K = "1k/digits"
_DIGITS_CLASS_NAMES = tuple(str(d) for d in range(10))


def check_data_seed(data_seed: int) -> int:
    """Returns `data_seed` when it is a non-negative int.

    Raises:
        ValueError: anything else, naming it.
    """
    if isinstance(data_seed, bool) or not isinstance(data_seed, int) or data_seed < 0:
        raise ValueError(f"data_seed {data_seed!r}: expected a non-negative integer")
    return data_seed


def _check_name(name: str) -> str:
    if name not in SUITE_TASKS:
        raise ValueError(f"unknown suite task {name!r}; known: {', '.join(SUITE_TASKS)}")
    return name


def _split_seed(name: str, split: str, data_seed: int) -> int:
    # Distinct, stable streams per (data_seed, task, split); no Python hash() (it is salted).
    return (data_seed * 1000 + 500 + SUITE_TASKS.index(name)) * 10 + SPLITS.index(split)


def generate_suite_split(name: str, split: str, n: int, data_seed: int = 0) -> SplitArrays:
    """`n` examples of the generated task `name`'s `split` (the first `n` of the split's stream
    when `n` is its size), deterministically from `data_seed`.

    Raises:
        ValueError: an unknown (or not generated) task, an unknown split, a bad data_seed.
    """
    if name not in SUITE_SPECS:
        raise ValueError(f"unknown generated suite task {name!r}; known: {', '.join(SUITE_SPECS)}")
    if split not in SPLITS:
        raise ValueError(f"split {split!r}: expected one of {', '.join(SPLITS)}")
    check_data_seed(data_seed)
    spec = SUITE_SPECS[name]
    g = torch.Generator().manual_seed(_split_seed(name, split, data_seed))
    return render_split(n, spec.num_factors, spec.renderer(split, data_seed), g)


def _digits_1k_splits(data_seed: int) -> dict[str, SplitArrays]:
    """scikit-learn's 1,797 digits split 800 / 200 / 797 by a permutation drawn from data_seed
    (RGB copies of the 8x8 grey images, 16 levels scaled to 0..255)."""
    from sklearn.datasets import load_digits

    bunch = load_digits()
    images = np.round(bunch.images * (255.0 / 16.0)).astype(np.uint8)[:, None]
    images = np.repeat(images, 3, axis=1)  # (N, 3, 8, 8)
    order = np.random.default_rng(data_seed).permutation(len(bunch.target))
    splits, start = {}, 0
    for split in SPLITS:
        idx = np.sort(order[start : start + DIGITS_1K_SPLIT_SIZES[split]])
        start += DIGITS_1K_SPLIT_SIZES[split]
        splits[split] = SplitArrays(
            torch.from_numpy(images[idx]), torch.from_numpy(bunch.target[idx].astype(np.int64))
        )
    return splits


def load_suite_source(name: str, data_seed: int = 0) -> ArraySource:
    """Builds (once per process and data_seed) the source of the suite task `name`.

    Raises:
        ValueError: an unknown suite task or a bad data_seed.
    """
    # Checked before the cache: True would otherwise hit the entry of data_seed 1.
    return _load_suite_source(_check_name(name), check_data_seed(data_seed))


@functools.lru_cache(maxsize=32)
def _load_suite_source(name: str, data_seed: int) -> ArraySource:
    if name == DIGITS_1K:
        source = ArraySource(name, _digits_1k_splits(data_seed), 10, _DIGITS_CLASS_NAMES)
        source.split_note = (
            f"scikit-learn's 1,797 digits split 800 / 200 / 797 by a permutation drawn from "
            f"data_seed {data_seed}"
        )
        return source
    spec = SUITE_SPECS[name]
    splits = {s: generate_suite_split(name, s, SUITE_SPLIT_SIZES[s], data_seed) for s in SPLITS}
    source = ArraySource(name, splits, spec.num_classes, class_names=spec.class_names)
    held_out = (
        "; validation and test show toys unseen in train" if name.startswith("1k/norb") else ""
    )
    source.split_note = f"generated from data_seed {data_seed}, each split its own stream{held_out}"
    return source


def clevr_nearest_depths(split: str = "train", data_seed: int = 0) -> torch.Tensor:
    """The nearest object depth of every scene of `1k/clevr-distance`'s `split`, as generated:
    what `clevr.DISTANCE_THRESHOLDS` were chosen from (train, data_seed 0)."""
    check_data_seed(data_seed)
    record: list[torch.Tensor] = []
    g = torch.Generator().manual_seed(_split_seed("1k/clevr-distance", split, data_seed))
    render = functools.partial(clevr.render_distance, record=record)
    render_split(SUITE_SPLIT_SIZES[split], clevr.MAX_OBJECTS - 2, render, g)
    return torch.cat(record)


def describe_suite_task(name: str) -> str:
    """One line for listings: classes, splits, the label rule and what it mirrors."""
    _check_name(name)
    if name == DIGITS_1K:
        sizes, classes = DIGITS_1K_SPLIT_SIZES, 10
        label, mirrors = "the handwritten digit (scikit-learn's 8x8 digits)", "a 1k natural task"
    else:
        spec = SUITE_SPECS[name]
        sizes, classes, label, mirrors = (
            SUITE_SPLIT_SIZES,
            spec.num_classes,
            spec.label,
            spec.mirrors,
        )
    split_text = f"train {sizes['train']}, validation {sizes['validation']}, test {sizes['test']}"
    return f"{classes} classes; {split_text}; label: {label}; mirrors {mirrors}"


__all__ = [
    "DIGITS_1K",
    "SUITE_SPECS",
    "SuiteTaskSpec",
    "check_data_seed",
    "clevr_nearest_depths",
    "describe_suite_task",
    "generate_suite_split",
    "load_suite_source",
]
