import pytest

from munet.pretrain.loop import PretrainSpec


@pytest.fixture
def tiny_spec():
    """A VitCpu-shaped spec shrunk to one block on 8 px images, 5 classes, batches of 8."""
    return PretrainSpec(
        preset="VitCpu", model="mu/4", num_layers=1, image_size=8, num_classes=5, batch_size=8
    )
