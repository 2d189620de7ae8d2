"""Preprocessing runs where the images are (e.g. on a GPU in benchmarks/gpu_train.py).

No accelerator here: images on the "meta" device stand in for one, since every tensor the
pipeline makes for them must land on their device for the result to be there.
"""

import pytest
import torch

from munet.tasks.augment import AugmentConfig, preprocess

AUGMENTED = {
    "ds_image_size": [8, 16],
    "ds_area_range_min": 0.5,
    "ds_aspect_ratio_range_min": 0.75,
    "ds_flip_left_right": True,
    "ds_brightness_delta": 0.1,
    "ds_contrast_delta": 0.1,
    "ds_saturation_delta": 0.1,
    "ds_hue_delta": 0.1,
}


@pytest.mark.parametrize("train", [True, False])
def test_preprocessing_stays_on_the_images_device(train):
    images = torch.randint(0, 256, (4, 3, 24, 24), dtype=torch.uint8)
    generator = torch.Generator().manual_seed(0)
    out = preprocess(
        images.to("meta"), AugmentConfig.from_hparams(AUGMENTED), train=train, generator=generator
    )
    assert {tensor.device.type for tensor in out.values()} == {"meta"}
    assert out[16].shape == (4, 3, 16, 16)


def test_simulated_jpeg_on_an_accelerator_is_a_clear_error():
    images = torch.randint(0, 256, (2, 3, 16, 16), dtype=torch.uint8).to("meta")
    cfg = AugmentConfig.from_hparams({"ds_image_size": 16, "ds_quality_delta": 0.2})
    with pytest.raises(ValueError, match="ds_quality_delta.*CPU images only"):
        preprocess(images, cfg, train=True, generator=torch.Generator().manual_seed(0))
