"""What a root knows, measured on evaluation tasks: a linear probe and a short fine-tune.

Both read a task's *train* split to learn and score on ``split`` (``validation`` for every
choice; ``test`` only for a final card, read once). They are the measurements of
root_recipe_choice.py and root_compare.py (this folder):

- :func:`linear_probe`: the root frozen, its CLS features (after the encoder norm) of the
  train examples standardised, a multinomial logistic regression fitted by L-BFGS (weight
  decay ``1e-3``), accuracy on ``split``.
- :func:`fine_tune`: every component trainable from the root, a zero-initialised head
  (vit_jax's fresh head), AdamW with warmup and cosine decay for ``steps`` steps of batches
  drawn from train (a seeded stream), accuracy on ``split``.

A root is a file (munet component names, any checkpoint ``munet.models.load_checkpoint``
reads; the position embedding is resized to the image size) or ``None`` for the seed's
random initialisation of the same shape.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from munet.models import VitArch, init_components, load_checkpoint, load_components
from munet.models.vit import VisionTransformer
from munet.tasks.overlap import share_images

SPLITS = ("validation", "test")


@dataclass(frozen=True)
class TaskData:
    """A task's examples at one image size: train (to learn) and ``split`` (to score)."""

    name: str
    split: str
    num_classes: int
    train_images: torch.Tensor  # (N, 3, S, S) float32 in [-1, 1]
    train_labels: torch.Tensor  # (N,) int64
    eval_images: torch.Tensor
    eval_labels: torch.Tensor


def load_task_data(
    task: str, image_size: int, split: str = "validation", max_train: int = 2000,
    max_eval: int = 1000, seed: int = 0,
) -> TaskData:  # fmt: skip
    """A seeded subset of ``task``'s train split and of ``split``, resized to ``image_size``.

    Raises:
        ValueError: ``split`` not validation or test; an unknown task (munet.tasks' message).
    """
    from munet.tasks import load_source
    from munet.tasks.augment import AugmentConfig, preprocess

    if split not in SPLITS:
        raise ValueError(f"split {split!r}: expected one of {', '.join(SPLITS)}")
    source = load_source(task)
    config = AugmentConfig.from_hparams({"ds_image_size": image_size})
    g = torch.Generator().manual_seed(seed)

    def take(name: str, limit: int) -> tuple[torch.Tensor, torch.Tensor]:
        labels = source.labels(name)
        index = torch.randperm(len(labels), generator=g)[:limit].sort().values
        raw = source.images(name, index)
        if raw.shape[1] == 1:
            raw = raw.expand(-1, 3, -1, -1)
        return preprocess(raw, config, train=False), labels[index].long()

    train_images, train_labels = take("train", max_train)
    eval_images, eval_labels = take(split, max_eval)
    return TaskData(task, split, source.num_classes, train_images, train_labels, eval_images,
                    eval_labels)  # fmt: skip


def build_model(
    root: str | Path | None, model: str, num_layers: int, image_size: int, num_classes: int,
    seed: int = 0,
) -> VisionTransformer:  # fmt: skip
    """A ViT from ``root`` (None: random init) with a head of ``num_classes`` (0: headless)."""
    arch = VitArch.from_size(model, num_layers=num_layers, num_classes=num_classes)
    if root is None:
        components = init_components(arch, image_size, torch.Generator().manual_seed(seed))
    else:
        components = load_checkpoint(root, arch, image_size)
    return load_components(VisionTransformer(arch, image_size), components)


@torch.no_grad()
def _features(model: torch.nn.Module, images: torch.Tensor, device: torch.device) -> torch.Tensor:
    model.eval()
    out = [model(images[i : i + 512].to(device)).float() for i in range(0, len(images), 512)]
    return torch.cat(out)


def linear_probe(
    root: str | Path | None, data: TaskData, model: str, num_layers: int,
    device: str | torch.device = "cpu", weight_decay: float = 1e-3, iterations: int = 100,
) -> float:  # fmt: skip
    """Accuracy on ``data.split`` of a logistic regression on the frozen root's features."""
    device = torch.device(device)
    size = data.train_images.shape[-1]
    net = build_model(root, model, num_layers, size, 0).to(device)
    train = _features(net, data.train_images, device)
    scored = _features(net, data.eval_images, device)
    mean, std = train.mean(0), train.std(0).clamp_min(1e-6)
    train, scored = (train - mean) / std, (scored - mean) / std
    labels = data.train_labels.to(device)
    weight = torch.zeros(train.shape[1], data.num_classes, device=device, requires_grad=True)
    bias = torch.zeros(data.num_classes, device=device, requires_grad=True)
    optimizer = torch.optim.LBFGS([weight, bias], lr=1.0, max_iter=iterations,
                                  line_search_fn="strong_wolfe")  # fmt: skip

    def closure() -> torch.Tensor:
        optimizer.zero_grad()
        loss = F.cross_entropy(train @ weight + bias, labels) + weight_decay * weight.square().sum()
        loss.backward()
        return loss

    optimizer.step(closure)
    with torch.no_grad():
        predicted = (scored @ weight + bias).argmax(1).cpu()
    return float((predicted == data.eval_labels).float().mean())


