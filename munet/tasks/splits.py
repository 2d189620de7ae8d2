"""User-chosen validation and test splits: `munet run --val-split X --test-split Y`.

A split rule is stored with the agent's state as a string (`AgentConfig.data_split`):

- `default` (or empty): the µNet seed's rule, unchanged: splits the data has are used as they
  are, a missing test split is the first 5% of train, a missing validation split the next 5%,
  after a fixed shuffle (munet.tasks.sources.base.carve_default_splits).
- `own-data`: munet's default for a user's own data (`folder:`, `npz:`, `hf:` sources, where
  the seed defines no split): every split the data lacks (test, validation) is a stratified
  `own_data_split_size(pool)` = max(10%, 200) examples of the train pool, at most 20% each, so
  that validation is large enough to select on (measured: benchmarks/own_data_split_rule.py,
  docs/tasks.md). Data too small to stratify falls back to the seed's rule, with a warning.
- `validation=X[,test=Y]` (either part may be left out): a stratified split of the train pool.
  `X` and `Y` are, as in Hugging Face's `train_test_split`, a fraction in (0, 1) of the pool
  (ceil(fraction * pool) examples) or an integer count of examples.

The train pool is the source's train split plus the splits the default rule carved from it;
the splits the data brings itself (a `validation/` folder, an `x_test` array, a TFDS split) are
not in the pool. A split the rule names is carved from the pool, and the data's own split of
that name is then left unused (asking for it is asking otherwise); a split the rule does not
name is the data's own when it has one, else a stratified 5% of the pool (the seed's share).

Stratified: every class gets its share of each carved split, rounded to match the requested
size exactly (largest remainders), with at least one example per class in every carved split
and in train. Deterministic: a fixed shuffle (seed 0) inside each class. Carved splits come in
a fixed shuffled order, so a capped validation set (`num_validation_examples_max`) is still a
sample of every class.
"""

from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import dataclass

import numpy as np
import torch

from munet.tasks.sources.base import DEFAULT_SPLIT_RULE, OWN_DATA_SPLIT_RULE, SPLITS, Source

SplitSize = float | int
# The seed's share of a split the data lacks (get_default_splits' 5% slices).
DEFAULT_SHARE = 0.05
# Carved splits in this order (the seed carves test first, then validation).
CARVED_ORDER = ("test", "validation")
_SPLIT_SEED = 0
# The own-data rule: each missing split is max(OWN_DATA_SHARE of the pool, OWN_DATA_MIN_EXAMPLES),
# never more than OWN_DATA_MAX_SHARE of it (train keeps at least 60% with both splits carved).
OWN_DATA_SHARE = 0.10
OWN_DATA_MIN_EXAMPLES = 200
OWN_DATA_MAX_SHARE = 0.20


@dataclass(frozen=True)
class SplitSpec:
    """A stratified split rule: the size of each carved split (None: not asked for)."""

    validation: SplitSize | None = None
    test: SplitSize | None = None

    def __post_init__(self) -> None:
        for split in CARVED_ORDER:
            size = check_split_size(getattr(self, split), f"{split} split")
            object.__setattr__(self, split, size)

    def rule(self) -> str:
        """The stored form: `validation=0.1,test=200`."""
        parts = [
            f"{split}={_format_size(getattr(self, split))}"
            for split in ("validation", "test")
            if getattr(self, split) is not None
        ]
        return ",".join(parts) or DEFAULT_SPLIT_RULE


def check_split_size(size: SplitSize | None, what: str) -> SplitSize | None:
    """Returns `size` when it is None, a fraction in (0, 1) or an integer count >= 1.

    Raises:
        ValueError: naming `what`, the value and what is expected.
    """
    if size is None:
        return None
    if isinstance(size, bool) or not isinstance(size, numbers.Real):
        raise ValueError(
            f"{what} {size!r}: expected a fraction in (0, 1) or an integer count of examples"
        )
    # NumPy scalars too: counts become int, fractions float.
    size = int(size) if isinstance(size, numbers.Integral) else float(size)
    if isinstance(size, float):
        if 0.0 < size < 1.0:
            return size
        hint = f"; for a count write {int(size)}" if size.is_integer() and size >= 1 else ""
        raise ValueError(f"{what} {size}: a fraction must be in (0, 1), exclusive{hint}")
    if size < 1:
        raise ValueError(
            f"{what} {size}: a count of examples must be >= 1 (or give a fraction in (0, 1))"
        )
    return size


