"""The own-data split rule (munet's default for folder:/npz:/hf: data) and the warning for a
small validation split; TFDS and munet's own tasks keep the seed's rule."""

import warnings

import numpy as np
import pytest
import torch

from munet.tasks import get_task
from munet.tasks.registry import (
    default_split_rule,
    small_validation_warning,
    warn_small_validation,
)
from munet.tasks.splits import (
    apply_own_data_rule,
    canonical_split_rule,
    own_data_split_size,
    parse_split_rule,
)
from tests.tasks.conftest import indexed_source


def _npz(path, counts, **extra):
    """An npz of train images only, sorted by class (`counts[c]` images of class c); image i
    encodes i in its first two channels, so splits can be checked for overlap."""
    n = sum(counts)
    index = np.arange(n)
    images = np.zeros((n, 4, 4, 3), dtype=np.uint8)
    images[:, :, :, 0] = (index % 256)[:, None, None]
    images[:, :, :, 1] = (index // 256)[:, None, None]
    labels = np.concatenate([np.full(k, c) for c, k in enumerate(counts)])
    np.savez(path, x_train=images, y_train=labels, **extra)
    return path


def _ids(task, split):
    count = task.source.num_examples(split)
    images = task.source.images(split, torch.arange(count)).to(torch.int64)
    return set((images[:, 0, 0, 0] + 256 * images[:, 1, 0, 0]).tolist())


@pytest.mark.parametrize(
    ("pool", "size"),
    [(20, 4), (100, 20), (600, 120), (1000, 200), (1500, 200), (2000, 200), (2500, 250),
     (5000, 500), (4, 0)],
)  # fmt: skip
def test_own_data_size_is_the_larger_of_10_percent_and_200_at_most_20_percent(pool, size):
    assert own_data_split_size(pool) == size


def test_own_data_is_the_default_of_your_data_and_tfds_keeps_the_seeds():
    for spec in ("folder:/data/x", "npz:/x.npz", "hf:/data/ds"):
        assert default_split_rule(spec) == "own-data"
    for spec in ("tfds:mnist", "cifar100", "dtd/1k", "digits", "synth/shape"):
        assert default_split_rule(spec) == "default"
    assert canonical_split_rule(" own-data ") == "own-data"
    assert parse_split_rule("own-data") is None


def test_a_1500_image_pool_gets_200_stratified_validation_and_test(tmp_path):
    path = _npz(tmp_path / "mine.npz", [300] * 5)
    task = get_task("mine", data=f"npz:{path}", batch_size=32)
    sizes = [task.source.num_examples(s) for s in ("train", "validation", "test")]
    assert sizes == [1100, 200, 200]
    for split in ("validation", "test"):
        assert np.bincount(task.source.labels(split).numpy()).tolist() == [40] * 5
    ids = {s: _ids(task, s) for s in ("train", "validation", "test")}
    assert sum(len(v) for v in ids.values()) == 1500
    assert set.union(*ids.values()) == set(range(1500))  # disjoint, nothing lost
    assert "own-data rule: stratified split of the train pool" in task.source.describe_splits()
    # The seed's rule stays available by name: 5% slices (75 of 1,500).
    seed = get_task("mine", data=f"npz:{path}", batch_size=32, split_rule="default")
    assert [seed.source.num_examples(s) for s in ("validation", "test")] == [75, 75]
    # Deterministic: the same splits again.
    again = get_task("mine", data=f"npz:{path}", batch_size=32, cache=False)
    assert _ids(again, "validation") == ids["validation"]


def test_only_the_splits_the_data_lacks_are_carved(tmp_path):
    rng = np.random.default_rng(0)
    test_images = rng.integers(0, 256, (30, 4, 4, 3), dtype=np.uint8)
    path = _npz(tmp_path / "mine.npz", [500, 500], x_test=test_images, y_test=np.arange(30) % 2)
    task = get_task("mine", data=f"npz:{path}", batch_size=32)
    # Validation carved (10% of 1,000 is under 200: 200); the file's own test split kept.
    assert [task.source.num_examples(s) for s in ("train", "validation", "test")] == [800, 200, 30]
    complete = indexed_source({"train": 40, "validation": 10, "test": 10})
    assert apply_own_data_rule(complete) is complete


def test_a_small_pool_is_split_and_one_too_small_to_stratify_keeps_the_seeds_rule(tmp_path):
    small = get_task("small", data=f"npz:{_npz(tmp_path / 's.npz', [10, 10, 10])}", batch_size=4)
    # 30 images: 20% (6) each for validation and test, 2 per class; train keeps 18.
    assert [small.source.num_examples(s) for s in ("train", "validation", "test")] == [18, 6, 6]
    assert np.bincount(small.source.labels("validation").numpy()).tolist() == [2, 2, 2]
    lopsided = tmp_path / "l.npz"
    _npz(lopsided, [40, 2])  # class 1 cannot be in train, validation and test
    with pytest.warns(UserWarning, match=r"own-data split rule cannot stratify.*class 1 has 2"):
        task = get_task("lopsided", data=f"npz:{lopsided}", batch_size=4)
    assert task.source.carved_splits == ("test", "validation")  # the seed's 5% slices
    assert [task.source.num_examples(s) for s in ("validation", "test")] == [2, 2]


def test_tfds_style_and_embedded_tasks_are_unchanged():
    digits = get_task("digits", batch_size=32)
    assert digits.source is get_task("digits", batch_size=32, split_rule="default").source


def test_a_validation_split_under_200_warns_with_its_size(tmp_path):
    path = _npz(tmp_path / "mine.npz", [30] * 4)  # 120 images: 24 validation
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        task = get_task("tiny", data=f"npz:{path}", batch_size=8)  # building a task: silent
    with pytest.warns(UserWarning, match=r"task 'tiny': its validation split has 24 examples "
                      r"\(under 200\).*--val-split 200"):  # fmt: skip
        warn_small_validation(task)
    big = get_task("big", data=f"npz:{_npz(tmp_path / 'b.npz', [300] * 5)}", batch_size=8)
    assert small_validation_warning(big) == ""
    # munet's embedded tasks have fixed, documented splits (digits: 180): no warning.
    digits = get_task("digits", batch_size=8)
    assert digits.source.num_examples("validation") == 180
    assert small_validation_warning(digits) == ""



def test_a_bad_rule_in_a_config_names_the_rules():
    from munet.config import ConfigError, apply_overrides, get_preset

    config = apply_overrides(get_preset("VitCpu"), ["data_split=own-data"])
    assert config.data_split == "own-data"
    with pytest.raises(ConfigError, match=r"data_split=.*own-data2.*'own-data' \(stratified"):
        apply_overrides(get_preset("VitCpu"), ["data_split=own-data2"])
