import numpy as np
import pytest
import torch
from PIL import Image

from munet.tasks import get_task
from munet.tasks.sources.base import carve_default_splits, percent_boundary

COLORS = {"red": (220, 30, 30), "green": (30, 200, 40), "blue": (30, 40, 220)}


def write_folder(root, per_class=40, size=(12, 10), classes=COLORS, ext="png"):
    rng = np.random.default_rng(0)
    for name, color in classes.items():
        (root / name).mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            noise = rng.integers(-20, 20, size=(size[1], size[0], 3))
            pixels = np.clip(np.array(color) + noise, 0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(root / name / f"{i:03d}.{ext}")
    return root


def test_image_folder_pool_is_split_by_the_seed_default_rule(tmp_path):
    root = write_folder(tmp_path / "data")
    task = get_task(f"folder:{root}", batch_size=8, split_rule="default")
    assert task.num_classes == 3 and task.class_names == ("blue", "green", "red")
    # 120 images: test 5% = 6, validation next 5% = 6, train the rest.
    assert (task.num_train_examples, task.sizing.num_validation_examples_total) == (108, 6)
    assert task.num_test_examples == 6
    batch = next(task.train_batches({"ds_image_size": 16, "ds_hue_delta": 0.1}))
    assert batch.images.shape == (8, 3, 16, 16)
    # Labels follow the class folders: the dominant channel tells the class.
    raw = task.source.images("train", torch.arange(30)).float()
    dominant = raw.mean(dim=(2, 3)).argmax(1)  # 0 red, 1 green, 2 blue
    expected = {"red": 0, "green": 1, "blue": 2}
    names = [task.class_names[int(label)] for label in task.source.labels("train")[:30]]
    assert dominant.tolist() == [expected[n] for n in names]


def test_image_folder_with_split_trees_and_mixed_sizes(tmp_path):
    root = tmp_path / "data"
    write_folder(root / "train", per_class=10)
    write_folder(root / "val", per_class=3, size=(20, 30), ext="jpg")
    write_folder(root / "test", per_class=4)
    task = get_task(f"folder:{root}", batch_size=4)
    assert task.num_train_examples == 30
    assert task.sizing.num_validation_examples_total == 9
    assert task.num_test_examples == 12
    # Validation JPEGs of another size are decoded to the storage size (the first train image's).
    images = task.source.images("validation", torch.arange(9))
    assert images.shape == (9, 3, 10, 12)


def test_unreadable_image_names_its_file(tmp_path):
    root = write_folder(tmp_path / "data", per_class=10)
    broken = root / "red" / "000.png"
    task = get_task(f"folder:{root}", batch_size=4, cache=False, split_rule="default")
    # Broken after the task checked every file: a read still names it.
    broken.write_bytes(b"not a png at all")
    split = next(
        s
        for s in ("train", "validation", "test")
        for i in range(task.source.num_examples(s))
        if str(broken) in task.source._describe_item(s, i)
    )
    with pytest.raises(ValueError, match="cannot read image .*000.png"):
        task.source.images(split, torch.arange(task.source.num_examples(split)))


def test_image_folder_with_one_class_is_a_clear_error(tmp_path):
    root = write_folder(tmp_path / "data", classes={"only": (1, 2, 3)}, per_class=5)
    with pytest.raises(ValueError, match=r"1 class folder\(s\) \('only'\).*at least 2"):
        get_task(f"folder:{root}")


def test_missing_or_empty_image_folder_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        get_task(f"folder:{tmp_path / 'nope'}")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with pytest.raises(ValueError, match="holds no images"):
        get_task(f"folder:{tmp_path}")


def test_npz_with_keras_keys(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "data.npz"
    np.savez(
        path,
        x_train=rng.integers(0, 256, (50, 28, 28), dtype=np.uint8),
        y_train=rng.integers(0, 4, 50),
        x_test=rng.integers(0, 256, (20, 28, 28), dtype=np.uint8),
        y_test=np.arange(20) % 4,
    )
    task = get_task(f"npz:{path}", batch_size=8, split_rule="default")
    assert task.num_classes == 4
    # Test given; validation carved as the first 5% slice of train.
    assert task.num_test_examples == 20
    assert task.sizing.num_validation_examples_total == 2
    assert task.num_train_examples == 48
    batch = task.validation_batches({"ds_image_size": 14})[0]
    assert batch.images.shape == (2, 3, 14, 14)
    test_labels = torch.cat([b.labels for b in task.test_batches({"ds_image_size": 14})])
    assert test_labels.tolist() == (np.arange(20) % 4).tolist()


def test_npz_pool_with_float_channels_last_images(tmp_path):
    rng = np.random.default_rng(1)
    path = tmp_path / "pool.npz"
    np.savez(
        path,
        images=rng.random((100, 9, 9, 3)).astype(np.float32),
        labels=np.arange(100) % 5,
        num_classes=np.array(6),
    )
    task = get_task(f"npz:{path}", batch_size=16, split_rule="default")
    assert task.num_classes == 6
    assert (task.num_train_examples, task.num_test_examples) == (90, 5)
    assert task.source.images("train", torch.arange(3)).dtype == torch.uint8


@pytest.mark.parametrize(
    "arrays, match",
    [
        ({"a": np.zeros(3)}, "expected x_train/y_train"),
        (
            {"x_train": np.zeros((4, 5, 5), np.uint8), "y_train": np.array([0.5, 1, 0, 1])},
            "expected integers",
        ),
        (
            {"x_train": np.zeros((4, 5, 5), np.uint8), "y_train": np.array([0, 1, -1, 1])},
            "label -1",
        ),
        (
            {"x_train": np.full((4, 5, 5), 300.0), "y_train": np.array([0, 1, 0, 1])},
            r"pixel values in \[300.0, 300.0\]",
        ),
        (
            {"x_train": np.zeros((4, 5), np.uint8), "y_train": np.array([0, 1, 0, 1])},
            "expected \\(N, H, W",
        ),
    ],
)
def test_bad_npz_content_is_a_clear_error(tmp_path, arrays, match):
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    with pytest.raises(ValueError, match=match):
        get_task(f"npz:{path}")


def test_npz_object_arrays_are_refused_without_unpickling(tmp_path):
    path = tmp_path / "objects.npz"
    np.savez(path, x_train=np.array([{"a": 1}] * 4, dtype=object), y_train=np.arange(4))
    with pytest.raises(ValueError, match="pickle"):
        get_task(f"npz:{path}")


def test_carve_default_splits_matches_the_seed_slices():
    carved = carve_default_splits(200, has_test=False, has_validation=False)
    assert (len(carved["test"]), len(carved["validation"]), len(carved["train"])) == (10, 10, 180)
    union = np.concatenate(list(carved.values()))
    assert sorted(union.tolist()) == list(range(200))
    only_val = carve_default_splits(200, has_test=True, has_validation=False)
    assert set(only_val) == {"validation", "train"} and len(only_val["validation"]) == 10
    # TFDS rounds a percent boundary to the closest example: train[:5%] of 1797 is 90 examples
    # (89.85), train[5%:10%] the next 90 (179.7 -> 180).
    odd = carve_default_splits(1797, has_test=False, has_validation=False)
    assert (len(odd["test"]), len(odd["validation"]), len(odd["train"])) == (90, 90, 1617)
    assert (percent_boundary(5, 1797), percent_boundary(10, 1797)) == (90, 180)
    assert percent_boundary(5, 50) == 2  # 2.5: half to even, as Python's round (TFDS)


def save_hf(tmp_path, n_train=60, with_validation=True):
    datasets = pytest.importorskip("datasets")
    rng = np.random.default_rng(0)
    features = datasets.Features(
        {"img": datasets.Image(), "label": datasets.ClassLabel(names=["cat", "dog", "eel"])}
    )

    def split(n):
        images = [
            Image.fromarray(rng.integers(0, 256, (10, 12, 3), dtype=np.uint8)) for _ in range(n)
        ]
        return datasets.Dataset.from_dict(
            {"img": images, "label": [i % 3 for i in range(n)]}, features=features
        )

    parts = {"train": split(n_train), "test": split(9)}
    if with_validation:
        parts["validation"] = split(6)
    path = tmp_path / "hf"
    datasets.DatasetDict(parts).save_to_disk(str(path))
    return path


def test_hf_saved_dataset(tmp_path):
    path = save_hf(tmp_path)
    task = get_task(f"hf:{path}", batch_size=8)
    assert task.num_classes == 3 and task.class_names == ("cat", "dog", "eel")
    assert (task.num_train_examples, task.num_test_examples) == (60, 9)
    assert task.sizing.num_validation_examples_total == 6
    batch = next(task.train_batches({"ds_image_size": [8, 16], "ds_flip_left_right": True}))
    assert batch.images[16].shape == (8, 3, 16, 16)
    test_labels = torch.cat([b.labels for b in task.test_batches({"ds_image_size": 8})])
    assert test_labels.tolist() == [i % 3 for i in range(9)]


def test_hf_dataset_without_validation_gets_it_carved(tmp_path):
    path = save_hf(tmp_path, n_train=100, with_validation=False)
    task = get_task(f"hf:{path}", batch_size=8, split_rule="default")
    assert (task.num_train_examples, task.sizing.num_validation_examples_total) == (95, 5)


def test_hf_unknown_dataset_is_a_clear_offline_error(tmp_path):
    pytest.importorskip("datasets")
    with pytest.raises(ValueError, match="cannot load Hugging Face dataset 'no-such/dataset'"):
        get_task("hf:no-such/dataset", data_dir=tmp_path)
