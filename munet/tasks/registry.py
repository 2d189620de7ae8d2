"""Task names -> sources, and `get_task`, the one way to build a `Task`.

Names resolve in this order:

1. Registered names: the embedded tasks (`digits`, `synth/*`, the VTAB-1k-sized suite `1k/*` of
   munet.tasks.suite) and any added with `register_task`.
2. Source schemes with a location: `folder:ROOT` (an image-folder tree), `npz:FILE.npz`,
   `hf:NAME_OR_DIR` (Hugging Face `datasets`, offline) and `tfds:NAME` (TensorFlow Datasets).
3. The TensorFlow Datasets names of the µNet seed's tables (`cifar100`, `oxford_iiit_pet/1k`,
   `visual_domain_decathlon/dtd`, ...), read with the seed's split table from a prepared
   `data_dir` (needs the optional `tensorflow-datasets`).

A *named task* is a plain task name (`flowers`) bound to a source spec (`folder:/data/flowers`)
with `get_task(name, data=SPEC)`: the task keeps its name (agent ids, the leaderboard) and reads
the source. `canonical_data_spec` gives the form to store with an agent's state (absolute
paths), `check_task_name_for_data` refuses names that already mean a task.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from munet.hints import did_you_mean
from munet.tasks.sources.base import (
    DEFAULT_SPLIT_RULE,
    OWN_DATA_SPLIT_RULE,
    Source,
    check_split_rule,
)
from munet.tasks.task import Task

# The seed's common agent config (µNet notebook, get_common_config_vit).
DEFAULT_NUM_TRAIN_EXAMPLES_BETWEEN_VALIDATIONS_MAX = 300_000
DEFAULT_NUM_VALIDATION_EXAMPLES_MAX = 10_000
SCHEMES = ("folder", "npz", "hf", "tfds")
# Sources of a user's own data: the seed defines no split for them, so their default split rule
# is munet's own-data rule (TFDS and munet's named tasks keep the seed's).
OWN_DATA_SCHEMES = ("folder", "npz", "hf")
# Fewer validation examples than this make selection a matter of luck (one example is 0.5%
# of 200); an agent selecting on a task below it warns once (`warn_small_validation`).
MIN_VALIDATION_EXAMPLES = 200


@dataclass(frozen=True)
class TaskEntry:
    """A registered task name: how to build its source and what it needs."""

    name: str
    description: str
    load: Callable[[], Source]
    needs: str = ""  # empty when it works out of the box
    group: str = ""  # listings group entries by it ("suite": the 1k/* suite)


_REGISTRY: dict[str, TaskEntry] = {}


def register_task(
    name: str,
    load: Callable[[], Source],
    description: str = "",
    needs: str = "",
    group: str = "",
) -> None:
    """Makes `name` resolve to the source `load()` returns (e.g. a fixed image folder).

    `group` names the listing group (`munet tasks list`); empty: the plain embedded tasks.

    Raises:
        ValueError: `name` is already registered or uses a scheme prefix.
    """
    if name in _REGISTRY:
        raise ValueError(f"task {name!r} is already registered")
    if name.split(":", 1)[0] in SCHEMES and ":" in name:
        raise ValueError(f"task name {name!r} would shadow the scheme {name.split(':')[0]!r}")
    _REGISTRY[name] = TaskEntry(name, description, load, needs, group)


def _register_embedded() -> None:
    from munet.tasks.sources.digits import DIGITS_SPLIT_SIZES, load_digits_source
    from munet.tasks.sources.synth import SYNTH_SPLIT_SIZES, SYNTH_TASKS, load_synth_source

    def sizes(d: dict[str, int]) -> str:
        return f"train {d['train']}, validation {d['validation']}, test {d['test']}"

    register_task(
        "digits",
        load_digits_source,
        f"10 classes; {sizes(DIGITS_SPLIT_SIZES)}; scikit-learn's 8x8 handwritten digits",
    )
    for name, spec in SYNTH_TASKS.items():
        register_task(
            name,
            functools.partial(load_synth_source, name),
            f"{spec.num_classes} classes; {sizes(SYNTH_SPLIT_SIZES)}; generated 32x32 scenes, "
            f"label: {spec.description}",
        )
    _register_suite()


def _register_suite() -> None:
    from munet.tasks.sources.vtab1k import describe_suite_task, load_suite_source
    from munet.tasks.suite import SUITE_TASKS

    for name in SUITE_TASKS:
        register_task(
            name,
            functools.partial(load_suite_source, name),
            describe_suite_task(name),
            group="suite",
        )


_register_embedded()


def registered_tasks() -> dict[str, TaskEntry]:
    """The registered names (embedded tasks first), without the scheme and TFDS names."""
    return dict(_REGISTRY)


def known_task_names() -> list[str]:
    """Every name `get_task` accepts without a scheme: registered ones, then the TFDS table."""
    from munet.tasks.tfds_splits import tfds_task_names

    return [*_REGISTRY, *tfds_task_names()]


def unknown_task_error(name: str) -> ValueError:
    """The error for a name that resolves to nothing, listing close matches and known names."""
    hint = did_you_mean(name, known_task_names())
    return ValueError(
        f"unknown task {name!r}{hint}; known: {', '.join(_REGISTRY)}, the TFDS names of "
        f"`munet tasks` (e.g. cifar100, dtd/1k), or {', '.join(s + ':LOCATION' for s in SCHEMES)}"
        f"; to name your own data, bind the name to it (munet run --task {name} --data "
        "folder:ROOT | npz:FILE | hf:DIR | tfds:NAME)"
    )


def check_task_name(name: str) -> None:
    """Raises :func:`unknown_task_error` for a name that no source resolves, without loading
    any data (a scheme's location is checked when the task loads)."""
    scheme, sep, _ = name.partition(":")
    if not (sep and scheme in SCHEMES) and not is_known_task_name(name):
        raise unknown_task_error(name)


def is_known_task_name(name: str) -> bool:
    """Whether `name` already means a task by itself (registered or in the TFDS table)."""
    from munet.tasks.tfds_splits import is_tfds_task

    return name in _REGISTRY or is_tfds_task(name)


def canonical_data_spec(spec: str) -> str:
    """The form of a data source spec stored with an agent's state.

    `folder:` and `npz:` locations (and `hf:` ones that are local directories) become absolute
    paths, so the state reads the same data from any working directory; `tfds:NAME` and
    registered or TFDS task names are kept as they are.

    Raises:
        ValueError: an empty spec, a scheme without a location, or a name that is no source.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"data source {spec!r}: expected SCHEME:LOCATION or a task name")
    scheme, sep, location = spec.partition(":")
    if sep and scheme in SCHEMES:
        if not location:
            raise ValueError(f"data source {spec!r} has no location after '{scheme}:'")
        local = Path(location).expanduser()
        if scheme in ("folder", "npz") or (scheme == "hf" and local.is_dir()):
            return f"{scheme}:{local.resolve()}"
        return spec
    if sep:
        raise ValueError(
            f"data source {spec!r}: unknown scheme {scheme!r}; expected "
            f"{', '.join(s + ':LOCATION' for s in SCHEMES)}"
        )
    if is_known_task_name(spec):
        return spec
    raise unknown_task_error(spec)


def check_task_name_for_data(name: str) -> str:
    """Checks that `name` may be bound to a data source (`munet run --task NAME --data SPEC`).

    Raises:
        ValueError: the name holds a scheme or already means a task (digits, cifar100, ...).
    """
    if ":" in name:
        raise ValueError(
            f"task name {name!r} holds ':'; name the task (e.g. --task flowers) and give the "
            f"source with --data {name}"
        )
    if is_known_task_name(name):
        raise ValueError(
            f"task name {name!r} is already a task of munet; choose another name for your data"
        )
    return name


def default_split_rule(spec: str) -> str:
    """The split rule a source gets when none is asked for: `own-data` for a user's own data
    (`folder:`, `npz:`, `hf:`), the seed's `default` for everything else (TFDS, munet's tasks).
    """
    scheme, sep, _ = spec.partition(":")
    return OWN_DATA_SPLIT_RULE if sep and scheme in OWN_DATA_SCHEMES else DEFAULT_SPLIT_RULE


def small_validation_warning(task: Task) -> str:
    """The warning for a task whose validation split is under `MIN_VALIDATION_EXAMPLES`
    examples (empty when it is not, and for registered tasks such as munet's embedded ones,
    whose splits are fixed and documented: `digits` has 180)."""
    count = task.source.num_examples("validation")
    if count >= MIN_VALIDATION_EXAMPLES or task.source.name in _REGISTRY:
        return ""
    return (
        f"task {task.name!r}: its validation split has {count} examples (under "
        f"{MIN_VALIDATION_EXAMPLES}); validation accuracy, which selects the models, is then "
        f"noisy (one example is {100 / max(count, 1):.1f}%); give more data or a larger split "
        f"(--val-split {MIN_VALIDATION_EXAMPLES})"
    )


def warn_small_validation(task: Task) -> None:
    """Warns (one line, `warnings.warn`) when `small_validation_warning` has something to say;
    agents call it before they select on the task's validation split."""
    warning = small_validation_warning(task)
    if warning:
        warnings.warn(warning, stacklevel=3)


