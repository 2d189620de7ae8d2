"""The class: cross-entropy of the class logits against the image's class (its formula), with
the spec's label smoothing. Always on: its logits are the head's first outputs."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from munet.pretrain.spec import PretrainSpec


def width(spec: PretrainSpec) -> int:
    return spec.num_classes


def loss(
    logits: torch.Tensor, images: torch.Tensor, labels: torch.Tensor, spec: PretrainSpec
) -> torch.Tensor:
    return F.cross_entropy(logits, labels, label_smoothing=spec.label_smoothing)
