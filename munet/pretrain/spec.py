"""What decides a pretrained root's weights: :class:`PretrainSpec`, its data stream (the batch
of step ``s`` is a pure function of seed and ``s``), its learning-rate schedule, its fresh
model and optimizer, and the held-out accuracy on the pretraining classes."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from munet.models import VitArch, init_components, load_components
from munet.models.components import lecun_normal
from munet.models.vit import VisionTransformer
from munet.pretrain.contrastive import MAX_JITTER, second_view
from munet.pretrain.generators import (
    Recipe,
    check_multi_label,
    make_recipe,
    recipe_kinds,
    sample_batch,
)
from munet.pretrain.objectives import EXTRA_TARGETS


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
    # Each of an image's instances is its own class, and the head says which classes the image
    # shows (sigmoid cross-entropy on each class, the positives weighted by classes / shown:
    # the multi-instance prediction of Anderson & Farrell 2022, "Improving Fractal
    # Pre-training"). One class per image lets the class token become that class's identity;
    # a set of classes asks it to keep each figure of the image. Needs instances >= 2 of a
    # plain figure recipe, and no label smoothing (it belongs to the one-class loss).
    multi_label: bool = False
    # Side of a colour thumbnail (the image average-pooled to side x side x 3) that the model
    # also regresses from its class token, beside the class; 0 = the class alone. A task that
    # only asks for the formula lets the features drop what it does not need (colour, where
    # things are); the thumbnail asks the class token to keep a coarse picture of the image.
    thumbnail: int = 0
    # Side of a grid of histograms of oriented gradients (HOG: Dalal & Triggs 2005; the target
    # of MaskFeat, Wei et al. 2022) that the class token also regresses; 0 = off. Where the
    # thumbnail keeps colour, this keeps which way the edges run, cell by cell.
    hog: int = 0
    # Width of an embedding (a linear projection of the class token) by which each image is
    # told apart from the rest of its batch, against a second view of it (contrastive.py:
    # SimCLR's NT-Xent beside the class); 0 = off. Each step then runs the model on twice the
    # batch.
    contrastive: int = 0
    # Strength s of SimCLR's colour distortion of the second views (contrastive.py:
    # colour_jitter); 0 = crops alone. Asks the contrastive embedding to tell images apart by
    # more than their colours.
    view_jitter: float = 0.0
    # Width of a representation layer (Dense + tanh: vit_jax's ``representation_size``, the
    # ViT paper's one-hidden-layer pretraining head) between the class token and the
    # pretraining head, dropped with the head; 0 = the head reads the class token. The last
    # layer before a loss specialises to it; with this layer between, the class token the
    # root keeps is one layer further from the formula task.
    pre_logits: int = 0
    # The head's output kernel decays this many times as strongly as the other kernels
    # (big_vision's `wd_mults`: 100 for its ViT-G; Zhai et al. 2022, "Scaling Vision
    # Transformers", found a strongly decayed head gives features that transfer better to
    # few-shot linear probes); 1 = as the rest.
    head_decay_mult: float = 1.0

    def validate(self) -> PretrainSpec:
        """Raises ValueError naming the first bad field."""
        recipe_kinds(self.recipe)  # raises naming an unknown recipe
        for name in ("num_layers", "image_size", "num_classes", "batch_size", "instances"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} {getattr(self, name)!r}: expected a positive integer")
        if not 0 <= self.thumbnail <= self.image_size:
            raise ValueError(
                f"thumbnail {self.thumbnail!r}: expected 0 (off) or a side of 1 to the image "
                f"size {self.image_size}"
            )
        if not 0 <= self.hog <= self.image_size:
            raise ValueError(
                f"hog {self.hog!r}: expected 0 (off) or a grid side of 1 to the image size "
                f"{self.image_size}"
            )
        if not 0 <= self.head_decay_mult < math.inf:  # `not` also refuses NaN
            raise ValueError(
                f"head_decay_mult {self.head_decay_mult!r}: expected a finite factor >= 0 "
                "(1: the head decays as the rest)"
            )
        if self.pre_logits < 0:
            raise ValueError(
                f"pre_logits {self.pre_logits!r}: expected 0 (off) or a layer width"
            )
        if self.contrastive < 0:
            raise ValueError(
                f"contrastive {self.contrastive!r}: expected 0 (off) or an embedding width"
            )
        # Above MAX_JITTER the lowest brightness/contrast/saturation factor, 1 - 0.8 s, is
        # negative (an inverted image, not a distortion); `not <=` also refuses NaN.
        if not 0 <= self.view_jitter <= MAX_JITTER or (self.view_jitter and not self.contrastive):
            raise ValueError(
                f"view_jitter {self.view_jitter!r}: expected 0 (off) or a strength up to "
                f"{MAX_JITTER} with contrastive on (contrastive {self.contrastive!r})"
            )
        if self.num_classes < 2 * len(recipe_kinds(self.recipe)):
            raise ValueError(
                f"num_classes {self.num_classes!r}: expected at least 2 per recipe of "
                f"{self.recipe!r}"
            )
        if not 0 <= self.label_smoothing < 1:
            raise ValueError(
                f"label_smoothing {self.label_smoothing!r}: expected 0 (off) up to below 1"
            )
        if self.multi_label:
            if self.label_smoothing:
                raise ValueError(
                    f"label_smoothing {self.label_smoothing!r} with multi_label: expected 0 "
                    "(the multi-label loss has no smoothing; pass --label-smoothing 0)"
                )
            check_multi_label(self.recipe, self.instances)
        if not (self.lr > 0 and 0 <= self.warmup_ratio < 1 and self.weight_decay >= 0):
            raise ValueError(
                f"lr {self.lr!r} / warmup_ratio {self.warmup_ratio!r} / weight_decay "
                f"{self.weight_decay!r}: expected lr > 0, 0 <= warmup < 1, decay >= 0"
            )
        arch = self.arch()
        if self.image_size % arch.stride:
            raise ValueError(
                f"image_size {self.image_size}: expected a multiple of the stride "
                f"{arch.stride} of {self.model} (its patch size, times a hybrid stem's reduction)"
            )
        return self

    def make_recipe(self) -> Recipe:
        """The recipe's classes (on the CPU), rendered with the spec's ``instances``."""
        return make_recipe(
            self.recipe, self.num_classes, self.seed, self.instances, self.multi_label
        )

    @property
    def label_shape(self) -> tuple[int, ...]:
        """One image's labels: its class, or (multi-label) each instance's class."""
        return (self.instances,) if self.multi_label else ()

    @property
    def outputs(self) -> int:
        """The pretraining head's width: the class logits, then the thumbnail's values, the
        gradient histograms', and the contrastive embedding."""
        extra = sum(width for _, width, _, _ in self.extra_targets())
        return self.num_classes + extra + self.contrastive

    def extra_targets(self) -> list[tuple[str, int, Callable, float]]:
        """The regression targets beside the class that are on, in head order: (option, the
        number of head outputs, target function, loss weight)."""
        return [
            (name, channels * getattr(self, name) ** 2, target, weight)
            for name, channels, target, weight in EXTRA_TARGETS
            if getattr(self, name)
        ]

    def arch(self, num_classes: int | None = None) -> VitArch:
        classes = self.outputs if num_classes is None else num_classes
        return VitArch.from_size(self.model, num_layers=self.num_layers, num_classes=classes)


