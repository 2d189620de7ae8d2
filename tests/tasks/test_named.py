"""Named tasks: a plain task name bound to a data source, and the split rule."""

import numpy as np
import pytest

from munet.tasks import canonical_data_spec, check_task_name_for_data, get_task
from munet.tasks.sources.base import SPLIT_RULES
from tests.tasks.test_sources import write_folder


def _npz(path, n=60, label_count=3, **extra):
    rng = np.random.default_rng(0)
    arrays = {
        "x_train": rng.integers(0, 256, (n, 8, 8, 3), dtype=np.uint8),
        "y_train": np.arange(n) % label_count,
        **extra,
    }
    np.savez(path, **arrays)
    return path


def test_a_named_task_keeps_its_name_and_reads_its_source(tmp_path):
    path = _npz(tmp_path / "mine.npz", class_names=np.array(["x", "y", "z"]))
    task = get_task("mine", data=f"npz:{path}", batch_size=8, split_rule="default")
    assert task.name == "mine" and task.source.name == f"npz:{path}"
    assert task.class_names == ("x", "y", "z")
    # No validation / test in the file: the seed's default rule, 5% slices of train.
    assert (task.num_test_examples, task.sizing.num_validation_examples_total) == (3, 3)
    assert task.source.carved_splits == ("test", "validation")
    assert "carved from train by the default rule" in task.source.describe_splits()
    same = get_task(f"npz:{path}", batch_size=8, split_rule="default")
    assert task.source.labels("test").tolist() == same.source.labels("test").tolist()


def test_names_that_already_mean_a_task_or_hold_a_scheme_are_refused(tmp_path):
    path = _npz(tmp_path / "mine.npz")
    with pytest.raises(ValueError, match="'digits' is already a task of munet"):
        get_task("digits", data=f"npz:{path}")
    with pytest.raises(ValueError, match="'cifar100' is already a task"):
        check_task_name_for_data("cifar100")
    with pytest.raises(ValueError, match="holds ':'.*--task flowers"):
        check_task_name_for_data("npz:x.npz")
    with pytest.raises(ValueError, match="unknown split rule 'halves'; known: default, own-data"):
        get_task("mine", data=f"npz:{path}", split_rule="halves")
    assert list(SPLIT_RULES) == ["default", "own-data"]


def test_unknown_plain_names_say_how_to_bind_data():
    with pytest.raises(ValueError, match=r"unknown task 'flowers'.*--task flowers --data folder"):
        get_task("flowers")


def test_canonical_data_specs_are_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert canonical_data_spec("folder:data") == f"folder:{tmp_path / 'data'}"
    assert canonical_data_spec("npz:./a/../b.npz") == f"npz:{tmp_path / 'b.npz'}"
    assert canonical_data_spec("tfds:oxford_flowers102") == "tfds:oxford_flowers102"
    assert canonical_data_spec("digits") == "digits"
    with pytest.raises(ValueError, match="unknown scheme 'zip'"):
        canonical_data_spec("zip:data.zip")
    with pytest.raises(ValueError, match="no location after 'folder:'"):
        canonical_data_spec("folder:")


def test_npz_with_mismatched_lengths_is_a_clear_error(tmp_path):
    path = tmp_path / "bad.npz"
    np.savez(path, x_train=np.zeros((10, 8, 8), np.uint8), y_train=np.zeros(9, np.int64))
    with pytest.raises(ValueError, match="x_train/y_train: 10 images but 9 labels"):
        get_task("mine", data=f"npz:{path}")


def test_labels_out_of_range_are_a_clear_error(tmp_path):
    # Labels 0..3 but the file says 3 classes.
    path = _npz(tmp_path / "bad.npz", label_count=4, num_classes=np.array(3))
    with pytest.raises(ValueError, match=r"has label 3; expected labels in \[0, 2\]"):
        get_task("mine", data=f"npz:{path}")


def test_a_truncated_image_names_its_file(tmp_path):
    root = write_folder(tmp_path / "data", per_class=8)
    victim = sorted((root / "red").iterdir())[0]
    victim.write_bytes(victim.read_bytes()[:40])
    # Refused when the task is built (every file is checked once), before any batch is read.
    with pytest.raises(ValueError, match=f"1 of 24 image files cannot be read: {victim}: "):
        get_task("colours", data=f"folder:{root}", batch_size=4)
