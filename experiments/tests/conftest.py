"""The lab's tests: every one is marked ``experiments``.

The default ``make test`` deselects them (``-m "not slow and not experiments"``): they exercise
the scripts that chose the shipped roots and defaults, not the product. CI (``make test
TEST_ARGS=``, .ci/run) runs them with everything else.
"""

from pathlib import Path

import pytest
import torch

from munet.pretrain.loop import PretrainSpec

HERE = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    # First, so that `-m` (applied by pytest's own hook of this name) sees the mark.
    for item in items:
        if HERE in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.experiments)


@pytest.fixture
def tiny_spec():
    """A VitCpu-shaped spec shrunk to one block on 8 px images, 5 classes, batches of 8."""
    return PretrainSpec(
        preset="VitCpu", model="mu/4", num_layers=1, image_size=8, num_classes=5, batch_size=8
    )


@pytest.fixture
def restore_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)
