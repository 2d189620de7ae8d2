"""The TFDS source against a stand-in `tensorflow_datasets` module.

tensorflow-datasets is an optional extra that CI does not install. The stand-in implements the
part of its API the source uses (`builder(name, data_dir)`, `is_prepared()`, `info.splits`,
`info.features`, `as_dataset(split=...)` with TFDS slice syntax, `as_numpy`), so these tests
check munet's side: the seed's split table applied to real split strings, cross-dataset
validation (cifar10 on cifar10_1), labels, image layout and the errors.
"""

from __future__ import annotations

import re
import sys
import types
from dataclasses import dataclass

import numpy as np
import pytest

from munet.tasks import get_task
from munet.tasks.sources.tfds import load_tfds


@dataclass
class _SplitInfo:
    num_examples: int


@dataclass
class _ClassLabel:
    num_classes: int

    @property
    def names(self) -> list[str]:
        return [f"class_{i}" for i in range(self.num_classes)]


def _slice(examples: list[dict], spec: str) -> list[dict]:
    """TFDS slice syntax: `name`, `name[a:b]` with ints or percentages."""
    match = re.fullmatch(r"\w+(?:\[(-?\d*)(%?):(-?\d*)(%?)\])?", spec)
    assert match, f"unsupported split spec {spec!r}"
    start, start_pct, end, end_pct = match.groups()
    n = len(examples)

    def bound(text: str | None, pct: str, default: int) -> int:
        if not text:
            return default
        value = int(text)
        return round(n * value / 100) if pct else value

    return examples[bound(start, start_pct, 0) : bound(end, end_pct, n)]


class _Builder:
    def __init__(self, data: dict[str, list[dict]], num_classes: int, prepared: bool, data_dir):
        self._data = data
        self._prepared = prepared
        self.data_dir = str(data_dir)
        self.info = types.SimpleNamespace(
            splits={s: _SplitInfo(len(v)) for s, v in data.items()},
            features={"label": _ClassLabel(num_classes)},
        )

    def is_prepared(self) -> bool:
        return self._prepared

    def as_dataset(self, split: str, shuffle_files: bool = False) -> list[dict]:
        assert not shuffle_files
        base = split.split("[")[0]
        return _slice(self._data[base], split)


def _examples(count: int, num_classes: int, side: int, offset: int) -> list[dict]:
    rng = np.random.default_rng(offset)
    return [
        {
            "image": rng.integers(0, 256, size=(side, side, 3), dtype=np.uint8),
            "label": np.int64((i + offset) % num_classes),
        }
        for i in range(count)
    ]


@pytest.fixture
def fake_tfds(monkeypatch, tmp_path):
    datasets = {
        "cifar100": {"train": _examples(100, 5, 40, 0), "test": _examples(20, 5, 40, 1)},
        "cifar10": {"train": _examples(50, 10, 32, 2), "test": _examples(30, 10, 32, 3)},
        "cifar10_1": {"test": _examples(12, 10, 32, 4)},
    }
    calls: list[tuple[str, str]] = []

    def builder(name: str, data_dir=None) -> _Builder:
        calls.append((name, data_dir))
        base = name.split(":")[0]
        if base not in datasets:
            raise KeyError(f"dataset {base} not found")
        num_classes = 5 if base == "cifar100" else 10
        return _Builder(datasets[base], num_classes, prepared=True, data_dir=data_dir or tmp_path)

    module = types.ModuleType("tensorflow_datasets")
    module.builder = builder
    module.as_numpy = lambda dataset: iter(dataset)
    monkeypatch.setitem(sys.modules, "tensorflow_datasets", module)
    return types.SimpleNamespace(datasets=datasets, calls=calls, module=module)


def test_seed_split_table_applied_to_a_prepared_dataset(fake_tfds, tmp_path):
    source = load_tfds("cifar100", data_dir=tmp_path)
    # The seed's cifar100 rule: train[:98%] / train[98%:] / test.
    assert source.labels("train").shape[0] == 98
    assert source.labels("validation").shape[0] == 2
    assert source.labels("test").shape[0] == 20
    assert source.num_classes == 5
    assert source.image_shape() == (3, 40, 40)
    train = fake_tfds.datasets["cifar100"]["train"]
    expected = np.stack([e["image"] for e in train[98:]]).transpose(0, 3, 1, 2)
    np.testing.assert_array_equal(source.images("validation", np.arange(2)).numpy(), expected)
    assert source.labels("validation").tolist() == [int(e["label"]) for e in train[98:]]
    assert all(data_dir == str(tmp_path) for _, data_dir in fake_tfds.calls)


def test_cifar10_is_validated_on_cifar10_1(fake_tfds, tmp_path):
    source = load_tfds("cifar10", data_dir=tmp_path)
    assert source.labels("train").shape[0] == 50
    assert source.labels("validation").shape[0] == 12  # all of cifar10_1's test split
    assert source.labels("test").shape[0] == 30
    expected = [int(e["label"]) for e in fake_tfds.datasets["cifar10_1"]["test"]]
    assert source.labels("validation").tolist() == expected


def test_get_task_routes_tfds_names_to_the_source(fake_tfds, tmp_path):
    task = get_task("cifar100", batch_size=16, data_dir=tmp_path, cache=False)
    assert task.num_classes == 5
    assert task.num_train_examples == 98
    batch = next(iter(task.test_batches({"ds_image_size": 16})))
    assert tuple(batch.images.shape[1:]) == (3, 16, 16)


def test_unprepared_dataset_says_how_to_prepare_it(fake_tfds, monkeypatch, tmp_path):
    original = fake_tfds.module.builder

    def unprepared(name, data_dir=None):
        built = original(name, data_dir)
        built._prepared = False
        return built

    monkeypatch.setattr(fake_tfds.module, "builder", unprepared)
    with pytest.raises(ValueError, match=r"not prepared.*tfds build cifar100"):
        load_tfds("cifar100", data_dir=tmp_path)


def test_missing_package_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorflow_datasets", None)
    with pytest.raises(ImportError, match=r"munet-evolve\[tfds\]"):
        load_tfds("cifar100")


def test_a_named_task_reads_a_tfds_source(fake_tfds, tmp_path):
    task = get_task("mycifar", data="tfds:cifar100", data_dir=tmp_path, batch_size=16)
    assert task.name == "mycifar" and task.num_classes == 5
    # The seed's table rule for cifar100: train[:98%] / train[98%:] / test.
    assert (task.num_train_examples, task.sizing.num_validation_examples_total) == (98, 2)
    assert task.source.describe_splits() == (
        "train = cifar100 train[:98%], validation = cifar100 train[98%:], test = cifar100 test"
    )
