"""munet.tasks: tasks (data splits, class count, batch sizing) and their data pipelines.

Public API (stable; the agents build on it):

- `get_task(name, *, batch_size=512, num_train_examples_between_validations_max=300_000,
  num_validation_examples_max=10_000, seed=0, data_dir=None, cache=True) -> Task`.
  Names: `digits`, `synth/shape|color|count|position|size` (embedded, no download),
  `folder:ROOT`, `npz:FILE.npz`, `hf:NAME_OR_DIR`, `tfds:NAME`, and the TFDS names of the µNet
  seed's tables (`cifar100`, `dtd/1k`, ...). Unknown names raise ValueError with close matches.
  The same arguments return the same cached Task within a process (the seed's task cache).
- `Task`: `name`, `num_classes`, `class_names`, `num_train_examples`, `num_test_examples`,
  `train_batch_size`, `num_train_batches_between_validations`, `validation_batch_size`,
  `num_validation_batches`, `num_validation_examples`, `sizing` (a `TaskSizing`), `source`,
  and the iterators (`hparams` is the path's hparams dict):

  - `train_batches(hparams, seed=None) -> Iterator[Batch]`: endless, reshuffled every epoch,
    augmented by the `ds_*` hparams; `seed=None` takes the task's next stream (replayable).
  - `validation_batches(hparams) -> list[Batch]`: one validation round (the first
    `num_validation_examples` of the validation split), cached per image size(s).
  - `test_batches(hparams) -> Iterator[Batch]`: one exact pass over the test split in batches
    of `validation_batch_size`; the last batch may be short. Weigh accuracies by `len(batch)`.
  - `get_ds(mode, hparams)`: the seed's entry point ("train" and "validation" endless).
- Named tasks: `get_task("flowers", data="folder:/data/flowers")` keeps the name and reads the
  source; `canonical_data_spec(spec)` (absolute paths, the form stored with agent states),
  `check_task_name_for_data(name)`, `is_known_task_name(name)`. Splits follow a split rule
  (`get_task(..., split_rule=...)`): `DEFAULT_SPLIT_RULE` ("default", the seed's 5% slices of
  train for the splits the data lacks), or a stratified split of the train pool,
  `split_rule(validation=0.1, test=500)` -> "validation=0.1,test=500" (munet.tasks.splits).
- `Batch(images, labels)`: `images` is float32 (B, 3, S, S) in [-1, 1] when
  `hparams["ds_image_size"]` is an int, or a dict {S: (B, 3, S, S)} with int keys, one per
  size, when it is a list (multipath models); `labels` is int64 (B,). `batch.to(device)`,
  `batch.pin_memory()`, `len(batch)`.
- Dataset hparams: `ds_image_size` (required) and the seed's augmentation keys with their
  neutral defaults in `DS_HPARAMS_DEFAULTS`: ds_area_range_min, ds_aspect_ratio_range_min,
  ds_flip_left_right, ds_brightness_delta, ds_contrast_delta, ds_saturation_delta,
  ds_hue_delta, ds_quality_delta. Other keys are ignored. Semantics: munet/tasks/augment.py.
- `prefetch(batches, depth=2)`: prepares batches in a background thread.
- `compute_sizing(...) -> TaskSizing`: the seed's sizing rules alone.
- Extending: `register_task(name, load, description)` maps a name to a `Source` factory;
  `Source` (labels(split), images(split, indices) -> uint8 (N, C, H, W)), `ArraySource`,
  `SplitArrays`; `load_source(name)`; `known_task_names()` / `list_task_names()`;
  `registered_tasks()`; `preprocess(images_uint8, AugmentConfig.from_hparams(h), train=...)`.

Embedded tasks are documented in munet/tasks/sources/digits.py and synth.py; the TFDS split
table in munet/tasks/tfds_splits.py and vtab.py; `munet tasks` lists what is available.
"""

from munet.tasks.augment import DS_HPARAMS_DEFAULTS, AugmentConfig, preprocess
from munet.tasks.batch import Batch, Images
from munet.tasks.prefetch import prefetch
from munet.tasks.registry import (
    canonical_data_spec,
    check_task_name_for_data,
    get_task,
    is_known_task_name,
    known_task_names,
    load_source,
    register_task,
    registered_tasks,
)
from munet.tasks.sources.base import (
    DEFAULT_SPLIT_RULE,
    SPLIT_RULES,
    ArraySource,
    Source,
    SplitArrays,
    check_split_rule,
)
from munet.tasks.splits import split_rule
from munet.tasks.task import Task, TaskSizing, compute_sizing

list_task_names = known_task_names

__all__ = [
    "DEFAULT_SPLIT_RULE",
    "DS_HPARAMS_DEFAULTS",
    "SPLIT_RULES",
    "ArraySource",
    "AugmentConfig",
    "Batch",
    "Images",
    "Source",
    "SplitArrays",
    "Task",
    "TaskSizing",
    "canonical_data_spec",
    "check_split_rule",
    "check_task_name_for_data",
    "compute_sizing",
    "get_task",
    "is_known_task_name",
    "known_task_names",
    "list_task_names",
    "load_source",
    "prefetch",
    "preprocess",
    "register_task",
    "registered_tasks",
    "split_rule",
]
