"""What the pretraining head is asked, and its loss: the class (one per image, or the set an
image shows), and beside it the regression targets (a colour thumbnail, gradient histograms)
and the contrastive embedding that the spec turns on."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from munet.pretrain.contrastive import nt_xent

if TYPE_CHECKING:
    from munet.pretrain.spec import PretrainSpec


# The thumbnail's and the gradient histograms' mean squared errors are added to the
# cross-entropy with these weights.
THUMBNAIL_WEIGHT = 1.0
HOG_WEIGHT = 1.0
# The contrastive loss is added with this weight.
CONTRASTIVE_WEIGHT = 1.0
# Unsigned orientation bins over 0-180 degrees, as in Dalal & Triggs.
HOG_BINS = 9


def thumbnail_target(images: torch.Tensor, side: int) -> torch.Tensor:
    """The images (B, 3, S, S) average-pooled to (B, 3 * side * side), the values the head's
    thumbnail outputs regress."""
    return F.adaptive_avg_pool2d(images, side).flatten(1)


def hog_target(images: torch.Tensor, side: int) -> torch.Tensor:
    """Histograms of oriented gradients of the images (B, 3, S, S) on a ``side`` x ``side``
    grid of cells, (B, HOG_BINS * side * side): central-difference gradients of the channel
    mean, each pixel's magnitude split linearly between the two nearest of ``HOG_BINS``
    unsigned orientation bins, pooled per cell, each cell's histogram scaled to unit length
    (a cell without edges stays zero)."""
    gray = images.float().mean(dim=1, keepdim=True)
    padded = F.pad(gray, (1, 1, 1, 1), mode="replicate")
    gx = (padded[..., 1:-1, 2:] - padded[..., 1:-1, :-2]) / 2
    gy = (padded[..., 2:, 1:-1] - padded[..., :-2, 1:-1]) / 2
    magnitude = torch.sqrt(gx**2 + gy**2)
    # Orientation in [0, pi), in bin units; bin b is centred at (b + 0.5) * pi / HOG_BINS and
    # takes 1 - (circular distance to its centre) of the magnitude, when that is positive.
    position = torch.remainder(torch.atan2(gy, gx), math.pi) * (HOG_BINS / math.pi) - 0.5
    centres = torch.arange(HOG_BINS, device=images.device, dtype=position.dtype)
    half = HOG_BINS / 2
    distance = torch.remainder(position - centres.view(1, -1, 1, 1) + half, HOG_BINS) - half
    bins = torch.clamp(1 - distance.abs(), min=0) * magnitude
    cells = F.adaptive_avg_pool2d(bins, side)
    return F.normalize(cells, dim=1).flatten(1)


def pretrain_loss(
    logits: torch.Tensor, images: torch.Tensor, labels: torch.Tensor, spec: PretrainSpec,
    view_outputs: torch.Tensor | None = None,
) -> torch.Tensor:  # fmt: skip
    """Cross-entropy on the class logits (multi-label: :func:`multi_label_loss`), plus the
    thumbnail's and the gradient histograms'
    weighted errors where they are on, plus the contrastive loss between the embeddings of the
    images and of their second views (``view_outputs``: the head's outputs on the views)
    where that is on.

    Raises:
        ValueError: the spec is contrastive and ``view_outputs`` is missing.
    """
    class_logits = logits[:, : spec.num_classes].float()
    if spec.multi_label:
        loss = multi_label_loss(class_logits, labels)
    else:
        loss = F.cross_entropy(class_logits, labels, label_smoothing=spec.label_smoothing)
    start = spec.num_classes
    for name, width, target, weight in spec.extra_targets():
        outputs = logits[:, start : start + width].float()
        loss = loss + weight * F.mse_loss(outputs, target(images, getattr(spec, name)))
        start += width
    if spec.contrastive:
        if view_outputs is None:
            raise ValueError("contrastive spec: expected the head's outputs on the second views")
        width = spec.contrastive
        loss = loss + CONTRASTIVE_WEIGHT * nt_xent(logits[:, -width:], view_outputs[:, -width:])
    return loss


def shown_classes(labels: torch.Tensor, num_classes: int) -> torch.Tensor:
    """Instance labels (B, K), -1 for none, as (B, num_classes) float: 1 where shown."""
    present = torch.zeros(labels.shape[0], num_classes + 1, device=labels.device)
    # Label -1 lands in the extra last column, which is dropped.
    present.scatter_(1, torch.where(labels < 0, num_classes, labels), 1.0)
    return present[:, :num_classes]


def multi_label_loss(class_logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Sigmoid cross-entropy of each class's logit against whether the image shows it, the
    positives weighted by classes / (classes shown), as Anderson & Farrell: per image, the
    shown classes and the rest weigh alike, whatever the count."""
    present = shown_classes(labels, class_logits.shape[1])
    weight = class_logits.shape[1] / present.sum(dim=1, keepdim=True).clamp(min=1)
    return F.binary_cross_entropy_with_logits(
        class_logits, present, pos_weight=weight.expand_as(present)
    )


# Each regression target beside the class, in head order: (PretrainSpec field holding its
# side, values per cell, target function, loss weight).
EXTRA_TARGETS = (
    ("thumbnail", 3, thumbnail_target, THUMBNAIL_WEIGHT),
    ("hog", HOG_BINS, hog_target, HOG_WEIGHT),
)
