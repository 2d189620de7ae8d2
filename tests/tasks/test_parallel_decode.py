import threading

import numpy as np
import pytest
import torch
from PIL import Image

from munet.tasks.sources.decoded import DecodedImageSource


def jpeg_source(tmp_path, count=24, decode_workers=0, seen=None):
    rng = np.random.default_rng(0)
    files = []
    for i in range(count):
        pixels = rng.integers(0, 256, size=(20, 24, 3), dtype=np.uint8)
        path = tmp_path / f"{i:03d}.jpg"
        Image.fromarray(pixels).save(path, quality=90)
        files.append(path)

    def decode(index):
        if seen is not None:
            seen.add(threading.current_thread().name)
        return Image.open(files[index])

    labels = torch.arange(count) % 2
    return DecodedImageSource(
        "jpegs",
        labels={"train": labels, "validation": labels[:4], "test": labels[:4]},
        decoders={"train": decode, "validation": decode, "test": decode},
        describe_item=lambda split, index: str(files[index]),
        num_classes=2,
        decode_workers=decode_workers,
    )


def test_parallel_decoding_equals_decoding_one_by_one(tmp_path):
    seen = set()
    parallel = jpeg_source(tmp_path, decode_workers=3, seen=seen)
    serial = jpeg_source(tmp_path, decode_workers=1)
    # Index 5 twice (a batch across an epoch boundary) and a cached index on the second call.
    indices = torch.tensor([3, 5, 0, 7, 9, 11, 13, 5, 15, 17, 19, 21, 23])
    expected = serial.images("train", indices)
    assert torch.equal(parallel.images("train", indices), expected)
    assert any(name.startswith("munet-decode") for name in seen)  # worker threads decoded
    assert torch.equal(parallel.images("train", indices.flip(0)), expected.flip(0))


def test_negative_decode_workers_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="decode_workers must be >= 0"):
        jpeg_source(tmp_path, count=2, decode_workers=-1)
