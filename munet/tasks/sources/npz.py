"""`npz:FILE.npz`: image arrays in a NumPy .npz file (read with allow_pickle=False).

Accepted keys, per split s in train / validation / test (validation may be spelled `val`):
`x_s` and `y_s` (the Keras convention), or `s_images` and `s_labels`. A file with only the train
split, or with a single pool `images` / `labels` (or `x` / `y`), gets the missing splits by the
seed's default rule (the next 5% slices of train for test then validation, after a fixed
shuffle). Images are (N, H, W), (N, H, W, C) or (N, C, H, W) with C in {1, 3}, uint8 or floats
in [0, 1] / [0, 255]. An optional scalar `num_classes` fixes the class count; otherwise it is
the largest label + 1. An optional `class_names` string array names the classes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from munet.tasks.sources.base import (
    ArraySource,
    SplitArrays,
    carve_default_splits,
    images_to_nchw_uint8,
    labels_to_int64,
)

_SPLIT_SPELLINGS = {"train": ("train",), "validation": ("validation", "val"), "test": ("test",)}


def _find_pair(data, split: str) -> tuple[str, str] | None:
    for spelling in _SPLIT_SPELLINGS[split]:
        for x_key, y_key in (
            (f"x_{spelling}", f"y_{spelling}"),
            (f"{spelling}_images", f"{spelling}_labels"),
        ):
            if x_key in data and y_key in data:
                return x_key, y_key
    return None


def load_npz(path: str | Path) -> ArraySource:
    """Builds the source of an .npz file (see the module docstring for the layout).

    Raises:
        ValueError: a missing or unreadable file, missing keys (listing those found), bad image
            shapes or values, non-integer or negative labels.
    """
    path = Path(path).expanduser()
    name = f"npz:{path}"
    if not path.is_file():
        raise ValueError(f"npz file {str(path)!r} does not exist")
    try:
        data = np.load(path, allow_pickle=False)
    except Exception as error:
        raise ValueError(f"cannot read npz file {str(path)!r}: {error}") from error
    with data:
        keys = set(data.files)
        pairs = {s: _find_pair(keys, s) for s in _SPLIT_SPELLINGS}
        if pairs["train"] is None:
            for x_key, y_key in (("images", "labels"), ("x", "y")):
                if x_key in keys and y_key in keys:
                    pairs["train"] = (x_key, y_key)
                    break
        if pairs["train"] is None:
            raise ValueError(
                f"npz file {str(path)!r} has keys {sorted(keys)}; expected x_train/y_train "
                "(and optional x_validation/y_validation, x_test/y_test), train_images/"
                "train_labels, or images/labels"
            )
        splits: dict[str, SplitArrays] = {}
        try:
            for split, pair in pairs.items():
                if pair is None:
                    continue
                where = f"npz file {str(path)!r} keys {pair[0]}/{pair[1]}"
                images = images_to_nchw_uint8(data[pair[0]], where)
                labels = labels_to_int64(data[pair[1]], where)
                if images.shape[0] != labels.shape[0]:
                    raise ValueError(
                        f"{where}: {images.shape[0]} images but {labels.shape[0]} labels; "
                        "expected one label per image"
                    )
                splits[split] = SplitArrays(images, labels)
            num_classes = int(data["num_classes"]) if "num_classes" in keys else None
            class_names = (
                tuple(str(c) for c in data["class_names"]) if "class_names" in keys else None
            )
        except ValueError as error:
            if "pickle" in str(error).lower():
                raise ValueError(
                    f"npz file {str(path)!r} holds object arrays; only plain numeric arrays "
                    "are read (no pickle)"
                ) from error
            raise
    train = splits["train"]
    missing_test, missing_val = "test" not in splits, "validation" not in splits
    carved_splits = tuple(s for s, m in (("test", missing_test), ("validation", missing_val)) if m)
    if missing_test or missing_val:
        carved = carve_default_splits(
            train.images.shape[0], has_test=not missing_test, has_validation=not missing_val
        )
        for split, idx in carved.items():
            splits[split] = SplitArrays(train.images[idx], train.labels[idx])
    for split, arrays in splits.items():
        if arrays.labels.numel() and int(arrays.labels.min()) < 0:
            raise ValueError(
                f"npz file {str(path)!r}: split {split!r} has label {int(arrays.labels.min())}; "
                "expected labels >= 0"
            )
    if num_classes is None:
        num_classes = 1 + max(
            (int(a.labels.max()) for a in splits.values() if a.labels.numel()), default=-1
        )
    if class_names is not None and len(class_names) != num_classes:
        raise ValueError(
            f"npz file {str(path)!r}: {len(class_names)} class_names for {num_classes} classes"
        )
    source = ArraySource(name, splits, num_classes, class_names=class_names)
    source.carved_splits = carved_splits
    return source
