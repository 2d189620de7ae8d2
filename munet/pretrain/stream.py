"""The data a pretraining run sees: the batch of step ``s`` (a pure function of the spec's seed
and ``s``), and the held-out images its accuracy is measured on."""

from __future__ import annotations

import hashlib

import torch

from munet.pretrain.generators import Recipe, sample_batch
from munet.pretrain.spec import PretrainSpec

# Held-out sets up to this size are rendered once and kept; larger ones (a big model's image
# size on a GPU) are rendered again at each checkpoint.
HELD_OUT_CACHE_BYTES = 256 * 2**20
HELD_OUT_CHUNK = 256


def step_seed(seed: int, step: int, stream: str = "train") -> int:
    """The seed of one draw of a run: ``stream`` (``train``, ``validation``) at ``step``."""
    digest = hashlib.sha256(f"munet-pretrain/{stream}/{seed}/{step}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)


def batch_for_step(
    spec: PretrainSpec, recipe: Recipe, step: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The training batch of ``step`` (a pure function of spec and step, for one device
    kind), rendered on the device ``recipe`` lives on."""
    g = torch.Generator(device=recipe.device).manual_seed(step_seed(spec.seed, step))
    return sample_batch(recipe, spec.batch_size, spec.image_size, g)


class HeldOut:
    """The ``n`` held-out images of a run: their own random stream, the same every call.

    Rendered once and kept when they fit ``HELD_OUT_CACHE_BYTES``: re-rendering them at every
    checkpoint cost a several-instance recipe about a fifth of its training speed at short
    checkpoint intervals (benchmarks/pretrain_throughput.py). Kept or not, the chunks are the
    same tensors, so the accuracy is too.
    """

    def __init__(self, spec: PretrainSpec, recipe: Recipe, device: torch.device, n: int = 1024):
        self._spec, self._recipe, self._device, self.n = spec, recipe.to(device), device, n
        size = n * 3 * spec.image_size**2 * 4
        self._kept = list(self._render()) if size <= HELD_OUT_CACHE_BYTES else None

    @property
    def num_classes(self) -> int:
        """The classes the images are labelled with (the head's first outputs)."""
        return self._spec.num_classes

    def chunks(self):
        """``(images, labels)`` chunks of at most ``HELD_OUT_CHUNK`` images, in order."""
        return iter(self._kept) if self._kept is not None else self._render()

    @torch.no_grad()
    def _render(self):
        seed = step_seed(self._spec.seed, 0, "validation")
        g = torch.Generator(device=self._device).manual_seed(seed)
        for start in range(0, self.n, HELD_OUT_CHUNK):
            count = min(HELD_OUT_CHUNK, self.n - start)
            yield sample_batch(self._recipe, count, self._spec.image_size, g)


@torch.no_grad()
def evaluate(model: torch.nn.Module, held_out: HeldOut) -> float:
    """Accuracy of ``model`` on the held-out images (its class logits, the head's first
    outputs; the other objectives' follow them)."""
    model.eval()
    correct = 0
    for images, labels in held_out.chunks():
        predicted = model(images)[:, : held_out.num_classes].argmax(dim=1)
        correct += int((predicted == labels).sum())
    model.train()
    return correct / held_out.n