def fine_tune(
    root: str | Path | None, data: TaskData, model: str, num_layers: int, steps: int,
    device: str | torch.device = "cpu", batch_size: int = 64, lr: float = 1e-3, seed: int = 0,
    precision: str = "fp32",
) -> float:  # fmt: skip
    """Accuracy on ``data.split`` after ``steps`` AdamW steps of the whole model from ``root``.

    Raises:
        ValueError: ``steps`` below 1 or an unknown precision.
    """
    if steps < 1:
        raise ValueError(f"steps {steps!r}: expected a positive integer")
    if precision not in ("fp32", "bf16"):
        raise ValueError(f"precision {precision!r}: expected fp32 or bf16")
    device = torch.device(device)
    size = data.train_images.shape[-1]
    net = build_model(root, model, num_layers, size, data.num_classes, seed).to(device)
    net.train()
    optimizer = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=1e-4)
    warmup = max(1, steps // 10)
    g = torch.Generator().manual_seed(seed)
    images, labels = data.train_images.to(device), data.train_labels.to(device)
    for step in range(steps):
        rate = (step + 1) / warmup if step < warmup else 0.5 * (
            1 + math.cos(math.pi * (step - warmup) / max(1, steps - warmup)))  # fmt: skip
        for group in optimizer.param_groups:
            group["lr"] = lr * rate
        index = torch.randint(0, len(images), (batch_size,), generator=g).to(device)
        batch = images[index]
        flip = torch.rand(batch_size, generator=g).to(device) < 0.5
        batch = torch.where(flip[:, None, None, None], batch.flip(-1), batch)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bf16"):
            loss = F.cross_entropy(net(batch).float(), labels[index])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        optimizer.step()
    logits = _features(net, data.eval_images, device)
    return float((logits.argmax(1).cpu() == data.eval_labels).float().mean())


def evaluation_tasks(include_suite: bool = True) -> list[str]:
    """The embedded evaluation tasks (``digits``, ``synth/*``) and, where munet has it, the
    1k suite (``munet.tasks.suite.SUITE_TASKS``), less every embedded task that splits the
    same images as a suite task (``digits`` and ``1k/digits``: munet.tasks.overlap): a choice
    scored on its validation split would read images of the suite task's test split."""
    from munet.tasks.sources.synth import SYNTH_TASKS

    names = ["digits", *SYNTH_TASKS]
    if include_suite:
        try:
            from munet.tasks.suite import SUITE_TASKS
        except ImportError:
            return names
        names = [name for name in names if not any(share_images(name, s) for s in SUITE_TASKS)]
        names += [name for name in SUITE_TASKS if name not in names]
    return names


def check_disjoint_tasks(tasks: list[str]) -> None:
    """Refuses a task list holding two tasks that split the same images.

    Raises:
        SystemExit: naming the pair.
    """
    for index, task in enumerate(tasks):
        for other in tasks[index + 1 :]:
            if share_images(task, other):
                raise SystemExit(
                    f"--tasks {task} and {other} split the same images: a choice scored on one's "
                    "validation split reads the other's test images; keep one"
                )


def measure_root(
    root: str | Path | None, task: str, model: str, num_layers: int, image_size: int,
    finetune_steps: tuple[int, ...] = (128,), split: str = "validation",
    device: str | torch.device = "cpu", max_train: int = 2000, max_eval: int = 1000,
    seed: int = 0, precision: str = "fp32",
) -> dict:  # fmt: skip
    """One root on one task: ``{"probe": acc, "finetune": {"STEPS": acc, ...}}`` on ``split``."""
    data = load_task_data(task, image_size, split, max_train, max_eval, seed)
    return {
        "probe": linear_probe(root, data, model, num_layers, device),
        "finetune": {
            str(steps): fine_tune(
                root, data, model, num_layers, steps, device, seed=seed, precision=precision
            )  # fmt: skip
            for steps in finetune_steps
        },
    }
