"""`Task`: a source of examples plus the µNet seed's batch sizing and the three iterators."""

from __future__ import annotations

import contextlib
import itertools
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from munet.tasks.augment import AugmentConfig, preprocess
from munet.tasks.batch import Batch
from munet.tasks.sources.base import MAX_NUM_CLASSES, SPLITS, Source

# Intra-op threads for preprocessing; None follows the caller's `torch.set_num_threads`.
# On an idle 2-core machine (benchmarks/data_throughput.py, batch 512, 32 px; docs/tasks.md,
# Throughput) the pipeline runs 1.8x faster on 2 threads than on 1, so pinning it to one thread
# while training uses two starves it (ratio 2.97 instead of 5.37). Under heavy contention its
# dozens of small kernels lose to OpenMP oversubscription instead: set the process to 1 thread
# there (the VitCpu preset does), or set this to 1 to pin preprocessing alone. Overlap
# preprocessing with training through `munet.tasks.prefetch`.
PREPROCESS_THREADS: int | None = None


@contextlib.contextmanager
def _intra_op_threads(count: int | None) -> Iterator[None]:
    previous = torch.get_num_threads()
    if count is None or previous == count:
        yield
        return
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


@dataclass(frozen=True)
class TaskSizing:
    """Batch sizing of a task, computed by the seed's rules (see `compute_sizing`)."""

    num_train_examples: int
    num_validation_examples_total: int
    num_test_examples: int
    train_batch_size: int
    num_train_batches_between_validations: int
    validation_batch_size: int
    num_validation_batches: int

    @property
    def num_validation_examples(self) -> int:
        """Validation examples actually used: num_validation_batches * validation_batch_size."""
        return self.num_validation_batches * self.validation_batch_size


def compute_sizing(
    num_train_examples: int,
    num_validation_examples_total: int,
    num_test_examples: int,
    *,
    batch_size: int,
    num_train_examples_between_validations_max: int,
    num_validation_examples_max: int,
) -> TaskSizing:
    """The seed's sizing rules.

    Training batches between validations: ceil(min(train examples, the max) / batch_size).
    Validation: with at least `num_validation_examples_max` examples, floor(max / batch_size)
    batches of `batch_size`; with fewer, ceil(total / batch_size) batches whose size is lowered
    to floor(total / batches) so that the batches cover the small set (up to a few examples).
    """
    if batch_size <= 0:
        raise ValueError(f"batch_size={batch_size}; expected a positive integer")
    if num_train_examples_between_validations_max <= 0:
        raise ValueError(
            "num_train_examples_between_validations_max="
            f"{num_train_examples_between_validations_max}; expected a positive integer"
        )
    if num_validation_examples_max <= 0:
        raise ValueError(
            f"num_validation_examples_max={num_validation_examples_max}; "
            "expected a positive integer"
        )
    train_batches = math.ceil(
        min(num_train_examples, num_train_examples_between_validations_max) / batch_size
    )
    if num_validation_examples_max <= num_validation_examples_total:
        validation_batch_size = batch_size
        validation_batches = num_validation_examples_max // validation_batch_size
        if validation_batches == 0:
            # The seed would validate on nothing; use one batch of the capped size instead.
            validation_batches, validation_batch_size = 1, num_validation_examples_max
    else:
        validation_batches = math.ceil(num_validation_examples_total / batch_size)
        validation_batch_size = num_validation_examples_total // validation_batches
    assert validation_batches * validation_batch_size <= num_validation_examples_total
    return TaskSizing(
        num_train_examples=num_train_examples,
        num_validation_examples_total=num_validation_examples_total,
        num_test_examples=num_test_examples,
        train_batch_size=batch_size,
        num_train_batches_between_validations=train_batches,
        validation_batch_size=validation_batch_size,
        num_validation_batches=validation_batches,
    )


