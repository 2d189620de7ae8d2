"""ViT models on a munet task, really trained: Petridish grows them one encoder block at a time.

- Candidate: `{"num_layers": L, "width": D, "image_size": S}` (JSON); heads, MLP ratio and
  patch size are the objective's. Seed models: the grid `layers x widths x image_sizes`, which
  is also the whole space of the ask/tell strategies.
- Seed and train jobs: Adam on the task's training stream for `seed_steps` / `train_steps`
  steps (all parameters; a train job starts from its search job's weights), then
  error = 1 - validation accuracy over the task's validation batches.
- Search job (growth): the parent's trained weights plus a new last encoder block whose two
  residual branches end in zeroed projections (`attn.proj`, `mlp.fc2`): the block adds 0 to
  the residual stream, so the grown model computes exactly its parent's function. Only the new
  block trains (`search_steps`); the rest is frozen.
- cost = forward FLOPs of one image (`munet.models.flops.count_flops`).
- Each job runs on `threads` intra-op threads (1 by default: one job per core) and restores
  the process's setting afterwards.

Weights are safetensors files with the architecture in their metadata (no pickle).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import os
import time
from collections.abc import Iterator
from typing import Any

import torch
from safetensors import safe_open

from munet.files import save_safetensors_file
from munet.models.arch import VitArch
from munet.models.components import init_component
from munet.models.flops import count_flops
from munet.models.vit import VisionTransformer
from munet.search.spaces import ChoiceSpace

from .base import Candidate, GrowthObjective, Result, atomic_target


class VitObjective(GrowthObjective):
    """ViTs on `task` (see the module docstring).

    Args:
        task: a munet task name (`digits`, `synth/shape`, ...).
        layers, widths, image_sizes: the seed grid.
        num_heads: attention heads (every width must be divisible by it).
        mlp_ratio: MLP width / token width.
        patch_size: patch side (every image size must be a multiple).
        seed_steps, search_steps, train_steps: optimiser steps of each job kind.
        batch_size: training batch size.
        learning_rate: Adam's learning rate.
        num_validation_examples: validation examples used for the error.
        threads: intra-op threads per job.

    Raises:
        ValueError: an empty grid, a width not divisible by the heads, an image size not a
            multiple of the patch, or a non-positive step count.
    """

    kind = "vit"
    cost_unit = "FLOPs"  # forward FLOPs of one image

    def __init__(
        self,
        task: str,
        *,
        layers: tuple[int, ...] = (1, 2),
        widths: tuple[int, ...] = (32, 64),
        image_sizes: tuple[int, ...] = (16,),
        num_heads: int = 2,
        mlp_ratio: int = 2,
        patch_size: int = 4,
        seed_steps: int = 200,
        search_steps: int = 100,
        train_steps: int = 200,
        batch_size: int = 64,
        learning_rate: float = 1e-3,
        num_validation_examples: int = 512,
        threads: int = 1,
    ) -> None:
        from munet.tasks.registry import check_task_name

        self.task = str(task)
        check_task_name(self.task)  # a misspelt task fails here, not in every trial
        self.layers = _positive_tuple("layers", layers, minimum=0)
        self.widths = _positive_tuple("widths", widths)
        self.image_sizes = _positive_tuple("image_sizes", image_sizes)
        self.num_heads = int(num_heads)
        self.mlp_ratio = int(mlp_ratio)
        self.patch_size = int(patch_size)
        for width in self.widths:
            if width % self.num_heads:
                raise ValueError(f"width {width} is not divisible by num_heads {self.num_heads}")
        for size in self.image_sizes:
            if size % self.patch_size:
                raise ValueError(f"image size {size} is not a multiple of patch {self.patch_size}")
        for name in ("seed_steps", "search_steps", "train_steps", "batch_size", "threads"):
            value = locals()[name]
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        self.seed_steps, self.search_steps, self.train_steps = seed_steps, search_steps, train_steps
        self.batch_size, self.threads = batch_size, threads
        if not (math.isfinite(learning_rate) and learning_rate > 0):
            raise ValueError(f"learning_rate must be a positive number, got {learning_rate!r}")
        self.learning_rate = float(learning_rate)
        self.num_validation_examples = int(num_validation_examples)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "task": self.task,
            "layers": list(self.layers),
            "widths": list(self.widths),
            "image_sizes": list(self.image_sizes),
            "num_heads": self.num_heads,
            "mlp_ratio": self.mlp_ratio,
            "patch_size": self.patch_size,
            "seed_steps": self.seed_steps,
            "search_steps": self.search_steps,
            "train_steps": self.train_steps,
            "batch_size": self.batch_size,
            "learning_rate": self.learning_rate,
            "num_validation_examples": self.num_validation_examples,
            "threads": self.threads,
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> VitObjective:
        settings = {k: v for k, v in obj.items() if k not in ("kind", "task")}
        for key in ("layers", "widths", "image_sizes"):
            if key in settings:
                settings[key] = tuple(settings[key])
        return cls(obj["task"], **settings)

    # ------------------------------------------------------------------------ candidates

    def seed_candidates(self) -> list[Candidate]:
        return [
            {"num_layers": layers, "width": width, "image_size": size}
            for layers, width, size in itertools.product(self.layers, self.widths, self.image_sizes)
        ]

    def arch(self, candidate: Candidate) -> VitArch:
        """The `VitArch` of a candidate (with this task's classes).

        Raises:
            ValueError: a malformed candidate.
        """
        try:
            width = int(candidate["width"])
            return VitArch(
                width=width,
                num_layers=int(candidate["num_layers"]),
                num_heads=self.num_heads,
                mlp_dim=width * self.mlp_ratio,
                patch_size=self.patch_size,
                num_classes=self._task().num_classes,
            )
        except (KeyError, TypeError) as error:
            raise ValueError(
                f"not a ViT candidate {candidate!r}; expected num_layers, width, image_size"
            ) from error

    def cost_of(self, candidate: Candidate) -> float:
        return float(count_flops(self.arch(candidate), int(candidate["image_size"])))

    def describe(self, candidate: Candidate) -> str:
        return f"L{candidate['num_layers']}-D{candidate['width']}-S{candidate['image_size']}"

    def search_space(self) -> ChoiceSpace:
        """The ask/tell strategies' space: exactly the grid given (`layers` x `widths` x
        `image_sizes`; Petridish alone grows deeper than `layers`)."""
        return ChoiceSpace(
            {
                "num_layers": sorted(set(self.layers)),
                "width": list(self.widths),
                "image_size": list(self.image_sizes),
            }
        )

    # ------------------------------------------------------------------------------- jobs

    def _task(self):
        from munet.tasks import get_task

        return get_task(
            self.task,
            batch_size=self.batch_size,
            num_validation_examples_max=self.num_validation_examples,
        )

    def new_model(self, candidate: Candidate, seed: int) -> VisionTransformer:
        """A freshly initialised model (vit_jax initialisers) of a candidate."""
        generator = torch.Generator().manual_seed(seed)
        model = VisionTransformer(self.arch(candidate), int(candidate["image_size"]))
        return model.reset_parameters(generator)

    def train(
        self, candidate: Candidate, init_weights: str | None, out_weights: str | None, seed: int
    ) -> Result:
        with _threads(self.threads):
            if init_weights is None:  # a seed model
                model, steps = self.new_model(candidate, seed), self.seed_steps
            else:  # a grown model's train job: fine-tune everything
                model = load_weights(init_weights, expected=self.arch(candidate))
                steps = self.train_steps
            seconds = self._fit(model, candidate, model.parameters(), steps, seed)
            accuracy = self.validation_accuracy(model, candidate)
        if out_weights is not None:
            save_weights(model, out_weights)
        return self._result(candidate, accuracy, seconds, steps, out_weights)

    def grow(
        self, candidate: Candidate, init_weights: str | None, out_weights: str | None, seed: int
    ) -> Result:
        if init_weights is None:
            raise ValueError("growing a ViT needs its parent's trained weights")
        with _threads(self.threads):
            parent = load_weights(init_weights, expected=self.arch(candidate))
            child = grow_model(parent, torch.Generator().manual_seed(seed))
            grown = {**candidate, "num_layers": child.arch.num_layers}
            new_block = getattr(child, f"encoderblock_{parent.arch.num_layers}")
            seconds = self._fit(child, grown, new_block.parameters(), self.search_steps, seed)
            accuracy = self.validation_accuracy(child, grown)
        if out_weights is not None:
            save_weights(child, out_weights)
        return self._result(grown, accuracy, seconds, self.search_steps, out_weights, error=None)

    def _fit(self, model, candidate, parameters, steps: int, seed: int) -> float:
        """Adam on `parameters` only (the others are frozen for these steps); returns seconds."""
        parameters = list(parameters)
        trainable = {id(p) for p in parameters}
        for p in model.parameters():
            p.requires_grad_(id(p) in trainable)
        optimizer = torch.optim.Adam(parameters, lr=self.learning_rate)
        hparams = {"ds_image_size": int(candidate["image_size"])}
        batches = self._task().train_batches(hparams, seed=seed % (2**62))
        start = time.perf_counter()
        model.train()
        for batch in itertools.islice(batches, steps):
            loss = torch.nn.functional.cross_entropy(model(batch.images), batch.labels)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        for p in model.parameters():
            p.requires_grad_(True)
        return time.perf_counter() - start

    def validation_accuracy(self, model: VisionTransformer, candidate: Candidate) -> float:
        """Accuracy over the task's validation batches."""
        hparams = {"ds_image_size": int(candidate["image_size"])}
        correct = total = 0
        model.eval()
        with torch.no_grad():
            for batch in self._task().validation_batches(hparams):
                correct += int((model(batch.images).argmax(dim=-1) == batch.labels).sum())
                total += len(batch)
        if total == 0:
            raise ValueError(f"task {self.task!r} has no validation examples")
        return correct / total

    def _result(self, candidate, accuracy, seconds, steps, weights, error: Any = ...) -> Result:
        return {
            "candidate": dict(candidate),
            "error": 1.0 - accuracy if error is ... else error,
            "cost": self.cost_of(candidate),
            "train_seconds": seconds,
            "metrics": {"validation_accuracy": accuracy, "steps": steps},
            "weights": weights,
        }


