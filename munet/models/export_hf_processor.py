"""munet's evaluation preprocessing as a transformers image processor.

`munet export --format hf` copies this file into the folder as `image_processing_munet.py` and
names it in `preprocessor_config.json` (`auto_map`), so

    AutoImageProcessor.from_pretrained(FOLDER, trust_remote_code=True)

gives the pixel values `munet predict` gives for any image: convert to RGB (grey repeated,
alpha dropped, palette expanded: PIL's `convert("RGB")`), resize to the task's storage size
(PIL bilinear) when the size differs, resize to the model's image size with bilinear
interpolation at half-pixel centres and no antialiasing (`tf.image.resize`, torch's
`interpolate(..., align_corners=False)`), then x / 255 * 2 - 1 clipped to [-1, 1]. Without
`trust_remote_code=True` transformers uses the stock `ViTImageProcessor` the same config
describes: one PIL bilinear resize, equal to munet's only when the storage size is the image
size (docs/export.md says how far apart they are otherwise).

The file is self-contained: it imports numpy, Pillow, torch and transformers, never munet.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from transformers import BatchFeature
from transformers.image_processing_utils import BaseImageProcessor


class MunetImageProcessor(BaseImageProcessor):
    """munet's two-step evaluation resize (see the module docstring).

    Args:
        size: {"height": S, "width": S}, the model's image size (the stock processor's key).
        storage_size: [H, W] the task's source stored images at; None: no such step.
    """

    model_input_names = ["pixel_values"]

    def __init__(
        self,
        size: dict[str, int] | None = None,
        storage_size: list[int] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if not size or size.get("height") != size.get("width"):
            raise ValueError(f"size={size!r}: expected {{'height': S, 'width': S}}")
        self.size = {"height": int(size["height"]), "width": int(size["width"])}
        if storage_size is not None and len(storage_size) != 2:
            raise ValueError(f"storage_size={storage_size!r}: expected [height, width] or None")
        self.storage_size = [int(s) for s in storage_size] if storage_size else None

    def __call__(self, images: Any, **kwargs: Any) -> BatchFeature:
        return self.preprocess(images, **kwargs)

    def preprocess(
        self, images: Any, return_tensors: str | None = None, **kwargs: Any
    ) -> BatchFeature:
        """Pixel values for one image or a list: PIL images, file paths or uint8 arrays
        (H, W), (H, W, 3) or (H, W, 4), of any size and mode.

        Returns:
            BatchFeature with `pixel_values` float32 (N, 3, S, S) in [-1, 1] (a torch tensor
            for return_tensors="pt", else a numpy array).
        """
        if not isinstance(images, (list, tuple)):
            images = [images]
        if not images:
            raise ValueError("no images to preprocess")
        pixel_values = torch.cat([self._pixel_values(image) for image in images])
        data = {"pixel_values": pixel_values if return_tensors == "pt" else pixel_values.numpy()}
        return BatchFeature(data=data)

    def _pixel_values(self, image: Any) -> torch.Tensor:
        rgb = _rgb(image)
        if self.storage_size is not None:
            height, width = self.storage_size
            if rgb.size != (width, height):
                rgb = rgb.resize((width, height), Image.BILINEAR)
        x = torch.from_numpy(np.asarray(rgb, dtype=np.uint8).copy())
        x = x.permute(2, 0, 1)[None].to(torch.float32)  # (1, 3, H, W), 0..255
        side = self.size["height"]
        if x.shape[-2:] != (side, side):
            x = F.interpolate(x, size=(side, side), mode="bilinear", align_corners=False)
        # munet's order of operations, so the values match its own to the last bit.
        return torch.clamp(x * (1.0 / 255.0) * 2.0 - 1.0, -1.0, 1.0)


def _rgb(image: Any) -> Image.Image:
    """PIL's RGB conversion of a PIL image, a file path or a uint8 array."""
    if isinstance(image, (str, os.PathLike)):
        with Image.open(image) as opened:
            opened.load()
            return opened.convert("RGB")
    if isinstance(image, Image.Image):
        image.load()
        return image.convert("RGB")
    array = np.asarray(image)
    channels_last = array.ndim == 3 and array.shape[-1] in (3, 4)
    if array.dtype != np.uint8 or not (array.ndim == 2 or channels_last):
        raise ValueError(
            f"an image of type {type(image).__name__}, dtype {array.dtype}, shape "
            f"{array.shape}: expected a PIL image, a file path or a uint8 (H, W), (H, W, 3) "
            "or (H, W, 4) array"
        )
    return Image.fromarray(array).convert("RGB")