def parse_split_size(text: str, what: str = "split") -> SplitSize:
    """`"0.1"` -> 0.1 (a fraction), `"200"` -> 200 (a count).

    Raises:
        ValueError: not a number, a fraction outside (0, 1) or a count below 1.
    """
    text = str(text).strip()
    try:
        size: SplitSize = int(text)
    except ValueError:
        try:
            size = float(text)
        except ValueError:
            raise ValueError(
                f"{what} {text!r}: expected a fraction in (0, 1) (e.g. 0.1) or an integer "
                "count of examples (e.g. 200)"
            ) from None
        if not math.isfinite(size):
            raise ValueError(f"{what} {text!r}: expected a finite number") from None
    check_split_size(size, what)
    return size


def _format_size(size: SplitSize) -> str:
    return repr(float(size)) if isinstance(size, float) else str(int(size))


def split_rule(validation: SplitSize | None = None, test: SplitSize | None = None) -> str:
    """The split rule string for `AgentConfig.data_split` (`"default"` when neither is given).

    Example: `split_rule(validation=0.1, test=500)` -> `"validation=0.1,test=500"`.

    Raises:
        ValueError: a fraction outside (0, 1) or a count below 1.
    """
    return SplitSpec(validation=validation, test=test).rule()


def parse_split_rule(rule: str | None) -> SplitSpec | None:
    """The `SplitSpec` of a stored rule; None for a named rule (`default` or empty, `own-data`).

    Raises:
        ValueError: an unknown rule or a bad size, saying what is expected.
    """
    if rule is None or rule.strip() in ("", DEFAULT_SPLIT_RULE, OWN_DATA_SPLIT_RULE):
        return None
    sizes: dict[str, SplitSize] = {}
    for part in rule.split(","):
        key, sep, value = part.partition("=")
        key = key.strip()
        if key in ("val", "valid"):
            key = "validation"
        if not sep or key not in CARVED_ORDER or key in sizes:
            raise ValueError(
                f"unknown split rule {rule!r}; known: {DEFAULT_SPLIT_RULE}, "
                f"{OWN_DATA_SPLIT_RULE}, or "
                "validation=X,test=Y with X, Y a fraction in (0, 1) or a count (either may be "
                "left out)"
            )
        sizes[key] = parse_split_size(value, f"{key} split")
    return SplitSpec(**sizes)


def canonical_split_rule(rule: str | None) -> str:
    """The stored form of a rule (`default` for the default, `own-data`; sizes normalised)."""
    if rule is not None and rule.strip() == OWN_DATA_SPLIT_RULE:
        return OWN_DATA_SPLIT_RULE
    spec = parse_split_rule(rule)
    return DEFAULT_SPLIT_RULE if spec is None else spec.rule()


def _count(size: SplitSize, pool: int, what: str) -> int:
    if isinstance(size, float):
        return math.ceil(size * pool)
    if size > pool:
        raise ValueError(
            f"{what} {size}: more than the {pool} examples of the train pool; expected a count "
            f"below {pool} or a fraction in (0, 1)"
        )
    return int(size)


def _allocate(
    class_counts: np.ndarray, available: np.ndarray, total: int, pool: int
) -> np.ndarray:
    """Examples per class for a split of `total`: proportional to `class_counts` (the pool's),
    at least 1 and at most `available` per class, summing to `total` exactly (largest
    remainders; ties to the lower class index)."""
    quota = class_counts * (total / pool)
    taken = np.clip(np.floor(quota).astype(np.int64), 1, available)
    while taken.sum() > total:  # the minimum of 1 overshot: take back from the most over quota
        over = np.where(taken > 1, taken - quota, -np.inf)
        taken[int(np.argmax(over))] -= 1
    while taken.sum() < total:
        under = np.where(taken < available, quota - taken, -np.inf)
        taken[int(np.argmax(under))] += 1
    return taken


