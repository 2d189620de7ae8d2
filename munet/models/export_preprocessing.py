"""The preprocessing of an exported model: images of any size and mode to its inputs.

The evaluation pipeline of `munet.tasks`, step for step: RGB conversion, the PIL bilinear
resize to the storage size the task's source kept images at, the `tf.image.resize` bilinear
resize to the model's image size, and the mapping to [-1, 1].
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch


@dataclass(frozen=True)
class Preprocessing:
    """Turns images into the model's input, exactly as the task pipeline evaluated them.

    Attributes:
        image_size: the `ds_image_size` hparam: an int, or a list of sizes (the model then
            takes {size: images}).
        storage_size: (H, W) the task's source stored images at; inputs of another size are
            first resized to it (PIL bilinear), as the source did. None: no such step.
    """

    image_size: int | list[int]
    storage_size: tuple[int, int] | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "image_size": self.image_size,
            "storage_size": list(self.storage_size) if self.storage_size else None,
            "steps": [
                "convert to RGB (grey repeated, alpha dropped, palette expanded)",
                "resize to storage_size (H, W), PIL bilinear, when the size differs",
                "resize to image_size: bilinear, half-pixel centres, no antialiasing "
                "(tf.image.resize)",
                "x / 127.5 - 1, clipped to [-1, 1]",
            ],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Preprocessing:
        size = data["image_size"]
        storage = data.get("storage_size")
        return cls(
            image_size=[int(s) for s in size] if isinstance(size, list) else int(size),
            storage_size=(int(storage[0]), int(storage[1])) if storage else None,
        )

    def load_image(self, image: Any) -> np.ndarray:
        """One image (a PIL image, a file path, or an (H, W[, C]) uint8 array) as an
        (H, W, 3) uint8 array at the storage size.

        Raises:
            ValueError: the image cannot be read, naming it.
        """
        from munet.tasks.sources.decoded import decode_to_storage

        return decode_to_storage(image, self.storage_size, where=_describe(image))

    def __call__(self, images: Sequence[Any] | torch.Tensor) -> torch.Tensor | dict:
        """A batch of model inputs.

        Args:
            images: PIL images, file paths or uint8 arrays (each of any size and mode), or a
                uint8 (N, C, H, W) tensor already at the storage size.

        Returns:
            float32 (N, 3, S, S) in [-1, 1], or {S: ...} for a list `image_size`.
        """
        from munet.tasks.augment import AugmentConfig, preprocess

        if isinstance(images, torch.Tensor):
            batch = images
        else:
            arrays = [self.load_image(image) for image in images]
            if not arrays:
                raise ValueError("no images to preprocess")
            shapes = {a.shape for a in arrays}
            if len(shapes) > 1:
                raise ValueError(
                    f"images of several sizes {sorted(shapes)} without a storage size; "
                    "preprocess them one at a time"
                )
            batch = torch.from_numpy(np.stack(arrays)).permute(0, 3, 1, 2)
        config = AugmentConfig.from_hparams({"ds_image_size": self.image_size})
        return preprocess(batch, config, train=False)


def _describe(image: Any) -> str:
    if isinstance(image, (str, os.PathLike)):
        return str(image)
    return type(image).__name__
