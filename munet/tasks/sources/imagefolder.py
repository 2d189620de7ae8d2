"""`folder:ROOT`: an image-folder tree on disk.

Two layouts:

- `ROOT/<class>/<image>`: one pool, split by the seed's default rule (test, then validation,
  each the next 5% of the pool after a fixed shuffle; train the rest).
- `ROOT/train/<class>/<image>` with optional `ROOT/validation/` (or `val/`) and `ROOT/test/`
  trees: missing splits are carved from train by the same rule.

Classes are the sorted sub-folder names of the train tree; files with the extensions in
`IMAGE_EXTENSIONS` (case-insensitive) are images, other files are ignored. A broken symbolic
link is never skipped unseen: with an image's name it is a file that cannot be read (below),
where a class folder would be it is refused.

Every image file is checked once, before any work: it must be non-empty and decode (the same
decoding training uses). The bad ones are named together (the first `BAD_FILES_SHOWN` and a
count), so a user fixes them in one go; `skip_bad_files=True` (`munet run --skip-bad-files`)
goes on without them, with a warning. Splits are carved over every file first and bad files
dropped after, so a good file's split never depends on which other files are bad.
"""

from __future__ import annotations

import os
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import torch

from munet.cpus import usable_cpu_count
from munet.tasks.sources.base import carve_default_splits
from munet.tasks.sources.decoded import (
    DEFAULT_CACHE_BYTES,
    DEFAULT_MAX_SIDE,
    DecodedImageSource,
    decode_to_storage,
)

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".ppm", ".tif", ".tiff")
BAD_FILES_SHOWN = 10
_SPLIT_DIRS = {"train": ("train",), "validation": ("validation", "val"), "test": ("test",)}


def _broken_link(path: Path) -> bool:
    """Whether `path` is a symbolic link that leads nowhere (its target is missing, or a loop)."""
    return path.is_symlink() and not path.exists()


def _class_dirs(root: Path) -> list[Path]:
    """The class folders under `root`.

    Raises:
        ValueError: an entry there is a broken symbolic link: it may be a class folder, and
            leaving it out would change the task's classes.
    """
    entries = sorted(p for p in root.iterdir() if not p.name.startswith("."))
    broken = [p for p in entries if _broken_link(p)]
    if broken:
        named = ", ".join(f"{str(p)!r} -> {os.readlink(p)!r}" for p in broken)
        raise ValueError(
            f"image folder {str(root)!r}: broken symbolic link(s) where class folders are: "
            f"{named}; fix or remove them"
        )
    return [p for p in entries if p.is_dir()]


def _list_images(class_dir: Path) -> list[Path]:
    """The image files under a class folder; a broken link with an image's name is listed
    too, so that it is named as a file that cannot be read rather than skipped unseen."""
    return sorted(
        p
        for p in class_dir.rglob("*")
        if p.suffix.lower() in IMAGE_EXTENSIONS and (p.is_file() or _broken_link(p))
    )


def _scan(tree: Path, class_names: list[str], where: str) -> tuple[list[Path], list[int]]:
    files: list[Path] = []
    labels: list[int] = []
    index = {name: i for i, name in enumerate(class_names)}
    for class_dir in _class_dirs(tree):
        if class_dir.name not in index:
            raise ValueError(
                f"{where}: class folder {class_dir.name!r} is not a class of the train tree "
                f"({', '.join(class_names)})"
            )
        images = _list_images(class_dir)
        files.extend(images)
        labels.extend([index[class_dir.name]] * len(images))
    return files, labels


class BadImageFilesError(ValueError):
    """Image files of a folder source that cannot be read; `bad` holds (file, reason) pairs."""

    def __init__(self, message: str, bad: list[tuple[Path, str]]) -> None:
        super().__init__(message)
        self.bad = bad


def _file_problem(path: Path) -> str | None:
    """Why `path` is no usable image (None: it decodes)."""
    if _broken_link(path):
        return f"a broken symbolic link (to {os.readlink(path)!r})"
    try:
        if path.stat().st_size == 0:
            return "empty file (0 bytes)"
        decode_to_storage(path, None, where=str(path))
    except (OSError, ValueError) as error:
        reason = str(error.__cause__ or error)  # PIL's words, without the path we name
        reason = reason.replace(f" {str(path)!r}", "").replace(str(path), "").strip(" :")
        return reason or type(error).__name__
    return None


def find_bad_image_files(files: list[Path], workers: int = 0) -> list[tuple[Path, str]]:
    """Decodes every file once (in `workers` threads; 0: the usable cores) and returns the
    bad ones with why, in the order given."""
    workers = workers or usable_cpu_count()
    if workers <= 1 or len(files) < 2:
        problems = [_file_problem(f) for f in files]
    else:
        with ThreadPoolExecutor(min(workers, len(files)), "munet-check") as pool:
            problems = list(pool.map(_file_problem, files))
    return [(f, p) for f, p in zip(files, problems, strict=True) if p is not None]