def stratified_split(
    labels: np.ndarray,
    sizes: dict[str, SplitSize],
    class_names: tuple[str, ...] | None = None,
    seed: int = _SPLIT_SEED,
) -> dict[str, np.ndarray]:
    """Stratified split of a pool of `labels` into the carved splits of `sizes` and train.

    Args:
        labels: (N,) int labels of the pool.
        sizes: split name ("test", "validation") -> fraction in (0, 1) or count.
        class_names: for error messages.
        seed: the shuffle inside each class.

    Returns:
        {"train": indices (sorted), and each split of `sizes`: indices in a shuffled order}.

    Raises:
        ValueError: a count larger than the pool, splits that leave too little for train, a
            split smaller than the number of classes, or a class with too few examples to
            appear in every split (each names the value and what is expected).
    """
    labels = np.asarray(labels, dtype=np.int64)
    pool = int(labels.shape[0])
    classes, class_counts = np.unique(labels, return_counts=True)
    num_classes = len(classes)
    order = [s for s in CARVED_ORDER if s in sizes]
    counts = {s: _count(sizes[s], pool, f"{s} split") for s in order}
    needed = len(order) + 1  # one example per class in every carved split and in train
    smallest = int(np.argmin(class_counts))
    if class_counts[smallest] < needed:
        label = int(classes[smallest])
        name = f" ({class_names[label]!r})" if class_names and label < len(class_names) else ""
        raise ValueError(
            f"class {label}{name} has {int(class_counts[smallest])} example(s) in the train "
            f"pool; a stratified split into train and {' and '.join(order)} needs at least "
            f"{needed} per class"
        )
    for split in order:
        if counts[split] < num_classes:
            raise ValueError(
                f"{split} split {sizes[split]} gives {counts[split]} example(s) for "
                f"{num_classes} classes; a stratified split needs at least one per class "
                f"(a count >= {num_classes} or a larger fraction)"
            )
    if pool - sum(counts.values()) < num_classes:
        asked = ", ".join(f"{s} {sizes[s]} ({counts[s]} examples)" for s in order)
        raise ValueError(
            f"{asked} leave {pool - sum(counts.values())} of the {pool} train pool examples "
            f"for training; expected at least one per class ({num_classes})"
        )
    rng = np.random.default_rng(seed)
    members = [rng.permutation(np.flatnonzero(labels == c)) for c in classes]
    left = class_counts.copy()
    taken_so_far = np.zeros_like(class_counts)
    out: dict[str, np.ndarray] = {}
    for position, split in enumerate(order):
        # Keep one per class for each later split and for train.
        reserve = len(order) - position
        per_class = _allocate(class_counts, left - reserve, counts[split], pool)
        chosen = [m[t : t + k] for m, t, k in zip(members, taken_so_far, per_class, strict=True)]
        out[split] = rng.permutation(np.concatenate(chosen))
        taken_so_far += per_class
        left -= per_class
    out["train"] = np.sort(
        np.concatenate([m[t:] for m, t in zip(members, taken_so_far, strict=True)])
    )
    return out


