"""The pretraining loop: a preset's ViT learns to classify procedural images, resumably.

Determinism: the model starts from the seed's initialisation drawn from ``seed``; the batch of
step ``s`` depends only on ``(seed, s)`` (its own generator), and the learning rate only on
``s`` and the total step count. So a run of N steps and a run stopped at any checkpoint and
resumed hold the same weights (on the same machine and thread count).

Resumability: every ``checkpoint_every`` steps the work dir receives
``state-<step>.safetensors`` (model and AdamW tensors) and then ``state.json`` (step, spec,
elapsed time, history; replaced atomically, so it always names a complete tensor file). A
rerun with the same spec continues from the last one, also after ``kill -9``. No pickle.

At every checkpoint and at the end the work dir holds ``root.safetensors`` (the headless
model in munet component names, loadable by ``munet.models.load_checkpoint``) and
``card.json`` (see :func:`make_card`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from munet.models import VitArch, init_components, load_components, save_safetensors
from munet.models.components import split_components
from munet.models.vit import VisionTransformer
from munet.pretrain.generators import RECIPES, make_recipe, sample_batch
from munet.pretrain.roots import sha256_file
from munet.pretrain.workdir import atomic_write, load_state, save_state

log = logging.getLogger("munet.pretrain")

ROOT_FILE = "root.safetensors"
CARD_FILE = "card.json"
ROOT_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
# Steps timed before a --minutes budget is turned into a step count.
PROBE_STEPS = 10


class PretrainStateError(ValueError):
    """The work dir holds a run of another spec (resuming would mix two recipes)."""


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

    def validate(self) -> PretrainSpec:
        """Raises ValueError naming the first bad field."""
        if self.recipe not in RECIPES:
            raise ValueError(f"recipe {self.recipe!r}: expected one of {', '.join(RECIPES)}")
        for name in ("num_layers", "image_size", "num_classes", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} {getattr(self, name)!r}: expected a positive integer")
        if self.num_classes < 2:
            raise ValueError(f"num_classes {self.num_classes!r}: expected at least 2")
        if not (self.lr > 0 and 0 <= self.warmup_ratio < 1 and self.weight_decay >= 0):
            raise ValueError(
                f"lr {self.lr!r} / warmup_ratio {self.warmup_ratio!r} / weight_decay "
                f"{self.weight_decay!r}: expected lr > 0, 0 <= warmup < 1, decay >= 0"
            )
        arch = self.arch()
        if self.image_size % arch.patch_size:
            raise ValueError(
                f"image_size {self.image_size}: expected a multiple of the patch size "
                f"{arch.patch_size} of {self.model}"
            )
        return self

    def arch(self, num_classes: int | None = None) -> VitArch:
        classes = self.num_classes if num_classes is None else num_classes
        return VitArch.from_size(self.model, num_layers=self.num_layers, num_classes=classes)


@dataclass
class PretrainResult:
    """What a finished run left: the files and its figures."""

    root_file: Path
    card_file: Path
    card: dict[str, Any]


def _step_seed(seed: int, step: int, stream: str = "train") -> int:
    digest = hashlib.sha256(f"munet-pretrain/{stream}/{seed}/{step}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)


def batch_for_step(spec: PretrainSpec, recipe: Any, step: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The training batch of ``step`` (a pure function of spec and step)."""
    g = torch.Generator().manual_seed(_step_seed(spec.seed, step))
    return sample_batch(recipe, spec.batch_size, spec.image_size, g)


def lr_at(spec: PretrainSpec, step: int, total_steps: int) -> float:
    """Linear warmup, then cosine decay to zero over ``total_steps``."""
    warmup = max(1, int(spec.warmup_ratio * total_steps))
    if step < warmup:
        return spec.lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, total_steps - warmup)
    return spec.lr * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))


def _new_model(spec: PretrainSpec) -> VisionTransformer:
    arch = spec.arch()
    model = VisionTransformer(arch, spec.image_size)
    generator = torch.Generator().manual_seed(spec.seed)
    return load_components(model, init_components(arch, spec.image_size, generator))


