"""Bad data is refused when a task is built, before any work, with a message that says what is
wrong (issue 25): non-finite pixels, labels no class count could hold, files that are not npz
archives, and every unreadable file of an image folder (or left out on request)."""

import zipfile

import numpy as np
import pytest
import torch
from PIL import Image

from munet.tasks import get_task
from munet.tasks.sources.base import MAX_NUM_CLASSES
from munet.tasks.sources.imagefolder import BAD_FILES_SHOWN, BadImageFilesError, load_image_folder


def _npz(path, images=None, labels=None, **extra):
    rng = np.random.default_rng(0)
    images = rng.random((40, 6, 6)).astype(np.float32) if images is None else images
    labels = np.arange(40) % 4 if labels is None else labels
    np.savez(path, x=images, y=labels, **extra)
    return path


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_pixels_are_refused(tmp_path, bad):
    images = np.random.default_rng(0).random((40, 6, 6)).astype(np.float32)
    images[7, 2, 3] = bad
    path = _npz(tmp_path / "bad.npz", images=images)
    with pytest.raises(
        ValueError, match=r"1 pixel values are NaN or infinite \(the first in image 7\)"
    ):
        get_task(f"npz:{path}", cache=False)


def test_a_huge_label_is_refused_before_anything_is_allocated(tmp_path):
    labels = np.arange(40) % 4
    labels[5] = 2**40
    path = _npz(tmp_path / "huge.npz", labels=labels)
    with pytest.raises(
        ValueError,
        match=rf"label 1099511627776 \(example 5\); expected labels in \[0, {MAX_NUM_CLASSES}\)",
    ):
        get_task(f"npz:{path}", cache=False)


def test_a_huge_num_classes_is_refused(tmp_path):
    path = _npz(tmp_path / "classes.npz", num_classes=np.array(10**9))
    with pytest.raises(
        ValueError, match=r"1000000000 classes \(the file's num_classes\); expected 2 to"
    ):
        get_task(f"npz:{path}", cache=False)
    path = _npz(tmp_path / "one.npz", labels=np.zeros(40, np.int64))
    with pytest.raises(ValueError, match=r"1 classes \(the largest label 0 \+ 1\)"):
        get_task(f"npz:{path}", cache=False)


def _write(path, data: bytes):
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    "make, said",
    [
        (
            lambda p: _write(p, b"hello, these are not arrays\n"),
            "is a text file (it starts 'hello, these",
        ),
        (lambda p: _write(p, b""), "is empty (0 bytes)"),
        (lambda p: Image.new("RGB", (4, 4)).save(p, format="PNG") or p, "is a PNG image"),
        (lambda p: Image.new("RGB", (4, 4)).save(p, format="JPEG") or p, "is a JPEG image"),
        (lambda p: np.save(open(p, "wb"), np.zeros(3)) or p, "is a single NumPy array (.npy)"),
        (lambda p: _write(p, b"\x80\x04\x95 pickled"), "is a Python pickle"),
        (
            lambda p: _write(p, bytes(range(200, 256))),
            "not a zip archive (it starts with bytes c8 c9",
        ),
    ],
)
def test_a_file_that_is_no_npz_is_named_for_what_it_is(tmp_path, make, said):
    path = make(tmp_path / "data.npz")
    with pytest.raises(ValueError) as raised:
        get_task(f"npz:{path}", cache=False)
    assert said in str(raised.value)
    assert "allow_pickle" not in str(raised.value) and "pickled" not in str(raised.value)


def test_a_zip_of_other_files_and_a_damaged_archive(tmp_path):
    path = tmp_path / "notes.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("a.txt", "hi")
    with pytest.raises(ValueError, match="is a zip archive of a.txt but holds no NumPy arrays"):
        get_task(f"npz:{path}", cache=False)
    good = _npz(tmp_path / "good.npz")
    cut = _write(tmp_path / "cut.npz", good.read_bytes()[:400])
    with pytest.raises(ValueError, match="cut.npz"):
        get_task(f"npz:{cut}", cache=False)