def _step_seed(seed: int, step: int, stream: str = "train") -> int:
    digest = hashlib.sha256(f"munet-pretrain/{stream}/{seed}/{step}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)


def _recipe_device(recipe: Recipe) -> torch.device:
    return next(iter(recipe.parts[0][3].values())).device


def batch_for_step(
    spec: PretrainSpec, recipe: Recipe, step: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The training batch of ``step`` (a pure function of spec and step, for one device
    kind), rendered on the device ``recipe`` lives on."""
    g = torch.Generator(device=_recipe_device(recipe)).manual_seed(_step_seed(spec.seed, step))
    return sample_batch(recipe, spec.batch_size, spec.image_size, g)


def view_for_step(spec: PretrainSpec, images: torch.Tensor, step: int) -> torch.Tensor:
    """The second views of the batch of ``step`` (contrastive specs), a pure function of the
    spec's seed, the step and the images."""
    g = torch.Generator(device=images.device).manual_seed(_step_seed(spec.seed, step, "view"))
    return second_view(images, g, spec.view_jitter)


def lr_at(spec: PretrainSpec, step: int, total_steps: int) -> float:
    """Linear warmup, then cosine decay to zero over ``total_steps``."""
    warmup = max(1, int(spec.warmup_ratio * total_steps))
    if step < warmup:
        return spec.lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, total_steps - warmup)
    return spec.lr * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))