def _optimizer(model: torch.nn.Module, spec: PretrainSpec) -> torch.optim.AdamW:
    # No weight decay on biases, norms, the cls token and the position embedding (1-D or
    # embedding-like tensors), the usual ViT setting.
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        (no_decay if param.dim() < 2 or name.startswith(("cls.", "posembed")) else decay).append(
            param
        )
    groups = [
        {"params": decay, "weight_decay": spec.weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=spec.lr, betas=(0.9, 0.999))


# ----------------------------------------------------------------------------- evaluation


@torch.no_grad()
def evaluate(
    model: torch.nn.Module, spec: PretrainSpec, recipe: Any, device: torch.device, n: int = 1024
) -> float:
    """Accuracy on ``n`` held-out images (their own random stream, the same every call)."""
    model.eval()
    g = torch.Generator().manual_seed(_step_seed(spec.seed, 0, "validation"))
    correct = 0
    for start in range(0, n, 256):
        images, labels = sample_batch(recipe, min(256, n - start), spec.image_size, g)
        logits = model(images.to(device))
        correct += int((logits.argmax(dim=1).cpu() == labels).sum())
    model.train()
    return correct / n


# ----------------------------------------------------------------------------- the run


def pretrain(
    spec: PretrainSpec,
    work_dir: str | Path,
    *,
    steps: int | None = None,
    minutes: float | None = None,
    checkpoint_every: int = 100,
    root_dtype: str = "float32",
    device: str | None = None,
    progress: bool = True,
    command: str = "",
    stop_at: int | None = None,
    eval_examples: int = 1024,
) -> PretrainResult:
    """Pretrains ``spec``'s model in ``work_dir`` (resuming a run found there).

    Args:
        spec: the recipe and model.
        work_dir: where state, root and card go (created).
        steps / minutes: the budget, exactly one of them. Minutes become a step count after
            timing the first steps (stored, so a resumed run keeps it; the card records it,
            and ``steps=`` that count reproduces the run).
        checkpoint_every: steps between resumable checkpoints.
        root_dtype: ``float32``, ``float16`` or ``bfloat16`` for the shipped root file.
        device: ``cpu``, ``cuda``...; None: CUDA when available.
        progress: show a tqdm bar with ETA (on stderr).
        command: the command line, recorded in the card.
        stop_at: end this session once this step is done (a checkpoint is written there),
            as if killed just after it; a rerun continues. None: run to the budget.
        eval_examples: held-out images scored at each checkpoint.

    Raises:
        ValueError: bad budget or spec; PretrainStateError: the work dir holds another spec.
    """
    spec.validate()
    if (steps is None) == (minutes is None):
        raise ValueError("give the budget as exactly one of steps or minutes")
    if steps is not None and steps < 1:
        raise ValueError(f"steps {steps!r}: expected a positive integer")
    if minutes is not None and not minutes > 0:
        raise ValueError(f"minutes {minutes!r}: expected a positive number")
    if checkpoint_every < 1:
        raise ValueError(f"checkpoint_every {checkpoint_every!r}: expected a positive integer")
    if eval_examples < 1:
        raise ValueError(f"eval_examples {eval_examples!r}: expected a positive integer")
    if root_dtype not in ROOT_DTYPES:
        raise ValueError(f"root dtype {root_dtype!r}: expected one of {', '.join(ROOT_DTYPES)}")
    work = Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    torch_device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))

    recipe = make_recipe(spec.recipe, spec.num_classes, spec.seed)
    model = _new_model(spec).to(torch_device)
    optimizer = _optimizer(model, spec)
    meta = load_state(work, model, optimizer)
    if meta is not None:
        if meta["spec"] != dataclasses.asdict(spec):
            raise PretrainStateError(
                f"{work} holds a pretraining run of another spec ({meta['spec']}); use another "
                "work dir or the same settings"
            )
        if steps is not None and meta["total_steps"] != steps:
            raise PretrainStateError(
                f"{work} holds a run of {meta['total_steps']} steps, not {steps}: resume it with "
                f"--steps {meta['total_steps']} or use another work dir"
            )
        log.info("resuming %s at step %d/%d", work, meta["step"], meta["total_steps"])
    else:
        meta = {
            "spec": dataclasses.asdict(spec),
            "step": 0,
            "total_steps": steps,  # None until a minutes budget has been timed.
            "seconds": 0.0,
            "history": [],
        }
    if meta["step"] >= (meta["total_steps"] or math.inf):
        return _write_root(work, model, spec, meta, root_dtype, command)

    threads = torch.get_num_threads()
    bar = None
    if progress and meta["total_steps"] is not None:
        bar = _bar(meta["total_steps"], meta["step"])
    session_start = time.perf_counter()
    seconds_before = meta["seconds"]
    loss_sum, loss_count = 0.0, 0
    # The next batch is rendered on a second thread while this one trains (torch ops
    # release the GIL); each batch is a pure function of its step, so order is unaffected.
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(batch_for_step, spec, recipe, meta["step"])
        while meta["total_steps"] is None or meta["step"] < meta["total_steps"]:
            step = meta["step"]
            images, labels = pending.result()
            if meta["total_steps"] is None or step + 1 < meta["total_steps"]:
                pending = pool.submit(batch_for_step, spec, recipe, step + 1)
            total_for_lr = meta["total_steps"] or _minutes_probe_total(minutes)
            for group in optimizer.param_groups:
                group["lr"] = lr_at(spec, step, total_for_lr)
            logits = model(images.to(torch_device))
            loss = F.cross_entropy(
                logits, labels.to(torch_device), label_smoothing=spec.label_smoothing
            )
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            loss_value = float(loss.detach())
            loss_sum += loss_value
            loss_count += 1
            meta["step"] = step + 1
            meta["seconds"] = seconds_before + time.perf_counter() - session_start
            if meta["total_steps"] is None and meta["step"] == PROBE_STEPS:
                per_step = meta["seconds"] / PROBE_STEPS
                meta["total_steps"] = max(PROBE_STEPS, int(minutes * 60 / per_step))
                log.info(
                    "%.1f minutes at %.3f s/step: %d steps", minutes, per_step, meta["total_steps"]
                )
                if progress:
                    bar = _bar(meta["total_steps"], meta["step"])
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{loss_value:.3f}", refresh=False)
            done = meta["total_steps"] is not None and meta["step"] >= meta["total_steps"]
            stopping = stop_at is not None and meta["step"] >= stop_at
            if meta["step"] % checkpoint_every == 0 or done or stopping:
                accuracy = evaluate(model, spec, recipe, torch_device, eval_examples)
                meta["history"].append(
                    {
                        "step": meta["step"],
                        "train_loss": round(loss_sum / max(1, loss_count), 4),
                        "val_accuracy": accuracy,
                        "seconds": round(meta["seconds"], 1),
                    }
                )
                loss_sum, loss_count = 0.0, 0
                meta["threads"] = threads
                save_state(work, model, optimizer, meta)
                # The root and card so far: usable (and shippable) before the run ends.
                _write_root(work, model, spec, meta, root_dtype, command)
                if bar is not None:
                    bar.set_postfix(
                        loss=f"{meta['history'][-1]['train_loss']:.3f}", val=f"{accuracy:.3f}"
                    )
            if stopping:
                break
    if bar is not None:
        bar.close()
    return _write_root(work, model, spec, meta, root_dtype, command)


