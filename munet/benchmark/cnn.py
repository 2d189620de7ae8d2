"""The small CNN trained from scratch: what a user would pick instead of a pretrained system.

Shared by ``munet benchmark`` (method ``cnn``) and ``benchmarks/own_data_vs_cnn.py``.
"""

from __future__ import annotations

from torch import nn

CNN_CHANNELS = (16, 32, 64, 56)


def small_cnn(num_classes: int) -> nn.Sequential:
    """4 x (3x3 conv, batch norm, ReLU, 2x2 max pool) of 16, 32, 64, 56 channels, global
    average pooling and a linear head: about 56k parameters (for 5 classes).

    Args:
        num_classes: outputs of the linear head.

    Returns:
        The model (PyTorch's default initialisation; seed torch first for a replayable one).
    """
    layers: list[nn.Module] = []
    channels = [3, *CNN_CHANNELS]
    for c_in, c_out in zip(channels, channels[1:], strict=False):
        layers += [nn.Conv2d(c_in, c_out, 3, padding=1), nn.BatchNorm2d(c_out), nn.ReLU(),
                   nn.MaxPool2d(2)]  # fmt: skip
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(channels[-1], num_classes)]
    return nn.Sequential(*layers)