_SOURCE_CACHE: dict[tuple[str, str | None, bool], Source] = {}
_TASK_CACHE: dict[tuple, Task] = {}


def load_source(
    name: str, *, data_dir: str | Path | None = None, skip_bad_files: bool = False
) -> Source:
    """Resolves a task name to its `Source` (see the module docstring for the order).

    The source's data is checked before it is returned (every file of a `folder:` source
    decodes, pixel values are finite, labels fit the class count), so bad data is refused
    before any work.

    Args:
        name: a task name.
        data_dir: the TensorFlow Datasets data_dir (or Hugging Face cache dir) for those sources.
        skip_bad_files: a `folder:` source leaves out files that cannot be read (with a
            warning) instead of refusing the folder.

    Raises:
        ValueError: an unknown name (with close matches) or an unknown scheme.
        ImportError: a source whose optional package is missing, saying what to install.
    """
    if name in _REGISTRY:
        return _REGISTRY[name].load()
    key = (name, None if data_dir is None else str(data_dir), skip_bad_files)
    if key not in _SOURCE_CACHE:
        # Cached: a source keeps what it decoded, and scanning a tree or reading arrays once
        # per process is enough.
        _SOURCE_CACHE[key] = _load_uncached(name, data_dir, skip_bad_files)
    return _SOURCE_CACHE[key]


