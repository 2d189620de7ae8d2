"""What decides a pretrained root's weights: :class:`PretrainSpec` (a card's ``recipe``, a
work dir's state).

Only the settings live here; what is made of them lives beside: the data stream
(:mod:`munet.pretrain.stream`), the fresh model, optimizer and schedule
(:mod:`munet.pretrain.model`), the losses (:mod:`munet.pretrain.objectives`). This module
imports nothing heavy (what :meth:`PretrainSpec.validate` needs, it imports when called).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from munet.pretrain.generators import Recipe

# Settings `munet pretrain` once had and no shipped root used (their runs are in
# experiments/pretrain_log.md, their code in git history), with the value that turned each off.
# A stored spec that names one at that value is the spec without it; another value is refused.
REMOVED_FIELDS: dict[str, object] = {
    "multi_label": False,
    "hog": 0,
    "contrastive": 0,
    "view_jitter": 0.0,
    "pre_logits": 0,
    "head_decay_mult": 1.0,
}


@dataclass(frozen=True)
class PretrainSpec:
    """Everything that decides the pretrained weights (the card's ``recipe``)."""

    preset: str
    model: str
    num_layers: int
    image_size: int
    recipe: str = "fractal"
    num_classes: int = 100
    batch_size: int = 128
    lr: float = 1e-3
    weight_decay: float = 0.05
    warmup_ratio: float = 0.05
    label_smoothing: float = 0.1
    seed: int = 0
    # At most this many instances of the class per image (figure recipes; 1 = one figure).
    instances: int = 1
    # Side of a colour thumbnail (the image average-pooled to side x side x 3) that the model
    # also regresses from its class token, beside the class (objectives/thumbnail.py); 0 = the
    # class alone.
    thumbnail: int = 0

    @classmethod
    def from_dict(cls, stored: Mapping[str, Any]) -> PretrainSpec:
        """The spec a card's ``recipe`` or a work dir's state holds. A field added since it was
        written takes its default (which the run had); a removed one (:data:`REMOVED_FIELDS`)
        at its off value is dropped.

        Raises:
            ValueError: a removed setting at another value (this munet cannot make those
                weights), or a field no spec ever had; each named.
        """
        known = {field.name for field in dataclasses.fields(cls)}
        kept = {}
        for name, value in stored.items():
            if name in known:
                kept[name] = value
            elif name in REMOVED_FIELDS:
                if value != REMOVED_FIELDS[name]:
                    raise ValueError(
                        f"{name} {value!r}: munet pretrain's {name!r} setting was removed (no "
                        "shipped root used it; its runs are in experiments/pretrain_log.md, its "
                        f"code in git history); only {REMOVED_FIELDS[name]!r}, off, still loads"
                    )
            else:
                raise ValueError(f"{name!r}: not a pretraining setting (known: {sorted(known)})")
        return cls(**kept)

    def validate(self) -> PretrainSpec:
        """Raises ValueError naming the first bad field."""
        from munet.models import VitArch
        from munet.pretrain.generators import check_recipe

        check_recipe(self.recipe)  # raises naming an unknown recipe
        for name in ("num_layers", "image_size", "num_classes", "batch_size", "instances"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} {getattr(self, name)!r}: expected a positive integer")
        if not 0 <= self.thumbnail <= self.image_size:
            raise ValueError(
                f"thumbnail {self.thumbnail!r}: expected 0 (off) or a side of 1 to the image "
                f"size {self.image_size}"
            )
        if self.num_classes < 2:
            raise ValueError(f"num_classes {self.num_classes!r}: expected at least 2")
        if not 0 <= self.label_smoothing < 1:
            raise ValueError(
                f"label_smoothing {self.label_smoothing!r}: expected 0 (off) up to below 1"
            )
        if not (self.lr > 0 and 0 <= self.warmup_ratio < 1 and self.weight_decay >= 0):
            raise ValueError(
                f"lr {self.lr!r} / warmup_ratio {self.warmup_ratio!r} / weight_decay "
                f"{self.weight_decay!r}: expected lr > 0, 0 <= warmup < 1, decay >= 0"
            )
        stride = VitArch.from_size(self.model, num_layers=self.num_layers).stride
        if self.image_size % stride:
            raise ValueError(
                f"image_size {self.image_size}: expected a multiple of the stride {stride} of "
                f"{self.model} (its patch size, times a hybrid stem's reduction)"
            )
        return self

    def make_recipe(self) -> Recipe:
        """The recipe's classes (on the CPU), rendered with the spec's ``instances``."""
        from munet.pretrain.generators import make_recipe

        return make_recipe(self.recipe, self.num_classes, self.seed, self.instances)
