"""TensorFlow Datasets tasks: the seed's TFDS names (and `tfds:NAME`), from a prepared data_dir.

Needs the optional `tensorflow-datasets` package (`munet-evolve[tfds]`, which also needs TensorFlow)
and a `data_dir` where the dataset was prepared beforehand (`tfds build NAME --data_dir DIR`);
nothing is downloaded here. Splits follow the seed's table (`munet.tasks.tfds_splits`). Each
split is read once into memory as uint8 arrays (images of varying size are resized to the first
image's size, capped at 256 px a side), which suits the small and medium datasets the seed
evolves on; ImageNet-scale datasets are better exported to an image folder.

Labels: the table's label key, or a VTAB label rule (CLEVR counts and distances); the KITTI
VTAB rules are not implemented and raise a clear error.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from PIL import Image

from munet.tasks.sources.base import SPLITS, ArraySource, SplitArrays
from munet.tasks.tfds_splits import TfdsSplits, is_vtab_task, tfds_dataset_and_splits
from munet.tasks.vtab import VTAB_SPECS, vtab_base

_MAX_SIDE = 256
# CLEVR closest-object distance classes: VTAB's thresholds on the smallest pixel depth.
_CLEVR_DISTANCE_THRESHOLDS = np.array([0.0, 8.0, 8.5, 9.0, 9.5, 10.0, 100.0])


def _import_tfds():
    try:
        import tensorflow_datasets as tfds
    except ImportError as error:
        raise ImportError(
            "TFDS tasks need the optional package 'tensorflow-datasets' "
            "(pip install 'munet-evolve[tfds]') and a data_dir where the dataset was prepared"
        ) from error
    return tfds


def vtab_label(rule: str, example: dict) -> int:
    """A VTAB derived label from one TFDS example (numpy values).

    Raises:
        NotImplementedError: the KITTI rules.
        KeyError: an unknown rule or a feature the example lacks.
    """
    if rule == "clevr_count_all":
        return int(len(example["objects"]["size"]) - 3)
    if rule == "clevr_count_cylinders":
        return int(np.sum(np.asarray(example["objects"]["shape"]) == 2))
    if rule == "clevr_closest_distance":
        distance = float(np.min(np.asarray(example["objects"]["pixel_coords"])[:, 2]))
        return int(np.max(np.nonzero(_CLEVR_DISTANCE_THRESHOLDS - distance < 0)[0]))
    if rule.startswith("kitti_"):
        raise NotImplementedError(f"the VTAB KITTI label rule {rule!r} is not implemented")
    return int(example[rule])


def _to_storage(image: np.ndarray, size: tuple[int, int] | None) -> np.ndarray:
    if image.ndim == 2:
        image = image[:, :, None]
    if size is not None and image.shape[:2] != size:
        mode_image = Image.fromarray(image[:, :, 0] if image.shape[2] == 1 else image)
        image = np.asarray(mode_image.resize((size[1], size[0]), Image.BILINEAR))
        if image.ndim == 2:
            image = image[:, :, None]
    return image


def load_tfds(name: str, data_dir: str | Path | None = None) -> ArraySource:
    """Reads TFDS task `name` from a prepared `data_dir` into memory.

    Raises:
        ImportError: tensorflow-datasets is missing.
        ValueError: the dataset is not prepared in data_dir (saying how to prepare it).
    """
    tfds = _import_tfds()

    def builder_for(dataset: str):
        try:
            builder = tfds.builder(dataset, data_dir=None if data_dir is None else str(data_dir))
        except Exception as error:
            raise ValueError(f"TFDS dataset {dataset!r} of task {name!r}: {error}") from error
        if not builder.is_prepared():
            raise ValueError(
                f"TFDS dataset {dataset!r} of task {name!r} is not prepared in "
                f"{builder.data_dir!r}; prepare it first: tfds build {dataset.split(':')[0]} "
                f"--data_dir {data_dir or '~/tensorflow_datasets'}"
            )
        return builder

    # The default rule and VTAB's count-based rules need the train dataset's split info.
    if is_vtab_task(name):
        train_dataset = VTAB_SPECS[vtab_base(name)].dataset
    else:
        try:
            train_dataset = tfds_dataset_and_splits(name).datasets["train"]
        except ValueError:  # the default rule: the dataset of the task's own name
            train_dataset = name
    train_builder = builder_for(train_dataset)
    info_splits = train_builder.info.splits
    entry: TfdsSplits = tfds_dataset_and_splits(
        name,
        available_splits=list(info_splits.keys()),
        train_count=info_splits["train"].num_examples if "train" in info_splits else None,
    )
    builders = {s: builder_for(d) for s, d in entry.datasets.items()}
    label_feature = builders["train"].info.features.get(entry.label_key)
    num_classes = entry.num_classes or getattr(label_feature, "num_classes", None)
    if num_classes is None:
        raise ValueError(f"task {name!r}: cannot tell the class count of {entry.label_key!r}")
    class_names = tuple(label_feature.names) if hasattr(label_feature, "names") else None

    size: tuple[int, int] | None = None
    splits: dict[str, SplitArrays] = {}
    for split in SPLITS:
        images, labels = [], []
        dataset = builders[split].as_dataset(split=entry.splits[split], shuffle_files=False)
        for example in tfds.as_numpy(dataset):
            image = np.asarray(example["image"])
            if size is None:
                h, w = image.shape[:2]
                scale = min(1.0, _MAX_SIDE / max(h, w))
                size = (max(1, round(h * scale)), max(1, round(w * scale)))
            images.append(_to_storage(image, size))
            labels.append(vtab_label(entry.label_key, example))
        if not images:
            raise ValueError(f"task {name!r}: split {split!r} ({entry.splits[split]}) is empty")
        array = np.stack(images).transpose(0, 3, 1, 2)
        if array.dtype != np.uint8:  # e.g. dsprites' 0/1 masks
            array = (array.astype(np.float32) * (255.0 if array.max() <= 1 else 1.0)).round()
            array = array.clip(0, 255).astype(np.uint8)
        splits[split] = SplitArrays(
            torch.from_numpy(np.ascontiguousarray(array)),
            torch.tensor(labels, dtype=torch.int64),
        )
    source = ArraySource(name, splits, num_classes, class_names=class_names)
    source.split_note = ", ".join(
        f"{split} = {entry.datasets[split]} {entry.splits[split]}" for split in SPLITS
    )
    return source
