"""Training of the paths of one generation side by side, with periodic validation (seed 000,
``train_loop``).

All candidates read the same train batches (their dataset hparams are shared). Every
``steps_between_validations`` steps each candidate is validated; when its score beats the best
so far (initially its parent's score, or -inf for a path of a new task) its trainable tensors
are snapshotted. At the end, a candidate that improved gets its best snapshot back (so the
path keeps its best-scoring parameters) and is marked ``improved``; the others are left as they
are (the caller drops them).

A NaN/inf loss or gradient marks the candidate failed: it stops training and is reported
with a warning; it counts as improved only if a validation before the failure beat the
threshold, and then keeps that validation's parameters (as the seed keeps its best ones).
Detection happens at validation time from a flag kept on the device, so training steps never
wait on the device.

With candidates on several devices, each device's step runs in its own thread (PyTorch releases
the GIL in its kernels), as the seed runs one path per accelerator.

Each candidate trains and validates at its ``precision`` (``fp32``, ``bf16`` or ``auto``, see
munet.training.precision): under ``bf16`` the forward runs in autocast while the trainable
tensors, their gradients, the loss and the optimizer stay float32.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from munet.training.optim import ScheduledOptimizer
from munet.training.precision import autocast, check_precision

log = logging.getLogger(__name__)


@dataclass
class TrainCandidate:
    """One path in training and, after :func:`train_candidates`, its results.

    Attributes:
        label: name used in logs (e.g. the path's full id).
        model: images (B, 3, S, S) -> logits (B, C), computed from ``trainable`` and frozen
            tensors on ``device``.
        trainable: the leaf tensors the optimizer updates (``requires_grad=True``).
        optimizer: the path's optimizer over ``trainable``.
        score_of_quality: the path's score for a validation accuracy.
        threshold: score to beat to count as improved (the parent's score for a child of the
            same agent, else -inf).
        device: where the tensors live; batches are moved there.
        precision: ``fp32``, ``bf16`` or ``auto`` (resolved for ``device``) for the forward
            passes of training and validation.
        evals: validation accuracies, one per validation.
        eval_steps: the train step (1-based count of this training's steps) of each validation,
            aligned with ``evals``.
        train_losses: the mean training loss over the steps since the previous validation,
            aligned with ``evals`` (NaN or inf when a step's loss was not finite).
        best_quality / best_score: of the best validation that beat the threshold.
        improved: some validation beat the threshold and the parameters are that snapshot.
        failure: why training was stopped (non-finite loss), else None.
    """

    label: str
    model: Callable[[torch.Tensor], torch.Tensor]
    trainable: list[torch.Tensor]
    optimizer: ScheduledOptimizer
    score_of_quality: Callable[[float], float]
    threshold: float
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    precision: str = "fp32"
    evals: list[float] = field(default_factory=list)
    eval_steps: list[int] = field(default_factory=list)
    train_losses: list[float] = field(default_factory=list)
    best_quality: float | None = None
    best_score: float | None = None
    improved: bool = False
    failure: str | None = None
    _snapshot: list[torch.Tensor] | None = None
    _bad: torch.Tensor | None = None
    # Loss sum since the last validation, kept on the device (read only at validation time).
    _loss_sum: torch.Tensor | None = None
    _loss_steps: int = 0

    def __post_init__(self) -> None:
        check_precision(self.precision)

    @property
    def quality(self) -> float:
        """Best validation accuracy seen (the seed's ``max(evals)``), NaN if none."""
        finite = [q for q in self.evals if math.isfinite(q)]
        return max(finite) if finite else float("nan")


@dataclass
class TrainStats:
    """Wall-clock seconds of one :func:`train_candidates` call.

    Attributes:
        first_step: the first train step (includes lazy initialisation, the seed's "compile").
        train: train steps (data included) after the first.
        eval: validation passes.
        total: the whole call.
        steps: train steps run.
    """

    first_step: float = 0.0
    train: float = 0.0
    eval: float = 0.0
    total: float = 0.0
    steps: int = 0


Images = torch.Tensor | Mapping[int, torch.Tensor]


def to_device(images: Images, device: torch.device) -> Images:
    """Moves a batch's images to ``device``: one tensor, or {image size: tensor} for models
    that read several sizes at once (multipath)."""
    if isinstance(images, torch.Tensor):
        return images.to(device, non_blocking=True)
    return {size: tensor.to(device, non_blocking=True) for size, tensor in images.items()}


def _train_step(candidate: TrainCandidate, images: Images, labels: torch.Tensor) -> None:
    if candidate.failure is not None:
        return
    images = to_device(images, candidate.device)
    labels = labels.to(candidate.device, non_blocking=True)
    candidate.optimizer.zero_grad()
    with autocast(candidate.precision, candidate.device):
        logits = candidate.model(images)
    # The loss and everything after it in float32 (bf16 logits are cast up).
    loss = F.cross_entropy(logits.float(), labels)
    loss.backward()
    norm = candidate.optimizer.step()
    # Accumulate on device: no synchronisation per step.
    bad = ~torch.isfinite(loss.detach()) | ~torch.isfinite(norm)
    candidate._bad = bad if candidate._bad is None else candidate._bad | bad
    loss_value = loss.detach()
    candidate._loss_sum = (
        loss_value if candidate._loss_sum is None else candidate._loss_sum + loss_value
    )
    candidate._loss_steps += 1


@torch.no_grad()
def evaluate_accuracy(
    model: Callable[[Images], torch.Tensor],
    batches: Iterable[tuple[Images, torch.Tensor]],
    device: torch.device,
    precision: str = "fp32",
) -> float:
    """Accuracy of ``model`` over ``batches`` of (images, labels), weighted by batch size.

    Args:
        model: images -> logits.
        batches: (images, labels); images a tensor or a dict of tensors by image size.
        device: where the model's tensors live; batches are moved there.
        precision: ``fp32``, ``bf16`` or ``auto`` (resolved for ``device``).

    Raises:
        ValueError: no examples, or an unknown precision.
    """
    correct = torch.zeros((), dtype=torch.int64, device=device)
    total = 0
    # One autocast region for the whole pass: under bf16 the casts of trainable tensors are
    # cached across batches.
    with autocast(precision, device):
        for images, labels in batches:
            labels = labels.to(device, non_blocking=True)
            logits = model(to_device(images, device))
            correct += (logits.argmax(dim=-1) == labels).sum()
            total += int(labels.shape[0])
    if total == 0:
        raise ValueError("no validation examples to evaluate on")
    return float(correct) / total


def rebatch(
    batches: Iterable[tuple[Images, torch.Tensor]], size: int
) -> list[tuple[Images, torch.Tensor]]:
    """Concatenates consecutive (images, labels) batches into batches of ``size`` examples (the
    last may be smaller); evaluation is exact whatever the batching, and faster in big ones."""
    out: list[tuple[Images, torch.Tensor]] = []
    images: list[Images] = []
    labels: list[torch.Tensor] = []
    count = 0

    def flush() -> None:
        nonlocal count
        if images:
            out.append((_cat_images(images), torch.cat(labels)))
            images.clear()
            labels.clear()
            count = 0

    for batch_images, batch_labels in batches:
        start = 0
        while start < len(batch_labels):
            take = min(size - count, len(batch_labels) - start)
            images.append(_slice_images(batch_images, start, start + take))
            labels.append(batch_labels[start : start + take])
            count += take
            start += take
            if count == size:
                flush()
    flush()
    return out


def _slice_images(images: Images, start: int, stop: int) -> Images:
    if isinstance(images, torch.Tensor):
        return images[start:stop]
    return {size: tensor[start:stop] for size, tensor in images.items()}


def _cat_images(parts: Sequence[Images]) -> Images:
    if isinstance(parts[0], torch.Tensor):
        return torch.cat(parts)  # type: ignore[arg-type]
    return {size: torch.cat([part[size] for part in parts]) for size in parts[0]}


def _record_train_loss(candidate: TrainCandidate, step: int) -> None:
    """Appends the validation's train step and the mean loss since the previous validation
    (the one device-to-host copy of the losses per validation)."""
    candidate.eval_steps.append(step)
    if candidate._loss_sum is None or candidate._loss_steps == 0:
        candidate.train_losses.append(float("nan"))
    else:
        candidate.train_losses.append(float(candidate._loss_sum) / candidate._loss_steps)
    candidate._loss_sum = None
    candidate._loss_steps = 0


def _validate(
    candidate: TrainCandidate, batches: Sequence[tuple[torch.Tensor, torch.Tensor]], step: int
) -> None:
    if candidate.failure is not None:
        return
    _record_train_loss(candidate, step)
    if candidate._bad is not None and bool(candidate._bad):
        candidate.failure = "non-finite loss or gradient"
        candidate.evals.append(float("nan"))
        if candidate._snapshot is not None:
            # As the seed: the parameters of the best validation stand; only training stops.
            log.warning(
                "%s: non-finite loss; training stopped, keeping the parameters of its best "
                "validation (quality %.4f)",
                candidate.label,
                candidate.best_quality,
            )
        else:
            log.warning("%s: non-finite loss; candidate dropped", candidate.label)
        return
    quality = evaluate_accuracy(candidate.model, batches, candidate.device, candidate.precision)
    candidate.evals.append(quality)
    score = candidate.score_of_quality(quality)
    if score > (candidate.best_score if candidate.best_score is not None else candidate.threshold):
        candidate.best_score = score
        candidate.best_quality = quality
        candidate._snapshot = [t.detach().clone() for t in candidate.trainable]


def _restore_best(candidate: TrainCandidate) -> None:
    if candidate._snapshot is not None:  # Also after a failure: the snapshot predates it.
        with torch.no_grad():
            for tensor, best in zip(candidate.trainable, candidate._snapshot, strict=True):
                tensor.copy_(best)
        candidate.improved = True
    candidate._snapshot = None
    candidate._bad = None
    candidate._loss_sum = None
    candidate._loss_steps = 0


def train_candidates(
    candidates: Sequence[TrainCandidate],
    train_batches: Iterator[tuple[torch.Tensor, torch.Tensor]],
    validation_batches: Sequence[tuple[torch.Tensor, torch.Tensor]],
    steps_between_validations: int,
    num_validations: int,
    progress: bool | None = None,
    on_validation: Callable[[int, Sequence[TrainCandidate]], None] | None = None,
) -> TrainStats:
    """Trains ``candidates`` side by side on the same batches, validating periodically.

    Args:
        candidates: the paths of a generation (each on its device).
        train_batches: (images, labels) train batches, at least
            ``steps_between_validations * num_validations`` of them.
        validation_batches: the validation set, reused at every validation.
        steps_between_validations: train steps between two validations.
        num_validations: validations in the training (the last one ends it).
        progress: show a progress bar (None: in a terminal or a notebook).
        on_validation: called after each validation with its index (1-based).

    Returns:
        Timings. Results are written into the candidates (``evals``, ``eval_steps``,
        ``train_losses``, ``improved``, ...).

    Raises:
        ValueError: non-positive step counts, or the train iterator ends early.
    """
    from munet.progress import bars_enabled, progress_bar

    if steps_between_validations <= 0 or num_validations <= 0:
        raise ValueError(
            f"steps_between_validations ({steps_between_validations}) and num_validations "
            f"({num_validations}) must be positive"
        )
    stats = TrainStats()
    start = time.perf_counter()
    devices = {c.device for c in candidates}
    pool = ThreadPoolExecutor(len(candidates)) if len(devices) > 1 else None

    def for_each(fn: Callable[[TrainCandidate], None]) -> None:
        if pool is None:
            for candidate in candidates:
                fn(candidate)
        else:
            list(pool.map(fn, candidates))

    total_steps = steps_between_validations * num_validations
    # Under a run's overall bar, if any; gone once the generation's training is over.
    bar = progress_bar(total_steps, "train", "step", bars_enabled(progress), leave=False)
    try:
        for step in range(total_steps):
            step_start = time.perf_counter()
            try:
                images, labels = next(train_batches)
            except StopIteration:
                raise ValueError(
                    f"train batches ended after {step} of {total_steps} steps"
                ) from None
            for_each(lambda c, i=images, y=labels: _train_step(c, i, y))
            if step == 0:
                for device in devices:
                    if device.type == "cuda":
                        torch.cuda.synchronize(device)
                stats.first_step = time.perf_counter() - step_start
            else:
                stats.train += time.perf_counter() - step_start
            stats.steps += 1
            bar.update(1)
            if (step + 1) % steps_between_validations == 0:
                eval_start = time.perf_counter()
                for_each(lambda c, s=step + 1: _validate(c, validation_batches, s))
                stats.eval += time.perf_counter() - eval_start
                bar.set_postfix_str(
                    " ".join(f"{c.evals[-1]:.3f}" if c.evals else "-" for c in candidates)
                )
                if on_validation is not None:
                    on_validation((step + 1) // steps_between_validations, candidates)
    finally:
        bar.close()
        if pool is not None:
            pool.shutdown()
    for candidate in candidates:
        _restore_best(candidate)
    stats.total = time.perf_counter() - start
    return stats
