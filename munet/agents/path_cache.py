"""Reuse of frozen paths' outputs across training steps (multipath agents).

A multipath model's subpaths are frozen, so a subpath maps an image to the same output at every
step. When a generation trains without augmentation, every epoch shows the model the same
images, and recomputing the subpaths' forward passes is most of a step's cost. The cache keys
each output row by a digest of the image's bytes (exact: identical bytes, identical output),
computes the rows it has not seen in one forward pass, and stores them up to a memory budget.

Outputs of rows computed in a smaller batch can differ from the full batch's in the last bits
(kernels block by batch shape), which training tolerates; evaluations that must replay exactly
(test quality, the immutability test) never go through the cache.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Hashable, Mapping
from typing import Any

import torch

from munet.tasks.augment import DS_HPARAMS_DEFAULTS

# Augmentation hparams and the values that switch them off: munet.tasks' neutral defaults.
NEUTRAL_AUGMENTATION = DS_HPARAMS_DEFAULTS


def augmentation_active(hparams: Mapping[str, Any]) -> bool:
    """Whether training with these dataset hparams changes images from one epoch to the next."""
    return any(hparams.get(key, off) != off for key, off in NEUTRAL_AUGMENTATION.items())


class PathOutputCache:
    """Output rows of frozen models, by model key and image digest, within a memory budget.

    Args:
        max_bytes: memory for stored rows; past it, new rows are computed but not stored.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self.hits = 0
        self.misses = 0
        self._tables: dict[Hashable, dict[bytes, torch.Tensor]] = {}

    def wrap(
        self, key: Hashable, model: Callable[[torch.Tensor], torch.Tensor]
    ) -> Callable[[torch.Tensor], torch.Tensor]:
        """``model`` (frozen, deterministic) answering from the cache under ``key``."""
        table = self._tables.setdefault(key, {})

        def cached(images: torch.Tensor) -> torch.Tensor:
            if images.device.type != "cpu" or images.requires_grad or self.max_bytes <= 0:
                return model(images)
            return self._lookup(table, model, images)

        return cached

    def _lookup(
        self,
        table: dict[bytes, torch.Tensor],
        model: Callable[[torch.Tensor], torch.Tensor],
        images: torch.Tensor,
    ) -> torch.Tensor:
        rows = images.detach().reshape(images.shape[0], -1).contiguous().numpy()
        digests = [hashlib.blake2b(row.tobytes(), digest_size=16).digest() for row in rows]
        found = {d: table[d] for d in digests if d in table}
        missing = [i for i, d in enumerate(digests) if d not in found]
        self.hits += len(digests) - len(missing)
        self.misses += len(missing)
        if missing:
            with torch.no_grad():
                computed = model(images[torch.tensor(missing)])
            for row, index in zip(computed, missing, strict=True):
                digest = digests[index]
                found[digest] = row
                size = row.numel() * row.element_size()
                if digest not in table and self.bytes + size <= self.max_bytes:
                    table[digest] = row.clone()
                    self.bytes += size
        return torch.stack([found[d] for d in digests])