class Task:
    """A classification task: data splits, class count and batch sizing.

    Build one with `munet.tasks.get_task(name, ...)`. Iterators:

    - `train_batches(hparams)`: endless stream of augmented `Batch`es of `train_batch_size`,
      reshuffled every epoch (batches run across epoch boundaries).
    - `validation_batches(hparams)`: the first `num_validation_examples` of the validation split,
      as `num_validation_batches` batches of `validation_batch_size`; preprocessed once per
      `ds_image_size` and cached, so every validation round sees the same tensors.
    - `test_batches(hparams)`: one exact pass over the test split in batches of
      `validation_batch_size`; the last batch is short when the size does not divide.

    `hparams` is the path's hparams dict: `ds_image_size` (int or list of ints) and the
    optional `ds_*` augmentation keys (ignored outside training).

    Attributes:
        name, num_classes, class_names, source, seed, and every `TaskSizing` field.
    """

    def __init__(
        self,
        name: str,
        source: Source,
        *,
        batch_size: int,
        num_train_examples_between_validations_max: int,
        num_validation_examples_max: int,
        seed: int = 0,
    ) -> None:
        self.name = name
        self.source = source
        self.seed = int(seed)
        self.num_classes = int(source.num_classes)
        self.class_names = source.class_names
        if self.num_classes < 2:
            raise ValueError(f"task {name!r} has {self.num_classes} class(es); need at least 2")
        if self.num_classes > MAX_NUM_CLASSES:
            raise ValueError(
                f"task {name!r} has {self.num_classes} classes; at most {MAX_NUM_CLASSES} "
                "(a label is an index into the classifier head)"
            )
        for split in SPLITS:
            labels = source.labels(split)
            if labels.numel() == 0:
                raise ValueError(f"task {name!r}: split {split!r} is empty")
            lo, hi = int(labels.min()), int(labels.max())
            if lo < 0 or hi >= self.num_classes:
                bad = lo if lo < 0 else hi
                raise ValueError(
                    f"task {name!r}: split {split!r} has label {bad}; expected labels in "
                    f"[0, {self.num_classes - 1}]"
                )
        self.sizing = compute_sizing(
            source.num_examples("train"),
            source.num_examples("validation"),
            source.num_examples("test"),
            batch_size=batch_size,
            num_train_examples_between_validations_max=num_train_examples_between_validations_max,
            num_validation_examples_max=num_validation_examples_max,
        )
        self._validation_cache: dict[tuple[int, ...], list[Batch]] = {}
        # Successive training streams of one task differ, yet the sequence is replayable.
        self._train_streams = itertools.count()

    # Sizing, exposed under the seed's names.
    @property
    def num_train_examples(self) -> int:
        return self.sizing.num_train_examples

    @property
    def num_test_examples(self) -> int:
        return self.sizing.num_test_examples

    @property
    def train_batch_size(self) -> int:
        return self.sizing.train_batch_size

    @property
    def num_train_batches_between_validations(self) -> int:
        return self.sizing.num_train_batches_between_validations

    @property
    def validation_batch_size(self) -> int:
        return self.sizing.validation_batch_size

    @property
    def num_validation_batches(self) -> int:
        return self.sizing.num_validation_batches

    @property
    def num_validation_examples(self) -> int:
        return self.sizing.num_validation_examples

    def __repr__(self) -> str:
        return (
            f"Task({self.name!r}, classes={self.num_classes}, train={self.num_train_examples}, "
            f"validation={self.num_validation_examples}/{self.sizing.num_validation_examples_total}"
            f", test={self.num_test_examples}, batch={self.train_batch_size})"
        )

    def train_batches(self, hparams: Mapping[str, Any], seed: int | None = None) -> Iterator[Batch]:
        """Endless shuffled, augmented training batches.

        Args:
            hparams: `ds_image_size` and the `ds_*` augmentation hparams.
            seed: the stream's randomness (order and augmentations). None draws the next stream
                of this task: seeds `task.seed`, then successive ones, so a run is replayable.
        """
        cfg = AugmentConfig.from_hparams(hparams)
        if seed is None:
            seed = self.seed * 1_000_003 + next(self._train_streams)
        generator = torch.Generator().manual_seed(int(seed))
        labels = self.source.labels("train")
        n = labels.shape[0]
        batch_size = self.train_batch_size
        order = torch.randperm(n, generator=generator)
        position = 0
        while True:
            pieces = []
            needed = batch_size
            while needed > 0:
                if position == n:
                    order = torch.randperm(n, generator=generator)
                    position = 0
                take = min(needed, n - position)
                pieces.append(order[position : position + take])
                position += take
                needed -= take
            indices = pieces[0] if len(pieces) == 1 else torch.cat(pieces)
            images = self.source.images("train", indices)
            with _intra_op_threads(PREPROCESS_THREADS):
                processed = preprocess(images, cfg, train=True, generator=generator)
            yield Batch(images=processed, labels=labels[indices])

    def validation_batches(self, hparams: Mapping[str, Any]) -> list[Batch]:
        """The cached validation batches (one full validation round)."""
        cfg = AugmentConfig.from_hparams(hparams)
        key = (*cfg.image_sizes, -1 if cfg.multi_size else 0)
        if key not in self._validation_cache:
            self._validation_cache[key] = list(
                self._eval_batches("validation", cfg, self.num_validation_examples)
            )
        return self._validation_cache[key]

    def full_validation_batches(self, hparams: Mapping[str, Any]) -> Iterator[Batch]:
        """One exact pass over the whole validation split, not capped by
        `num_validation_examples_max` (the last batch may be short; not cached)."""
        cfg = AugmentConfig.from_hparams(hparams)
        return self._eval_batches("validation", cfg, self.source.num_examples("validation"))

    def test_batches(self, hparams: Mapping[str, Any]) -> Iterator[Batch]:
        """One exact pass over the test split (the last batch may be short)."""
        cfg = AugmentConfig.from_hparams(hparams)
        return self._eval_batches("test", cfg, self.num_test_examples)

    def _eval_batches(self, split: str, cfg: AugmentConfig, count: int) -> Iterator[Batch]:
        labels = self.source.labels(split)
        step = self.validation_batch_size
        for start in range(0, count, step):
            indices = torch.arange(start, min(start + step, count))
            images = self.source.images(split, indices)
            with _intra_op_threads(PREPROCESS_THREADS):
                processed = preprocess(images, cfg, train=False)
            yield Batch(images=processed, labels=labels[indices])

    def get_ds(self, mode: str, hparams: Mapping[str, Any]) -> Iterator[Batch]:
        """The seed's entry point: "train" and "validation" are endless, "test" is one pass."""
        if mode == "train":
            return self.train_batches(hparams)
        if mode == "validation":
            batches = self.validation_batches(hparams)
            return itertools.cycle(batches)
        if mode == "test":
            return self.test_batches(hparams)
        raise ValueError(f"unknown mode {mode!r}; expected 'train', 'validation' or 'test'")