def _minutes_probe_total(minutes: float | None) -> int:
    # While a minutes budget is timed, the schedule assumes a long run (warmup only: the first
    # PROBE_STEPS steps sit in the warmup of any budget of 200 steps or more).
    return max(PROBE_STEPS * 20, int((minutes or 1) * 60))


def _bar(total: int, initial: int):
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, unit="step", desc="pretrain", dynamic_ncols=True)


def root_components(model: VisionTransformer, dtype: torch.dtype) -> dict:
    """The headless components of a pretrained model (its classification head dropped)."""
    components = split_components(model)
    components.pop("head", None)
    return {
        component: {name: t.detach().cpu().to(dtype) for name, t in tensors.items()}
        for component, tensors in components.items()
    }


def _write_root(
    work: Path,
    model: VisionTransformer,
    spec: PretrainSpec,
    meta: dict[str, Any],
    root_dtype: str,
    command: str,
) -> PretrainResult:
    root_file = work / ROOT_FILE
    atomic_write(
        root_file,
        lambda tmp: save_safetensors(tmp, root_components(model, ROOT_DTYPES[root_dtype])),
    )
    card = make_card(spec, meta, root_file, root_dtype, command)
    card_file = work / CARD_FILE
    atomic_write(card_file, lambda tmp: Path(tmp).write_text(json.dumps(card, indent=1) + "\n"))
    return PretrainResult(root_file, card_file, card)


def make_card(
    spec: PretrainSpec, meta: dict[str, Any], root_file: Path, root_dtype: str, command: str
) -> dict[str, Any]:
    """The card of a root: how it was made and what it measured.

    Keys: ``preset``, ``recipe`` (the full spec), ``steps``, ``seed``, ``seconds`` (training
    wall time over all sessions), ``threads``, ``load_average`` (at the end), ``dtype``,
    ``file``, ``sha256``, ``val_accuracy`` (last held-out accuracy on the pretraining
    classes), ``history``, ``command``, ``transfer`` (filled by a transfer check; empty here).
    """
    history = meta.get("history", [])
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {
        "preset": spec.preset,
        "recipe": dataclasses.asdict(spec),
        "steps": meta["step"],
        "planned_steps": meta["total_steps"],
        "seed": spec.seed,
        "seconds": round(meta["seconds"], 1),
        "threads": meta.get("threads", torch.get_num_threads()),
        "load_average": [round(x, 2) for x in load] if load else None,
        "dtype": root_dtype,
        "file": root_file.name,
        "sha256": sha256_file(root_file),
        "val_accuracy": history[-1]["val_accuracy"] if history else None,
        "history": history,
        "command": command,
        "transfer": {},
    }