def test_object_arrays_still_say_no_pickle(tmp_path):
    path = tmp_path / "objects.npz"
    np.savez(path, x=np.array([{"a": 1}] * 4, dtype=object), y=np.arange(4))
    with pytest.raises(
        ValueError, match="array 'x' holds Python objects; only plain numeric arrays are read"
    ):
        get_task(f"npz:{path}", cache=False)


def _folder(root, per_class=12):
    rng = np.random.default_rng(0)
    for name in ("cat", "dog"):
        (root / name).mkdir(parents=True)
        for i in range(per_class):
            pixels = rng.integers(0, 255, size=(8, 8, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(root / name / f"{i:02d}.{'jpg' if i % 2 else 'png'}")
    return root


def test_every_bad_file_of_a_folder_is_named_at_once(tmp_path):
    root = _folder(tmp_path / "data")
    empty = _write(root / "cat" / "03.jpg", b"")
    jpeg = root / "dog" / "05.jpg"
    _write(jpeg, jpeg.read_bytes()[:100])  # a truncated JPEG
    text = _write(root / "dog" / "10.png", b"not an image")
    with pytest.raises(BadImageFilesError) as raised:
        load_image_folder(root)
    message = str(raised.value)
    assert "3 of 24 image files cannot be read" in message
    assert f"{empty}: empty file (0 bytes)" in message
    assert f"{jpeg}: " in message and f"{text}: cannot identify image file" in message
    assert "--skip-bad-files" in message
    assert {p for p, _ in raised.value.bad} == {empty, jpeg, text}


def test_many_bad_files_show_the_first_few_and_a_count(tmp_path):
    root = _folder(tmp_path / "data", per_class=20)
    for i in range(BAD_FILES_SHOWN + 5):
        _write(root / "cat" / f"{i:02d}.{'jpg' if i % 2 else 'png'}", b"")
    with pytest.raises(BadImageFilesError, match="; and 5 more") as raised:
        load_image_folder(root)
    assert str(raised.value).count("empty file (0 bytes)") == BAD_FILES_SHOWN
    assert len(raised.value.bad) == BAD_FILES_SHOWN + 5


def test_skip_bad_files_leaves_them_out_and_keeps_every_good_files_split(tmp_path):
    clean = load_image_folder(_folder(tmp_path / "clean", per_class=30))
    splits = ("train", "validation", "test")
    clean_names = {
        s: {clean._describe_item(s, i).split("clean/")[1] for i in range(clean.num_examples(s))}
        for s in splits
    }
    root = _folder(tmp_path / "data", per_class=30)
    # One bad file in each split.
    bad = {sorted(clean_names[s])[0] for s in splits}
    for name in bad:
        _write(root / name, b"" if name.endswith("png") else b"\xff\xd8\xff broken")
    with pytest.raises(BadImageFilesError, match="3 of 60 image files"):
        load_image_folder(root)
    with pytest.warns(UserWarning, match="3 of 60 image files cannot be read.*leaving them out"):
        task = get_task(
            "pets",
            data=f"folder:{root}",
            skip_bad_files=True,
            cache=False,
            split_rule="default",
        )
    source = task.source
    # A good file's split is the one it has in the same folder without bad files.
    for split in splits:
        names = {
            source._describe_item(split, i).split("data/")[1]
            for i in range(source.num_examples(split))
        }
        assert names == clean_names[split] - bad
        count = source.num_examples(split)
        assert source.images(split, torch.arange(count)).shape[0] == count


def test_any_source_with_too_many_classes_is_refused():
    from munet.tasks.sources.base import ArraySource, SplitArrays
    from munet.tasks.task import Task

    arrays = SplitArrays(torch.zeros(4, 3, 2, 2, dtype=torch.uint8), torch.tensor([0, 1, 0, 1]))
    source = ArraySource("wide", dict.fromkeys(("train", "validation", "test"), arrays), 10**6)
    with pytest.raises(ValueError, match=r"has 1000000 classes; at most 100000"):
        Task(
            "wide",
            source,
            batch_size=2,
            num_train_examples_between_validations_max=4,
            num_validation_examples_max=4,
        )
