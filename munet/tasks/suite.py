"""The `1k/*` suite: embedded tasks in the VTAB-1k regime (no download).

Every task has 800 train and 200 validation examples (VTAB-1k's ``train800`` / ``val200``) and
a test set of at least 1,000 (2,000 for the generated tasks; `1k/digits` has only 797, all
that scikit-learn's 1,797 digits leave). The structured tasks regenerate VTAB's from their
published label definitions; the others are 1k versions of digits and of harder synthetic
scenes. Generators: `munet.tasks.sources.vtab1k` (none is shared with the pretraining recipes
of `munet.pretrain.generators`). docs/tasks.md gives each task's definition.

| task                    | cls | label                                | mirrors (VTAB)         |
|-------------------------|-----|--------------------------------------|------------------------|
| 1k/digits               | 10  | the handwritten digit                | (natural; 1k subset)   |
| 1k/synth-conjunction    | 6   | colour of the triangle among shapes  | (feature binding)      |
| 1k/synth-clutter        | 4   | shape of the large object in clutter | (object in clutter)    |
| 1k/synth-occlusion      | 4   | shape of an object half behind a bar | (occlusion)            |
| 1k/dsprites-location    | 16  | x position, 32 values grouped by 2   | dsprites x_position    |
| 1k/dsprites-orientation | 16  | rotation, 40 values grouped by 2.5   | dsprites orientation   |
| 1k/clevr-count          | 8   | number of objects - 3 (3..10)        | clevr count_all        |
| 1k/clevr-distance       | 6   | bin of the nearest object's depth    | clevr closest_distance |
| 1k/norb-azimuth         | 18  | turntable azimuth, 0..340 deg by 20  | smallnorb azimuth      |
| 1k/norb-elevation       | 9   | camera elevation, 30..70 deg by 5    | smallnorb elevation    |
"""

from __future__ import annotations

#: Every suite task, in the order a system visits them (VTAB's order: natural-like first, then
#: the specialised synthetic scenes, then the structured group).
SUITE_TASKS: tuple[str, ...] = (
    "1k/digits",
    "1k/synth-conjunction",
    "1k/synth-clutter",
    "1k/synth-occlusion",
    "1k/dsprites-location",
    "1k/dsprites-orientation",
    "1k/clevr-count",
    "1k/clevr-distance",
    "1k/norb-azimuth",
    "1k/norb-elevation",
)

#: Three diverse suite tasks for a CI-sized run: feature binding, counting, 3-D pose; all with
#: headroom (finetuning the shipped root: 0.60, 0.31, 0.59 validation; `1k/digits`, at 0.98,
#: would not tell methods apart).
QUICK_SUITE_TASKS: tuple[str, ...] = ("1k/synth-conjunction", "1k/clevr-count", "1k/norb-azimuth")

SUITE_SPLIT_SIZES = {"train": 800, "validation": 200, "test": 2000}
DIGITS_1K_SPLIT_SIZES = {"train": 800, "validation": 200, "test": 797}