class ResplitSource(Source):
    """A source whose splits follow a `SplitSpec` (see the module docstring): its splits are
    index lists into the base source's splits, so images are read (and decoded) by the base.

    Raises:
        ValueError: from `stratified_split`, with the source named.
    """

    def __init__(self, base: Source, spec: SplitSpec) -> None:
        self.base = base
        self.spec = spec
        self.name = base.name
        self.num_classes = base.num_classes
        self.class_names = base.class_names
        pool_splits = ["train", *(s for s in CARVED_ORDER if s in base.carved_splits)]
        # (base split, base index) of every pool example, in a fixed order.
        pool_where = np.concatenate(
            [np.full(base.num_examples(s), SPLITS.index(s)) for s in pool_splits]
        )
        pool_index = np.concatenate([np.arange(base.num_examples(s)) for s in pool_splits])
        pool_labels = torch.cat([base.labels(s) for s in pool_splits]).numpy()
        sizes: dict[str, SplitSize] = {}
        kept: list[str] = []
        for split in CARVED_ORDER:
            size = getattr(spec, split)
            if size is not None:
                sizes[split] = size
            elif split in base.carved_splits:
                sizes[split] = DEFAULT_SHARE
            else:
                kept.append(split)
        try:
            carved = stratified_split(pool_labels, sizes, base.class_names)
        except ValueError as error:
            raise ValueError(f"task data {base.name!r}: {error}") from None
        self._where: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._labels: dict[str, torch.Tensor] = {}
        for split, idx in carved.items():
            self._where[split] = (pool_where[idx], pool_index[idx])
            self._labels[split] = torch.from_numpy(pool_labels[idx].astype(np.int64))
        for split in kept:
            count = base.num_examples(split)
            self._where[split] = (np.full(count, SPLITS.index(split)), np.arange(count))
            self._labels[split] = base.labels(split)
        self.carved_splits = tuple(s for s in CARVED_ORDER if s in sizes)
        asked = ", ".join(f"{s} {_format_size(sizes[s])}" for s in self.carved_splits)
        own = [s for s in CARVED_ORDER if s in sizes and s not in base.carved_splits]
        note = f"stratified split of the train pool: {asked}"
        if kept:
            note += f"; {' and '.join(kept)} as the data gives it"
        if own and any(base.num_examples(s) for s in own):
            note += f"; the data's own {' and '.join(own)} split left unused"
        self.split_note = note

    def labels(self, split: str) -> torch.Tensor:
        return self._labels[split]

    def images(self, split: str, indices: torch.Tensor) -> torch.Tensor:
        where, index = self._where[split]
        wanted = indices.numpy() if isinstance(indices, torch.Tensor) else np.asarray(indices)
        base_splits, base_index = where[wanted], index[wanted]
        parts = np.unique(base_splits)
        if len(parts) == 1:
            return self.base.images(SPLITS[int(parts[0])], torch.from_numpy(base_index))
        out: torch.Tensor | None = None
        for part in parts:
            rows = np.flatnonzero(base_splits == part)
            images = self.base.images(SPLITS[int(part)], torch.from_numpy(base_index[rows]))
            if out is None:
                out = torch.empty((len(wanted), *images.shape[1:]), dtype=images.dtype)
            out[torch.from_numpy(rows)] = images
        assert out is not None
        return out


def own_data_split_size(pool: int) -> int:
    """Examples in each split the own-data rule carves from a train pool of `pool` examples:
    max(ceil(10% of pool), 200), at most floor(20% of pool).

    Example: 1,500 images -> 200 (the seed's rule: 75); 5,000 -> 500; 600 -> 120.
    """
    wanted = max(math.ceil(OWN_DATA_SHARE * pool), OWN_DATA_MIN_EXAMPLES)
    return min(wanted, math.floor(OWN_DATA_MAX_SHARE * pool))


def apply_own_data_rule(source: Source) -> Source:
    """`source` with every split the seed's rule carved (`source.carved_splits`) carved instead
    by the own-data rule: a stratified `own_data_split_size(pool)` examples each. A source
    with all its splits, or one too small to stratify (a class with fewer than one example
    per split, fewer examples than classes), keeps the seed's rule, with one warning."""
    carved = [s for s in CARVED_ORDER if s in source.carved_splits]
    if not carved:
        return source
    pool = source.num_examples("train") + sum(source.num_examples(s) for s in carved)
    count = own_data_split_size(pool)
    reason = f"{count} examples per carved split of a {pool}-example pool"
    if count >= 1:
        try:
            resplit = ResplitSource(source, SplitSpec(**{s: count for s in carved}))
        except ValueError as error:
            reason = str(error)
        else:
            resplit.split_note = f"{OWN_DATA_SPLIT_RULE} rule: {resplit.split_note}"
            return resplit
    warnings.warn(
        f"task data {source.name!r}: the {OWN_DATA_SPLIT_RULE} split rule cannot stratify it "
        f"({reason}); using the seed's 5% slices instead",
        stacklevel=3,
    )
    return source


def apply_split_rule(source: Source, rule: str | None) -> Source:
    """`source` with its splits made by `rule` (the source itself for the default rule)."""
    if rule is not None and rule.strip() == OWN_DATA_SPLIT_RULE:
        return apply_own_data_rule(source)
    spec = parse_split_rule(rule)
    return source if spec is None else ResplitSource(source, spec)
