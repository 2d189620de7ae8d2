"""A source whose images are decoded on demand (image files, Hugging Face rows).

Images of one source come out at one size: the size of the first training image, unless every
image already shares it. Others are resized (bilinear, aspect ratio not kept) when decoded, as
the seed's final resize to a square `ds_image_size` ignores aspect ratio anyway; `max_side`
caps that storage size for large photos. Decoded images are kept in memory up to
`cache_bytes`, so small datasets are decoded once.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import torch
from PIL import Image

from munet.tasks.sources.base import SPLITS, Source

# Reads example i of a split as a PIL image or an (H, W[, C]) uint8 array.
Decoder = Callable[[int], "Image.Image | np.ndarray"]
DEFAULT_MAX_SIDE = 256
DEFAULT_CACHE_BYTES = 1 << 30


def decode_to_storage(
    image: Image.Image | np.ndarray | str | os.PathLike[str],
    size: tuple[int, int] | None,
    where: str = "image",
) -> np.ndarray:
    """One image as (H, W, 3) uint8 RGB at the storage size `size` = (H, W) (None: as is).

    The one decoding step of every decoded source and of exported models' preprocessing, so a
    file predicted after export gets the pixels the system trained and tested on: RGB
    conversion (grey repeated, alpha dropped, palette expanded), then a PIL bilinear resize
    when the size differs.

    Raises:
        ValueError: the image cannot be read ("cannot read image WHERE: ...").
    """
    try:
        if isinstance(image, (str, os.PathLike)):
            with Image.open(image) as opened:
                opened.load()
                rgb = opened.convert("RGB")
        else:
            pil = image if isinstance(image, Image.Image) else Image.fromarray(np.asarray(image))
            pil.load()
            rgb = pil.convert("RGB")
    except Exception as error:  # PIL raises several types for bad files
        raise ValueError(f"cannot read image {where}: {error}") from error
    if size is not None:
        h, w = size
        if rgb.size != (w, h):
            rgb = rgb.resize((w, h), Image.BILINEAR)
    return np.asarray(rgb, dtype=np.uint8)


class DecodedImageSource(Source):
    """Images decoded per example by `decoders[split](index)`, labels known up front.

    Args:
        name: the task name (for messages).
        labels: split -> (N,) int64 labels.
        decoders: split -> function returning example i's image.
        describe_item: split, index -> a short name of the example for error messages
            (a file path, a dataset row).
        num_classes, class_names: the label set.
        max_side: the largest storage side; bigger first images are shrunk to it.
        cache_bytes: decoded images kept in memory up to this many bytes.
    """

    def __init__(
        self,
        name: str,
        labels: Mapping[str, torch.Tensor],
        decoders: Mapping[str, Decoder],
        describe_item: Callable[[str, int], str],
        num_classes: int,
        class_names: Sequence[str] | None = None,
        max_side: int = DEFAULT_MAX_SIDE,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
    ) -> None:
        self.name = name
        self.num_classes = int(num_classes)
        self.class_names = tuple(class_names) if class_names is not None else None
        self._labels = {s: labels[s] for s in SPLITS}
        self._decoders = dict(decoders)
        self._describe_item = describe_item
        self._max_side = max_side
        self._size: tuple[int, int] | None = None  # (H, W) of every image
        self._channels = 3
        self._cache: dict[tuple[str, int], np.ndarray] = {}
        self._cache_left = cache_bytes

    def labels(self, split: str) -> torch.Tensor:
        return self._labels[split]

    def storage_size(self) -> tuple[int, int]:
        """(H, W) every image is decoded to: the first training image's, capped at max_side."""
        if self._size is None:
            if self.num_examples("train") == 0:
                raise ValueError(f"task {self.name!r}: split 'train' is empty")
            first = self._decode("train", 0, resize=False)
            h, w = first.shape[:2]
            scale = min(1.0, self._max_side / max(h, w))
            self._size = (max(1, round(h * scale)), max(1, round(w * scale)))
        return self._size

    def _decode(self, split: str, index: int, resize: bool = True) -> np.ndarray:
        try:
            item = self._decoders[split](index)
        except Exception as error:  # PIL raises several types for bad files
            where = self._describe_item(split, index)
            raise ValueError(f"task {self.name!r}: cannot read image {where}: {error}") from error
        size = self.storage_size() if resize else None
        where = f"{self._describe_item(split, index)} of task {self.name!r}"
        return decode_to_storage(item, size, where=where)

    def images(self, split: str, indices: torch.Tensor) -> torch.Tensor:
        h, w = self.storage_size()
        out = np.empty((len(indices), h, w, 3), dtype=np.uint8)
        for row, index in enumerate(indices.tolist()):
            key = (split, index)
            image = self._cache.get(key)
            if image is None:
                image = self._decode(split, index)
                if self._cache_left >= image.nbytes:
                    self._cache[key] = image
                    self._cache_left -= image.nbytes
            out[row] = image
        return torch.from_numpy(out).permute(0, 3, 1, 2)
