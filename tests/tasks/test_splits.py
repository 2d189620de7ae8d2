"""User-chosen validation / test splits (munet.tasks.splits): stratified, deterministic, stored
as a split rule, with clear errors."""

import numpy as np
import pytest
import torch

from munet.tasks import get_task
from munet.tasks.sources.base import check_split_rule
from munet.tasks.splits import (
    ResplitSource,
    SplitSpec,
    canonical_split_rule,
    parse_split_rule,
    parse_split_size,
    split_rule,
    stratified_split,
)
from tests.tasks.conftest import indexed_source
from tests.tasks.test_sources import write_folder


def _labels(counts):
    return np.concatenate([np.full(n, c) for c, n in enumerate(counts)])


def test_stratified_split_has_exact_sizes_class_shares_and_no_overlap():
    labels = _labels([60, 30, 10])  # 100 examples, sorted by class as a folder tree is
    out = stratified_split(labels, {"validation": 0.1, "test": 20})
    assert [len(out[s]) for s in ("train", "validation", "test")] == [70, 10, 20]
    assert np.bincount(labels[out["test"]]).tolist() == [12, 6, 2]
    assert np.bincount(labels[out["validation"]]).tolist() == [6, 3, 1]
    every = np.concatenate(list(out.values()))
    assert sorted(every.tolist()) == list(range(100))
    # Carved splits come shuffled (a capped prefix still samples every class), train sorted.
    assert np.any(np.diff(labels[out["validation"]]) < 0)
    assert np.all(np.diff(out["train"]) > 0)
    again = stratified_split(labels, {"validation": 0.1, "test": 20})
    assert all(np.array_equal(out[s], again[s]) for s in out)  # deterministic


def test_fractions_round_up_as_hugging_face_does_and_small_classes_get_one():
    labels = _labels([95, 3, 3])  # 101 examples
    out = stratified_split(labels, {"test": 0.05})
    assert len(out["test"]) == 6  # ceil(0.05 * 101)
    counts = np.bincount(labels[out["test"]], minlength=3)
    assert counts.min() >= 1 and counts.sum() == 6
    # Every class keeps at least one training example.
    assert np.bincount(labels[out["train"]], minlength=3).min() >= 1


@pytest.mark.parametrize(
    ("sizes", "message"),
    [
        ({"validation": 1.5}, r"validation split 1.5: a fraction must be in \(0, 1\)"),
        ({"test": 0.0}, r"test split 0.0: a fraction must be in \(0, 1\)"),
        ({"test": 1.0}, r"test split 1.0: a fraction .* for a count write 1"),
        ({"test": 0}, r"test split 0: a count of examples must be >= 1"),
    ],
)
def test_sizes_out_of_range_name_the_value_and_what_is_expected(sizes, message):
    with pytest.raises(ValueError, match=message):
        SplitSpec(**sizes)


@pytest.mark.parametrize(
    ("sizes", "message"),
    [
        ({"test": 500}, r"test split 500: more than the 100 examples of the train pool"),
        ({"test": 2}, r"test split 2 gives 2 example\(s\) for 3 classes"),
        (
            {"test": 50, "validation": 48},
            r"leave 2 of the 100 train pool examples for training; expected at least one per "
            r"class \(3\)",
        ),
    ],
)
def test_sizes_the_data_cannot_meet_name_the_value_and_what_is_expected(sizes, message):
    with pytest.raises(ValueError, match=message):
        stratified_split(_labels([60, 30, 10]), sizes)


def test_a_class_too_small_to_stratify_is_named():
    labels = _labels([50, 50, 2])
    with pytest.raises(
        ValueError,
        match=r"class 2 \('c'\) has 2 example\(s\).*train and test and validation needs at "
        r"least 3 per class",
    ):
        stratified_split(labels, {"validation": 0.2, "test": 0.2}, ("a", "b", "c"))


def test_split_rules_round_trip_and_parse_sizes():
    assert split_rule() == "default"
    assert split_rule(validation=0.1, test=200) == "validation=0.1,test=200"
    assert parse_split_rule("test=200,validation=0.1") == SplitSpec(validation=0.1, test=200)
    assert canonical_split_rule("val=0.10") == "validation=0.1"
    assert parse_split_rule("default") is None and parse_split_rule("") is None
    assert check_split_rule("validation=0.2") == "validation=0.2"
    assert parse_split_size("0.25") == 0.25 and parse_split_size("40") == 40
    with pytest.raises(ValueError, match="unknown split rule 'halves'; known: default"):
        check_split_rule("halves")
    with pytest.raises(ValueError, match=r"--val-split 'ten': expected a fraction in \(0, 1\)"):
        parse_split_size("ten", "--val-split")
    with pytest.raises(ValueError, match=r"--val-split 2.5: a fraction must be in \(0, 1\)"):
        parse_split_size("2.5", "--val-split")


def test_resplit_keeps_the_datas_own_splits_unless_asked(tmp_path):
    base = indexed_source({"train": 90, "validation": 12, "test": 15})
    only_test = ResplitSource(base, SplitSpec(test=9))
    # The data's validation split stays; test is carved from train (its own test unused).
    assert only_test.num_examples("validation") == 12
    assert torch.equal(only_test.labels("validation"), base.labels("validation"))
    assert (only_test.num_examples("test"), only_test.num_examples("train")) == (9, 81)
    assert "validation as the data gives it" in only_test.describe_splits()
    assert "the data's own test split left unused" in only_test.describe_splits()
    # Each image is the base example its label came from (the image encodes its index).
    images = only_test.images("test", torch.arange(9)).long()
    indices = images[:, 0, 0, 0] + 256 * images[:, 1, 0, 0]
    assert torch.equal(only_test.labels("test"), indices % 3)
    assert len(set(indices.tolist())) == 9


def test_a_pool_includes_the_splits_the_default_rule_carved(tmp_path):
    root = write_folder(tmp_path / "data", per_class=20)  # 60 images, one pool
    default = get_task("mine", data=f"folder:{root}", batch_size=4, split_rule="default")
    assert default.source.carved_splits == ("test", "validation")
    assert (default.num_train_examples, default.num_test_examples) == (54, 3)
    task = get_task("mine", data=f"folder:{root}", batch_size=4, split_rule="validation=0.25")
    source = task.source
    # Validation as asked; test, which the data lacks, a stratified 5% (ceil: 3); 60 in all.
    sizes = [source.num_examples(s) for s in ("train", "validation", "test")]
    assert sizes == [42, 15, 3]
    assert np.bincount(source.labels("validation").numpy()).tolist() == [5, 5, 5]
    # The cache tells rules apart; the default rule is the seed's, untouched.
    assert task is not default
    assert get_task("mine", data=f"folder:{root}", batch_size=4, split_rule="default") is default
    # Images decode through the folder source, whichever base split they sit in.
    batch = source.images("train", torch.arange(42))
    assert batch.shape == (42, 3, 10, 12) and batch.dtype == torch.uint8
    # Labels match the images: the dominant channel tells the class (red, green, blue).
    dominant = batch.float().mean(dim=(2, 3)).argmax(1)
    names = [task.class_names[int(label)] for label in source.labels("train")]
    assert dominant.tolist() == [{"red": 0, "green": 1, "blue": 2}[n] for n in names]


def test_errors_name_the_data(tmp_path):
    root = write_folder(tmp_path / "data", per_class=20)
    with pytest.raises(ValueError, match=r"task data 'folder:.*': test split 100: more than"):
        get_task("mine", data=f"folder:{root}", split_rule="test=100")
