"""Class predictions of an exported model for image files, in batches.

`collect_images` expands folders into their image files; `predict_files` decodes each file
(any size and mode: grey, RGBA, palette), runs the model batch by batch and yields the top-k
classes with their probabilities. A file that cannot be read is reported and skipped; the rest
go on.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from munet.models.export import Preprocessing

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".ppm", ".tif", ".tiff")


@dataclass(frozen=True)
class Prediction:
    """The top-k classes of one image.

    Attributes:
        file: the image file.
        classes: class indices, most probable first.
        names: their names (the index as text when the model has no class names).
        probabilities: their softmax probabilities.
    """

    file: str
    classes: tuple[int, ...]
    names: tuple[str, ...]
    probabilities: tuple[float, ...]


def collect_images(inputs: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """Files named directly (any extension) plus the image files under folders (recursively,
    sorted, by extension), in the order given.

    Raises:
        FileNotFoundError: an input that does not exist.
    """
    files: list[Path] = []
    for item in inputs:
        path = Path(item).expanduser()
        if path.is_dir():
            files += sorted(
                p for p in path.rglob("*")
                if p.is_file() and p.suffix.lower() in IMAGE_EXTENSIONS
            )  # fmt: skip
        elif path.exists():
            files.append(path)
        else:
            raise FileNotFoundError(f"no such file or folder: {str(path)!r}")
    return files


def predict_files(
    model: torch.nn.Module,
    preprocess: Preprocessing,
    files: Sequence[str | os.PathLike[str]],
    *,
    top_k: int = 1,
    batch_size: int = 64,
    class_names: Sequence[str] | None = None,
    on_error: Callable[[str, str], None] | None = None,
    on_batch: Callable[[int], None] | None = None,
    device: torch.device | str = "cpu",
) -> Iterator[Prediction]:
    """Predicts the classes of image files, batch by batch.

    Args:
        model: the exported module (`load_exported`).
        preprocess: its preprocessing.
        files: image files.
        top_k: classes per image (capped at the class count).
        batch_size: images per forward pass.
        class_names: names of the classes (default: the indices as text).
        on_error: called with (file, message) for a file that cannot be read; it is skipped.
        on_batch: called with the number of files handled after each batch (progress).
        device: where to run the model.

    Yields:
        One `Prediction` per readable file, in input order.
    """
    if top_k < 1:
        raise ValueError(f"top_k={top_k}; expected >= 1")
    if batch_size < 1:
        raise ValueError(f"batch_size={batch_size}; expected >= 1")
    model = model.to(device)
    for start in range(0, len(files), batch_size):
        chunk = [str(f) for f in files[start : start + batch_size]]
        arrays: list[np.ndarray] = []
        readable: list[str] = []
        for file in chunk:
            try:
                arrays.append(preprocess.load_image(file))
                readable.append(file)
            except ValueError as error:
                if on_error is not None:
                    on_error(file, str(error))
        if arrays:
            yield from _predict_arrays(
                model, preprocess, arrays, readable, top_k, class_names, device
            )
        if on_batch is not None:
            on_batch(len(chunk))


def file_logits(
    model: torch.nn.Module,
    preprocess: Preprocessing,
    files: Sequence[str | os.PathLike[str]],
    *,
    batch_size: int = 64,
    device: torch.device | str = "cpu",
) -> torch.Tensor:
    """The logits `predict_files` ranks, for every file (what other runtimes are checked
    against: `munet.models.export_check`).

    Returns:
        float32 (len(files), num_classes), in input order.

    Raises:
        ValueError: a file that cannot be read, naming it.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size={batch_size}; expected >= 1")
    model = model.to(device)
    rows: list[torch.Tensor] = []
    for start in range(0, len(files), batch_size):
        arrays = [preprocess.load_image(str(f)) for f in files[start : start + batch_size]]
        rows.append(_array_logits(model, preprocess, arrays, device))
    if not rows:
        raise ValueError("no image files")
    return torch.cat(rows)


def _array_logits(
    model: torch.nn.Module,
    preprocess: Preprocessing,
    arrays: list[np.ndarray],
    device: torch.device | str,
) -> torch.Tensor:
    """float32 logits (len(arrays), classes) in order; arrays of one shape share a batch."""
    groups: dict[tuple[int, ...], list[int]] = {}
    for index, array in enumerate(arrays):  # one group unless there is no storage size
        groups.setdefault(array.shape, []).append(index)
    parts: list[torch.Tensor] = []
    order: list[int] = []
    for indices in groups.values():
        batch = torch.from_numpy(np.stack([arrays[i] for i in indices])).permute(0, 3, 1, 2)
        inputs = preprocess(batch)
        if isinstance(inputs, dict):
            inputs = {size: images.to(device) for size, images in inputs.items()}
        else:
            inputs = inputs.to(device)
        with torch.inference_mode():
            parts.append(model(inputs).float().cpu())
        order += indices
    return torch.cat(parts)[torch.argsort(torch.tensor(order))]


def _predict_arrays(
    model: torch.nn.Module,
    preprocess: Preprocessing,
    arrays: list[np.ndarray],
    files: list[str],
    top_k: int,
    class_names: Sequence[str] | None,
    device: torch.device | str,
) -> Iterator[Prediction]:
    probabilities = _array_logits(model, preprocess, arrays, device).softmax(dim=-1)
    k = min(top_k, probabilities.shape[-1])
    values, classes = probabilities.topk(k, dim=-1)
    for row, file in enumerate(files):
        ids = tuple(int(c) for c in classes[row])
        names = tuple(class_names[c] if class_names else str(c) for c in ids)
        probs = tuple(float(v) for v in values[row])
        yield Prediction(file, ids, names, probs)
