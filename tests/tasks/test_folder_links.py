"""A broken symbolic link in an image folder is never skipped unseen (issue 52 item 3): with an
image's name it is a file that cannot be read, named with where it points (an error, or with
`skip_bad_files` a warning); where a class or split folder would be, it is refused. Links that
lead to an image still count as images."""

import os

import numpy as np
import pytest
from PIL import Image

from munet.tasks.sources.imagefolder import BadImageFilesError, load_image_folder


def _folder(root, per_class=10):
    rng = np.random.default_rng(0)
    for name in ("cat", "dog"):
        (root / name).mkdir(parents=True)
        for i in range(per_class):
            pixels = rng.integers(0, 255, size=(8, 8, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(root / name / f"{i:02d}.png")
    return root


def _count(source):
    return sum(source.num_examples(s) for s in ("train", "validation", "test"))


def test_a_broken_link_with_an_images_name_is_named_as_a_bad_file(tmp_path):
    root = _folder(tmp_path / "data")
    dangling = root / "cat" / "99.png"
    os.symlink("gone.png", dangling)
    looping = root / "dog" / "loop.jpg"
    os.symlink("loop.jpg", looping)
    (root / "dog" / "notes.txt").symlink_to("gone.txt")  # not an image's name: ignored
    with pytest.raises(BadImageFilesError) as raised:
        load_image_folder(root)
    message = str(raised.value)
    assert "2 of 22 image files cannot be read" in message
    assert f"{dangling}: a broken symbolic link (to 'gone.png')" in message
    assert f"{looping}: a broken symbolic link (to 'loop.jpg')" in message
    assert {p for p, _ in raised.value.bad} == {dangling, looping}

    with pytest.warns(UserWarning, match=r"2 of 22 image files cannot be read: .*99\.png: a "
                      r"broken symbolic link .*leaving them out"):  # fmt: skip
        source = load_image_folder(root, skip_bad_files=True)
    assert _count(source) == 20


def test_a_link_to_an_image_is_an_image(tmp_path):
    root = _folder(tmp_path / "data")
    (root / "cat" / "linked.png").symlink_to(root / "dog" / "00.png")
    assert _count(load_image_folder(root)) == 21


def test_a_broken_link_where_a_class_folder_would_be_is_refused(tmp_path):
    root = _folder(tmp_path / "data")
    (root / "bird").symlink_to(tmp_path / "elsewhere" / "bird")
    with pytest.raises(ValueError, match=r"broken symbolic link\(s\) where class folders are: "
                       rf"'{root / 'bird'}' -> '{tmp_path / 'elsewhere' / 'bird'}'"):  # fmt: skip
        load_image_folder(root)


def test_a_broken_link_where_a_split_folder_would_be_is_refused(tmp_path):
    root = tmp_path / "data"
    _folder(root / "train")
    (root / "validation").symlink_to("/nonexistent/validation")
    with pytest.raises(ValueError, match="'validation' is a broken symbolic link \\(to "
                       "'/nonexistent/validation'\\)"):  # fmt: skip
        load_image_folder(root)