def new_model(spec: PretrainSpec) -> VisionTransformer:
    arch = spec.arch()
    model = VisionTransformer(arch, spec.image_size)
    generator = torch.Generator().manual_seed(spec.seed)
    model = load_components(model, init_components(arch, spec.image_size, generator))
    if spec.pre_logits:
        model.head = _head_with_pre_logits(model.head, spec)
    if spec.contrastive:
        # The head starts at zero (vit_jax's fresh head), which suits logits and regressions,
        # but embeddings all at zero give the contrastive loss no gradient: its rows start
        # LeCun-normal instead, from their own stream (the rest of the model is unchanged).
        g = torch.Generator().manual_seed(_step_seed(spec.seed, 0, "projection"))
        rows = output_layer(model).weight[-spec.contrastive :]
        with torch.no_grad():
            rows.copy_(torch.randn(rows.shape, generator=g) / math.sqrt(rows.shape[1]))
    return model


def _head_with_pre_logits(head: nn.Linear, spec: PretrainSpec) -> nn.Sequential:
    """vit_jax's ``pre_logits`` (Dense + tanh; kernel LeCun-normal, bias zero, as Flax's
    Dense) before a zero-initialised output layer. Drawn from its own stream, so the rest of
    the model starts as without it."""
    g = torch.Generator().manual_seed(_step_seed(spec.seed, 0, "pre_logits"))
    width, hidden = head.in_features, spec.pre_logits
    pre_logits = nn.Linear(width, hidden)
    output = nn.Linear(hidden, head.out_features)
    with torch.no_grad():
        pre_logits.weight.copy_(lecun_normal((hidden, width), width, g))
        for tensor in (pre_logits.bias, output.weight, output.bias):
            tensor.zero_()
    return nn.Sequential(pre_logits, nn.Tanh(), output)


def output_layer(model: VisionTransformer) -> nn.Linear:
    """The pretraining head's last layer (the head itself without a pre-logits layer)."""
    return model.head[-1] if isinstance(model.head, nn.Sequential) else model.head


def new_optimizer(model: VisionTransformer, spec: PretrainSpec) -> torch.optim.AdamW:
    # No weight decay on biases, norms, the cls token and the position embedding (1-D or
    # embedding-like tensors), the usual ViT setting.
    head_kernel = output_layer(model).weight if spec.head_decay_mult != 1 else None
    decay, no_decay, head = [], [], []
    for name, param in model.named_parameters():
        if param.dim() < 2 or name.startswith(("cls.", "posembed")):
            no_decay.append(param)
        else:
            (head if param is head_kernel else decay).append(param)
    groups = [
        {"params": decay, "weight_decay": spec.weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    # A third group only when the head decays apart: the AdamW state of runs begun before the
    # option is indexed by these two groups' order, and still loads.
    if head:
        groups.append({"params": head, "weight_decay": spec.weight_decay * spec.head_decay_mult})
    return torch.optim.AdamW(groups, lr=spec.lr, betas=(0.9, 0.999))


# Held-out sets up to this size are rendered once and kept; larger ones (a big model's image
# size on a GPU) are rendered again at each checkpoint.
HELD_OUT_CACHE_BYTES = 256 * 2**20
HELD_OUT_CHUNK = 256


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
        seed = _step_seed(self._spec.seed, 0, "validation")
        g = torch.Generator(device=self._device).manual_seed(seed)
        for start in range(0, self.n, HELD_OUT_CHUNK):
            count = min(HELD_OUT_CHUNK, self.n - start)
            yield sample_batch(self._recipe, count, self._spec.image_size, g)


@torch.no_grad()
def evaluate(model: torch.nn.Module, held_out: HeldOut) -> float:
    """Accuracy of ``model`` on the held-out images (its class logits; a thumbnail's outputs
    follow them). Multi-label: the top class is one the image shows."""
    model.eval()
    correct = 0
    for images, labels in held_out.chunks():
        predicted = model(images)[:, : held_out.num_classes].argmax(dim=1)
        hits = predicted[:, None] == labels if labels.dim() == 2 else predicted == labels
        correct += int(hits.reshape(len(predicted), -1).any(dim=1).sum())
    model.train()
    return correct / held_out.n


# ----------------------------------------------------------------------------- the run