def grow_model(parent: VisionTransformer, generator: torch.Generator) -> VisionTransformer:
    """The parent plus one last encoder block that starts as the identity.

    The new block is initialised like any (vit_jax initialisers) except its residual branches'
    output projections, `attn.proj` and `mlp.fc2`, which are zero: x + 0 + 0 = x, so the grown
    model's logits equal the parent's. Their gradients are not zero (they multiply non-zero
    activations), so the block learns from the first step.
    """
    arch = parent.arch.replace(num_layers=parent.arch.num_layers + 1)
    child = VisionTransformer(arch, parent.image_size)
    name = f"encoderblock_{parent.arch.num_layers}"
    block = init_component(name, arch, parent.image_size, generator)
    for tensor in ("attn.proj.weight", "attn.proj.bias", "mlp.fc2.weight", "mlp.fc2.bias"):
        block[tensor] = torch.zeros_like(block[tensor])
    state = {key: value.detach().clone() for key, value in parent.state_dict().items()}
    state.update({f"{name}.{key}": value for key, value in block.items()})
    child.load_state_dict(state, strict=True)
    return child


def save_weights(model: VisionTransformer, path: str) -> None:
    """Write a model's parameters and architecture to a safetensors file, atomically."""
    tensors = {k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}
    metadata = {"arch": json.dumps(model.arch.to_dict()), "image_size": str(model.image_size)}
    temporary = atomic_target(path)
    save_safetensors_file(tensors, temporary, metadata=metadata)
    os.replace(temporary, path)


def load_weights(path: str, expected: VitArch | None = None) -> VisionTransformer:
    """The model saved by `save_weights`.

    Raises:
        ValueError: missing metadata, or an architecture other than `expected`.
    """
    with safe_open(path, framework="pt") as handle:
        metadata = handle.metadata() or {}
        if "arch" not in metadata or "image_size" not in metadata:
            raise ValueError(f"{path} has no ViT metadata (arch, image_size); not a search model")
        arch = VitArch.from_dict(json.loads(metadata["arch"]))
        if expected is not None and arch != expected:
            raise ValueError(f"{path} holds {arch}, expected {expected}")
        state = {key: handle.get_tensor(key) for key in handle.keys()}
    model = VisionTransformer(arch, int(metadata["image_size"]))
    model.load_state_dict(state, strict=True)
    return model


@contextlib.contextmanager
def _threads(count: int) -> Iterator[None]:
    previous = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def _positive_tuple(name: str, values, minimum: int = 1) -> tuple[int, ...]:
    values = tuple(values)
    if not values or any(
        isinstance(v, bool) or not isinstance(v, int) or v < minimum for v in values
    ):
        raise ValueError(f"{name} must be a non-empty list of ints >= {minimum}, got {values!r}")
    return values
