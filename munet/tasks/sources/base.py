"""What a task reads its data from: a `Source` of uint8 images and int labels per split."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch

SPLITS = ("train", "validation", "test")

# Split rules a named task may be stored with (AgentConfig.data_split). The name is stored with
# the agent's state so that a later munet still rebuilds the splits a system was grown on, or
# refuses clearly. Besides the named rules, `validation=X,test=Y` is a stratified split of the
# train pool (munet.tasks.splits).
DEFAULT_SPLIT_RULE = "default"
# munet's rule for a user's own data (folder:, npz:, hf: sources, where the seed defines no
# split): large enough a validation split to select on (munet.tasks.splits.own_data_split_size).
OWN_DATA_SPLIT_RULE = "own-data"
SPLIT_RULES = {
    DEFAULT_SPLIT_RULE: (
        "the seed's get_default_splits: a missing test split is the first 5% of train, a "
        "missing validation split the next 5%, after a fixed shuffle (seed 0); splits the "
        "data has are used as they are"
    ),
    OWN_DATA_SPLIT_RULE: (
        "munet's rule for your own data (the default of folder:, npz: and hf: sources): a "
        "missing test or validation split is a stratified max(10%, 200 examples) of the train "
        "pool, at most 20% each; splits the data has are used as they are"
    ),
}


# The most classes a task may have. A label is an index into the classifier head, so a label
# of 2**40 would ask for a head of 2**40 rows (terabytes): a typo or a hash, never a class.
MAX_NUM_CLASSES = 100_000


def check_num_classes(num_classes: int, where: str, why: str = "") -> int:
    """Returns `num_classes` when it is in [2, MAX_NUM_CLASSES].

    Args:
        num_classes: the class count.
        where: the data, for the message.
        why: how the count came about (e.g. "the largest label 9 + 1"), for the message.

    Raises:
        ValueError: naming the count, where it came from and the allowed range.
    """
    if not 2 <= num_classes <= MAX_NUM_CLASSES:
        came = f" ({why})" if why else ""
        raise ValueError(
            f"{where}: {num_classes} classes{came}; expected 2 to {MAX_NUM_CLASSES} classes "
            f"with labels in [0, classes)"
        )
    return num_classes


def check_split_rule(rule: str) -> str:
    """Returns `rule` when munet knows it: a named rule, or `validation=X,test=Y`.

    Raises:
        ValueError: an unknown rule or a bad size, listing what is expected.
    """
    if rule in SPLIT_RULES:
        return rule
    from munet.tasks.splits import parse_split_rule

    parse_split_rule(rule)
    return rule


class Source(ABC):
    """Examples of one task, split into train / validation / test.

    Images come out as uint8 (N, C, H, W) tensors with C = 1 or 3 and one H, W per source (a
    source whose files vary in size resizes them when it decodes them). Labels are int64 in
    [0, num_classes). Subclasses implement `labels` and `images`; `describe` is for listings.
    """

    name: str
    num_classes: int
    class_names: tuple[str, ...] | None = None
    # How the splits came about, for listings (`munet tasks show`): the splits carved from
    # train by the default rule, or a free-form note (TFDS split strings).
    carved_splits: tuple[str, ...] = ()
    split_note: str = ""

    @abstractmethod
    def labels(self, split: str) -> torch.Tensor:
        """All labels of `split`, (N,) int64; cheap (no image decoding)."""

    @abstractmethod
    def images(self, split: str, indices: torch.Tensor) -> torch.Tensor:
        """The images at `indices` of `split`, (len(indices), C, H, W) uint8."""

    def num_examples(self, split: str) -> int:
        return int(self.labels(split).shape[0])

    def describe(self) -> str:
        sizes = ", ".join(f"{s} {self.num_examples(s)}" for s in SPLITS)
        return f"{self.num_classes} classes; {sizes}"

    def describe_splits(self) -> str:
        """Where each split comes from, in words."""
        if self.split_note:
            return self.split_note
        if not self.carved_splits:
            return "train, validation and test as the data gives them"
        carved = " and ".join(self.carved_splits)
        return f"{carved} carved from train by the default rule (5% slices after a fixed shuffle)"


@dataclass
class SplitArrays:
    """One split held in memory."""

    images: torch.Tensor  # (N, C, H, W) uint8
    labels: torch.Tensor  # (N,) int64


class ArraySource(Source):
    """A source whose splits are tensors in memory (embedded tasks, npz files, small datasets)."""

    def __init__(
        self,
        name: str,
        splits: Mapping[str, SplitArrays],
        num_classes: int,
        class_names: tuple[str, ...] | None = None,
    ) -> None:
        missing = [s for s in SPLITS if s not in splits]
        if missing:
            raise ValueError(f"task {name!r}: missing splits {missing}; expected {list(SPLITS)}")
        for split in SPLITS:
            arrays = splits[split]
            if arrays.images.dtype != torch.uint8 or arrays.images.dim() != 4:
                raise ValueError(
                    f"task {name!r} split {split!r}: images must be uint8 (N, C, H, W), got "
                    f"{arrays.images.dtype} {tuple(arrays.images.shape)}"
                )
            if arrays.images.shape[0] != arrays.labels.shape[0]:
                raise ValueError(
                    f"task {name!r} split {split!r}: {arrays.images.shape[0]} images but "
                    f"{arrays.labels.shape[0]} labels"
                )
        self.name = name
        self.num_classes = int(num_classes)
        self.class_names = class_names
        self._splits = {s: splits[s] for s in SPLITS}

    def labels(self, split: str) -> torch.Tensor:
        return self._splits[split].labels

    def images(self, split: str, indices: torch.Tensor) -> torch.Tensor:
        return self._splits[split].images[indices]

    def image_shape(self) -> tuple[int, int, int]:
        """(C, H, W) of the train images."""
        c, h, w = self._splits["train"].images.shape[1:]
        return int(c), int(h), int(w)


def images_to_nchw_uint8(array: np.ndarray, where: str) -> torch.Tensor:
    """Converts (N, H, W), (N, H, W, C) or (N, C, H, W) images to a uint8 (N, C, H, W) tensor.

    Float arrays must hold values in [0, 1] (scaled to 0..255) or already in [0, 255].

    Raises:
        ValueError: a shape or value range that is not an image batch; `where` names the data.
    """
    if array.ndim == 3:
        array = array[:, :, :, None]
    if array.ndim != 4:
        raise ValueError(f"{where}: images of shape {array.shape}; expected (N, H, W[, C])")
    if array.shape[-1] in (1, 3) and array.shape[1] not in (1, 3):
        array = array.transpose(0, 3, 1, 2)
    elif array.shape[1] not in (1, 3):
        raise ValueError(f"{where}: images of shape {array.shape}; expected 1 or 3 channels")
    if array.dtype == np.uint8:
        return torch.from_numpy(np.ascontiguousarray(array))
    if np.issubdtype(array.dtype, np.floating):
        finite = np.isfinite(array)
        if not finite.all():
            bad = int(array.size - np.count_nonzero(finite))
            first = int(np.argmin(finite.reshape(len(array), -1).all(axis=1)))
            raise ValueError(
                f"{where}: {bad} pixel values are NaN or infinite (the first in image {first}); "
                "expected finite values in [0, 1] or [0, 255]"
            )
    if np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer):
        lo, hi = (float(array.min()), float(array.max())) if array.size else (0.0, 0.0)
        if lo < 0 or hi > 255:
            raise ValueError(f"{where}: pixel values in [{lo}, {hi}]; expected [0, 1] or [0, 255]")
        if np.issubdtype(array.dtype, np.floating) and hi <= 1.0:
            array = array * 255.0
        return torch.from_numpy(np.ascontiguousarray(np.round(array).astype(np.uint8)))
    raise ValueError(f"{where}: images of dtype {array.dtype}; expected uint8 or float")


def labels_to_int64(array: np.ndarray, where: str) -> torch.Tensor:
    """Checks labels are integers (N,) and returns them as an int64 tensor."""
    array = np.asarray(array)
    if array.ndim == 2 and array.shape[1] == 1:
        array = array[:, 0]
    if array.ndim != 1:
        raise ValueError(f"{where}: labels of shape {array.shape}; expected (N,)")
    if not np.issubdtype(array.dtype, np.integer):
        whole = np.issubdtype(array.dtype, np.floating) and np.all(np.mod(array, 1) == 0)
        if not whole:
            raise ValueError(f"{where}: labels of dtype {array.dtype}; expected integers")
    if array.size:
        lo, hi = array.min(), array.max()
        if lo < 0 or hi >= MAX_NUM_CLASSES:
            bad = lo if lo < 0 else hi
            index = int(np.argmax(array == bad))
            raise ValueError(
                f"{where}: label {bad:.0f} (example {index}); expected labels in "
                f"[0, {MAX_NUM_CLASSES}) (class indices from 0)"
            )
    return torch.from_numpy(array.astype(np.int64))


def carve_default_splits(
    num_examples: int, has_test: bool, has_validation: bool, seed: int = 0
) -> dict[str, np.ndarray]:
    """The seed's `get_default_splits` on one pool of train examples, as index arrays.

    Every missing split among test, validation (in that order) takes the next 5% slice of the
    train pool; train keeps the rest. Unlike TFDS files, a user's pool may be sorted by class,
    so the pool is shuffled with a fixed `seed` before slicing.

    Returns:
        {"train": idx, ["test": idx], ["validation": idx]} into the pool.
    """
    order = np.random.default_rng(seed).permutation(num_examples)
    used = 0
    out: dict[str, np.ndarray] = {}
    for split, present in (("test", has_test), ("validation", has_validation)):
        if not present:
            start, end = (percent_boundary(p, num_examples) for p in (used, used + 5))
            out[split] = np.sort(order[start:end])
            used += 5
    out["train"] = np.sort(order[percent_boundary(used, num_examples) :])
    return out


def percent_boundary(percent: int, num_examples: int) -> int:
    """Where `split[percent%]` falls, rounded as TFDS does by default (its "closest" rounding,
    Python's round: 5% of 1797 examples is 90, not 89), so slices match the seed's."""
    return int(round(percent * num_examples / 100.0))
