"""`hf:NAME_OR_DIR`: a Hugging Face `datasets` image classification dataset, offline.

`NAME_OR_DIR` is either a directory written by `Dataset.save_to_disk` /
`DatasetDict.save_to_disk`, or a Hub dataset name already in the local cache (`cache_dir`, by
default the `datasets` cache); nothing is downloaded: `HF_DATASETS_OFFLINE` / `HF_HUB_OFFLINE`
are set unless the user set them. Needs the optional `datasets` package (`munet-evolve[hf]`).

Splits: `train`, `validation` (or `valid`, `val`, `dev`) and `test`; missing validation / test
splits are carved from train by the seed's default rule. The image column is the first `Image`
feature (else a column named image, img or picture), the label column the first `ClassLabel`
feature (else label, labels, fine_label or coarse_label); the class count comes from the
`ClassLabel`, else from the largest label + 1.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch

from munet.tasks.sources.base import SPLITS, carve_default_splits
from munet.tasks.sources.decoded import DEFAULT_CACHE_BYTES, DEFAULT_MAX_SIDE, DecodedImageSource

_SPLIT_SPELLINGS = {
    "train": ("train",),
    "validation": ("validation", "valid", "val", "dev"),
    "test": ("test",),
}
_IMAGE_COLUMNS = ("image", "img", "picture")
_LABEL_COLUMNS = ("label", "labels", "fine_label", "coarse_label")


def _import_datasets():
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import datasets
    except ImportError as error:
        raise ImportError(
            "hf: tasks need the optional package 'datasets' (pip install 'munet-evolve[hf]')"
        ) from error
    # Already imported before the variables were set: switch its config to offline as well.
    for flag in ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE"):
        if hasattr(datasets.config, flag) and os.environ.get(flag) == "1":
            setattr(datasets.config, flag, True)
    return datasets


def _columns(features, where: str) -> tuple[str, str]:
    import datasets

    image_col = next((k for k, f in features.items() if isinstance(f, datasets.Image)), None)
    image_col = image_col or next((c for c in _IMAGE_COLUMNS if c in features), None)
    label_col = next((k for k, f in features.items() if isinstance(f, datasets.ClassLabel)), None)
    label_col = label_col or next((c for c in _LABEL_COLUMNS if c in features), None)
    if image_col is None or label_col is None:
        raise ValueError(
            f"{where}: columns {list(features)}; expected an Image column (or one of "
            f"{', '.join(_IMAGE_COLUMNS)}) and a ClassLabel column (or one of "
            f"{', '.join(_LABEL_COLUMNS)})"
        )
    return image_col, label_col


def load_hf(
    name_or_dir: str,
    cache_dir: str | Path | None = None,
    max_side: int = DEFAULT_MAX_SIDE,
    cache_bytes: int = DEFAULT_CACHE_BYTES,
) -> DecodedImageSource:
    """Builds the source of a saved or cached Hugging Face dataset (see the module docstring).

    Raises:
        ImportError: `datasets` is not installed.
        ValueError: a dataset that cannot be loaded offline, lacks a train split, or lacks an
            image or a label column.
    """
    datasets = _import_datasets()
    task_name = f"hf:{name_or_dir}"
    local = Path(name_or_dir).expanduser()
    try:
        if local.is_dir():
            loaded = datasets.load_from_disk(str(local))
        else:
            loaded = datasets.load_dataset(
                name_or_dir, cache_dir=None if cache_dir is None else str(cache_dir)
            )
    except Exception as error:
        raise ValueError(
            f"cannot load Hugging Face dataset {name_or_dir!r} offline (a save_to_disk "
            f"directory, or a name already in the datasets cache): {error}"
        ) from error
    if isinstance(loaded, datasets.Dataset):
        loaded = datasets.DatasetDict({"train": loaded})
    parts = {}
    for split, spellings in _SPLIT_SPELLINGS.items():
        found = next((s for s in spellings if s in loaded), None)
        if found is not None:
            parts[split] = loaded[found]
    if "train" not in parts:
        raise ValueError(f"{task_name}: splits {list(loaded)}; expected a 'train' split")
    image_col, label_col = _columns(parts["train"].features, task_name)
    # (dataset, row indices) per split; carved splits index into train.
    rows: dict[str, tuple[object, np.ndarray]] = {
        s: (ds, np.arange(len(ds))) for s, ds in parts.items()
    }
    carved = carve_default_splits(
        len(parts["train"]), has_test="test" in parts, has_validation="validation" in parts
    )
    for split, idx in carved.items():
        rows[split] = (parts["train"], idx)
    labels = {}
    for split in SPLITS:
        ds, idx = rows[split]
        column = np.asarray(ds[label_col], dtype=np.int64)
        labels[split] = torch.from_numpy(column[idx])
    feature = parts["train"].features[label_col]
    if isinstance(feature, datasets.ClassLabel):
        num_classes, class_names = feature.num_classes, list(feature.names)
    else:
        num_classes = 1 + max(int(v.max()) for v in labels.values() if v.numel())
        class_names = None

    def decoder(split: str):
        ds, idx = rows[split]
        return lambda i: ds[int(idx[i])][image_col]

    source = DecodedImageSource(
        task_name,
        labels=labels,
        decoders={s: decoder(s) for s in SPLITS},
        describe_item=lambda split, i: f"{task_name} split {split!r} row {int(rows[split][1][i])}",
        num_classes=num_classes,
        class_names=class_names,
        max_side=max_side,
        cache_bytes=cache_bytes,
    )
    source.carved_splits = tuple(s for s in ("test", "validation") if s in carved)
    return source