def _describe_bad_files(root: Path, bad: list[tuple[Path, str]], total: int) -> str:
    shown = "; ".join(f"{f}: {why}" for f, why in bad[:BAD_FILES_SHOWN])
    more = f"; and {len(bad) - BAD_FILES_SHOWN} more" if len(bad) > BAD_FILES_SHOWN else ""
    return (
        f"image folder {str(root)!r}: {len(bad)} of {total} image files cannot be read: "
        f"{shown}{more}"
    )


def load_image_folder(
    root: str | Path,
    max_side: int = DEFAULT_MAX_SIDE,
    cache_bytes: int = DEFAULT_CACHE_BYTES,
    decode_workers: int = 0,
    skip_bad_files: bool = False,
) -> DecodedImageSource:
    """Builds the source of an image-folder tree (see the module docstring).

    ``decode_workers`` threads decode a batch's uncached images (0: the usable cores).

    Args:
        skip_bad_files: leave out files that cannot be read (empty, corrupt, not an image),
            with one warning naming them, instead of refusing the folder.

    Raises:
        BadImageFilesError: files that cannot be read (without `skip_bad_files`), every one
            checked and the first `BAD_FILES_SHOWN` named.
        ValueError: a missing root, fewer than 2 class folders, no images, a validation /
            test class folder the train tree lacks, or a broken symbolic link where a class
            or split folder would be.
    """
    root = Path(root).expanduser()
    name = f"folder:{root}"
    if not root.is_dir():
        raise ValueError(f"image folder {str(root)!r} does not exist or is not a directory")
    split_trees = {}
    for split, dirnames in _SPLIT_DIRS.items():
        for dirname in dirnames:
            if _broken_link(root / dirname):  # else the split would be carved from train
                raise ValueError(
                    f"image folder {str(root)!r}: {dirname!r} is a broken symbolic link (to "
                    f"{os.readlink(root / dirname)!r}); fix or remove it"
                )
            if (root / dirname).is_dir():
                split_trees[split] = root / dirname
                break
    train_tree = split_trees.get("train", root)
    class_names = [p.name for p in _class_dirs(train_tree)]
    if len(class_names) < 2:
        found = f" ({class_names[0]!r})" if class_names else ""
        raise ValueError(
            f"image folder {str(train_tree)!r} has {len(class_names)} class folder(s){found}; "
            "a classification task needs at least 2 (ROOT/<class>/<image files>)"
        )
    pool_files, pool_labels = _scan(train_tree, class_names, str(train_tree))
    if not pool_files:
        raise ValueError(
            f"image folder {str(train_tree)!r} holds no images ({', '.join(IMAGE_EXTENSIONS)})"
        )
    files: dict[str, list[Path]] = {}
    labels: dict[str, list[int]] = {}
    for split in ("validation", "test"):
        if split in split_trees:
            files[split], labels[split] = _scan(split_trees[split], class_names, str(root))
    carved = carve_default_splits(
        len(pool_files), has_test="test" in files, has_validation="validation" in files
    )
    for split, idx in carved.items():
        files[split] = [pool_files[i] for i in idx]
        labels[split] = [pool_labels[i] for i in idx]
    everything = [f for split in ("train", "validation", "test") for f in files[split]]
    bad = find_bad_image_files(everything, decode_workers)
    if bad:
        message = _describe_bad_files(root, bad, len(everything))
        if not skip_bad_files:
            raise BadImageFilesError(
                f"{message}. Fix or remove them, or leave them out with --skip-bad-files "
                "(munet run) / skip_bad_files=True",
                bad,
            )
        warnings.warn(f"{message}; leaving them out (--skip-bad-files)", stacklevel=2)
        unreadable = {f for f, _ in bad}
        for split in files:
            kept = [i for i, f in enumerate(files[split]) if f not in unreadable]
            files[split] = [files[split][i] for i in kept]
            labels[split] = [labels[split][i] for i in kept]

    def decoder(split: str):
        return lambda i: _open(files[split][i])

    source = DecodedImageSource(
        name,
        labels={s: torch.tensor(np.asarray(v, dtype=np.int64)) for s, v in labels.items()},
        decoders={s: decoder(s) for s in files},
        describe_item=lambda split, i: str(files[split][i]),
        num_classes=len(class_names),
        class_names=class_names,
        max_side=max_side,
        cache_bytes=cache_bytes,
        decode_workers=decode_workers,
    )
    source.carved_splits = tuple(s for s in ("test", "validation") if s in carved)
    return source


def _open(path: Path):
    from PIL import Image

    return Image.open(path)