def _load_uncached(name: str, data_dir: str | Path | None, skip_bad_files: bool) -> Source:
    scheme, sep, location = name.partition(":")
    if sep and scheme in SCHEMES:
        if not location:
            raise ValueError(f"task {name!r} has no location after '{scheme}:'")
        if scheme == "folder":
            from munet.tasks.sources.imagefolder import load_image_folder

            return load_image_folder(location, skip_bad_files=skip_bad_files)
        if scheme == "npz":
            from munet.tasks.sources.npz import load_npz

            return load_npz(location)
        if scheme == "hf":
            from munet.tasks.sources.hf import load_hf

            return load_hf(location, cache_dir=data_dir)
        from munet.tasks.sources.tfds import load_tfds

        return load_tfds(location, data_dir=data_dir)
    from munet.tasks.tfds_splits import is_tfds_task

    if is_tfds_task(name):
        from munet.tasks.sources.tfds import load_tfds

        return load_tfds(name, data_dir=data_dir)
    raise unknown_task_error(name)


def get_task(
    name: str,
    *,
    batch_size: int = 512,
    num_train_examples_between_validations_max: int = (
        DEFAULT_NUM_TRAIN_EXAMPLES_BETWEEN_VALIDATIONS_MAX
    ),
    num_validation_examples_max: int = DEFAULT_NUM_VALIDATION_EXAMPLES_MAX,
    seed: int = 0,
    data_dir: str | Path | None = None,
    cache: bool = True,
    data: str | None = None,
    split_rule: str | None = None,
    skip_bad_files: bool = False,
) -> Task:
    """Builds the task `name` with the seed's sizing.

    Args:
        name: a registered name (`digits`, `synth/shape`, ...), `folder:ROOT`, `npz:FILE`,
            `hf:NAME_OR_DIR`, `tfds:NAME` or a TFDS name from the seed's tables; with `data`,
            any valid task name (`flowers`).
        batch_size: the agent's training batch size (512 for the seed's ViT-Ti/3 agents).
        num_train_examples_between_validations_max: caps training between validations.
        num_validation_examples_max: caps the validation set.
        seed: randomness of the training streams (order and augmentation).
        data_dir: where TFDS / Hugging Face data live, for those sources.
        cache: return the same `Task` object for the same arguments within a process (the
            seed's task cache): its cached validation batches and its sequence of training
            streams carry over. False builds a fresh one (its data still come from the cache).
        data: the source spec a named task reads (`folder:ROOT`, `npz:FILE`, `hf:DIR`,
            `tfds:NAME` or another task's name); None: `name` itself is the source.
        split_rule: how the splits are made: None, the source's default
            (`default_split_rule`: `"own-data"` for `folder:`, `npz:`, `hf:` data, else
            `"default"`); `"default"`, the seed's rule for the splits the data lacks;
            `"own-data"`, stratified max(10%, 200) splits (munet.tasks.splits); or
            `"validation=X,test=Y"` (either part may be left out), a stratified split of the
            train pool with X, Y a fraction in (0, 1) or a count (see munet.tasks.splits;
            `split_rule(validation=0.1)` writes one).
        skip_bad_files: a `folder:` source leaves out image files that cannot be read (empty,
            corrupt), with one warning, instead of refusing the folder.

    Returns:
        The `Task`.

    Raises:
        ValueError: an unknown name, an empty split, a label out of range, fewer than 2
            classes, a non-positive sizing value, an unknown split rule, split sizes the
            data cannot meet (larger than the data, a class too small to stratify), or bad data
            (files that cannot be read, NaN pixels: see munet.tasks.sources).
    """
    from munet.tasks.splits import apply_split_rule, canonical_split_rule

    if not split_rule:
        split_rule = default_split_rule(name if data is None else data)
    check_split_rule(split_rule)
    split_rule = canonical_split_rule(split_rule)
    if data is not None and data != name:
        check_task_name_for_data(name)
    key = (
        name,
        data,
        batch_size,
        num_train_examples_between_validations_max,
        num_validation_examples_max,
        seed,
        None if data_dir is None else str(data_dir),
        split_rule,
        skip_bad_files,
    )
    if cache and key in _TASK_CACHE:
        return _TASK_CACHE[key]
    source = load_source(
        name if data is None else data, data_dir=data_dir, skip_bad_files=skip_bad_files
    )
    source = apply_split_rule(source, split_rule)
    task = Task(
        name,
        source,
        batch_size=batch_size,
        num_train_examples_between_validations_max=num_train_examples_between_validations_max,
        num_validation_examples_max=num_validation_examples_max,
        seed=seed,
    )
    if cache:
        _TASK_CACHE[key] = task
    return task
