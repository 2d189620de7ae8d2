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
``card.json`` (see :mod:`munet.pretrain.card`).

One process at a time: the work dir is locked (``.lock``, an flock the kernel drops when the
process dies); a second process gets :class:`PretrainLockedError`.

Devices: the batches are rendered ahead of the training, in a separate process on a CPU and on
the device from a second thread on a GPU (:mod:`munet.pretrain.render`; the recipes are torch
ops); ``precision="bf16"`` runs the model under bf16 autocast (the float32 weights and AdamW
state stay float32).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from munet.models.vit import VisionTransformer
from munet.pretrain.card import CARD_FILE, ROOT_DTYPES, ROOT_FILE, make_card, write_root
from munet.pretrain.model import lr_at, new_model, new_optimizer
from munet.pretrain.objectives import pretrain_loss
from munet.pretrain.render import batch_source, resolve_render
from munet.pretrain.spec import PretrainSpec
from munet.pretrain.stream import HeldOut, batch_for_step, evaluate
from munet.pretrain.workdir import PretrainLockedError, WorkDirLock, load_state, save_state

log = logging.getLogger("munet.pretrain")

__all__ = [
    "CARD_FILE",
    "HeldOut",
    "ROOT_DTYPES",
    "ROOT_FILE",
    "PretrainLockedError",
    "PretrainResult",
    "PretrainSpec",
    "PretrainStateError",
    "batch_for_step",
    "evaluate",
    "lr_at",
    "make_card",
    "pretrain",
]
PRECISIONS = ("fp32", "bf16")
# Steps timed (after PROBE_WARMUP untimed ones) before a --minutes budget is turned into a
# step count.
PROBE_WARMUP = 3
PROBE_STEPS = 10


class PretrainStateError(ValueError):
    """The work dir holds a run of another spec (resuming would mix two recipes)."""


@dataclass
class PretrainResult:
    """What a finished run left: the files and its figures."""

    root_file: Path
    card_file: Path
    card: dict[str, Any]


def pretrain(
    spec: PretrainSpec,
    work_dir: str | Path,
    *,
    steps: int | None = None,
    minutes: float | None = None,
    checkpoint_every: int = 100,
    root_dtype: str = "float32",
    device: str | None = None,
    precision: str = "fp32",
    progress: bool = True,
    command: str = "",
    stop_at: int | None = None,
    max_seconds: float | None = None,
    eval_examples: int = 1024,
    render: str = "auto",
) -> PretrainResult:
    """Pretrains ``spec``'s model in ``work_dir`` (resuming a run found there).

    Args:
        spec: the recipe and model.
        work_dir: where state, root and card go (created; locked while this runs).
        steps / minutes: the budget, exactly one of them. Minutes become a step count after
            timing the first steps (stored, so a resumed run keeps it; the card records it,
            and ``steps=`` that count reproduces the run).
        checkpoint_every: steps between resumable checkpoints; never more than the run's
            step count (a longer interval is clamped to it, with a log line), so a run
            always leaves a checkpoint.
        root_dtype: ``float32``, ``float16`` or ``bfloat16`` for the shipped root file.
        device: ``cpu``, ``cuda``...; None: CUDA when available.
        precision: ``fp32``, or ``bf16`` (autocast; for CUDA and CPUs with native bf16).
        progress: show a tqdm bar with ETA (on stderr).
        command: the command line, recorded in the card.
        stop_at: end this session once this step is done (a checkpoint is written there),
            as if killed just after it; a rerun continues. None: run to the budget.
        max_seconds: end this session (with a checkpoint) once it has trained this long, so an
            outer time limit never finds it between checkpoints; a rerun continues.
        eval_examples: held-out images scored at each checkpoint.
        render: where the batches are rendered, ``auto``, ``thread`` or ``process``
            (:mod:`munet.pretrain.render`); the weights are the same either way.

    Raises:
        ValueError: bad budget or spec; PretrainStateError: the work dir holds another spec;
        PretrainLockedError: another process works in ``work_dir``.
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
    if precision not in PRECISIONS:
        raise ValueError(f"precision {precision!r}: expected one of {', '.join(PRECISIONS)}")
    if max_seconds is not None and not max_seconds > 0:
        raise ValueError(f"max_seconds {max_seconds!r}: expected a positive number")
    torch_device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if torch_device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            f"device {device!r}: this torch ({torch.__version__}) sees no CUDA device; use "
            "--device cpu or a CUDA build of torch on a machine with a GPU"
        )
    resolve_render(render, torch_device)  # A bad value fails before the work dir is made.
    work = Path(work_dir)
    rerun = work.exists()
    work.mkdir(parents=True, exist_ok=True)
    with WorkDirLock(work):
        return _run(
            spec, work, rerun, steps, minutes, checkpoint_every, root_dtype, torch_device,
            precision, progress, command, stop_at, max_seconds, eval_examples, render,
        )  # fmt: skip


def _start_or_resume(
    work: Path, rerun: bool, spec: PretrainSpec, steps: int | None, model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
) -> dict[str, Any]:  # fmt: skip
    """The run's meta: loaded from ``work`` (weights into model and optimizer), or new;
    ``rerun``: the work dir existed before this call."""
    meta = load_state(work, model, optimizer)
    if meta is not None:
        # A field added since the run began takes its default (which the run had); one removed
        # since loads only at the value that turned it off.
        try:
            stored = PretrainSpec.from_dict(meta["spec"])
        except ValueError as err:
            message = f"{work} holds a run this munet cannot resume: {err}"
            raise PretrainStateError(message) from None
        if stored != spec:
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
        return meta
    if rerun:
        # A rerun that finds no checkpoint (killed before its first one) says so, rather than
        # silently redoing the steps the user may think were saved.
        log.info("%s holds no checkpoint to resume (no state.json): starting over at step 0", work)
    else:
        log.info("new pretraining run in %s", work)
    return {
        "spec": dataclasses.asdict(spec),
        "step": 0,
        "total_steps": steps,  # None until a minutes budget has been timed.
        "seconds": 0.0,
        "history": [],
    }


def _clamped_interval(checkpoint_every: int, total_steps: int | None) -> int:
    """The checkpoint interval: ``checkpoint_every``, or a tenth of the run when that is not
    shorter than the run (a run killed before its end then still leaves a checkpoint; the
    interval changes no weight, only how often they are saved)."""
    if total_steps is not None and checkpoint_every >= total_steps:
        interval = max(1, math.ceil(total_steps / 10))
        if interval != checkpoint_every:
            log.info(
                "checkpoint interval %d is not shorter than the run's %d steps: checkpointing "
                "every %d steps",
                checkpoint_every,
                total_steps,
                interval,
            )
        return interval
    return checkpoint_every


def _run(
    spec: PretrainSpec, work: Path, rerun: bool, steps: int | None, minutes: float | None,
    checkpoint_every: int, root_dtype: str, torch_device: torch.device, precision: str,
    progress: bool, command: str, stop_at: int | None, max_seconds: float | None,
    eval_examples: int, render: str,
) -> PretrainResult:  # fmt: skip
    recipe = spec.make_recipe().to(torch_device)
    model = new_model(spec).to(torch_device)
    optimizer = new_optimizer(model, spec)
    meta = _start_or_resume(work, rerun, spec, steps, model, optimizer)
    meta["device"] = torch_device.type
    meta["precision"] = precision
    end = meta["total_steps"]  # This session's last step (None: a minutes budget not yet timed).
    if stop_at is not None:
        end = stop_at if end is None else min(end, stop_at)
    steps_left = None if end is None else end - meta["step"]
    meta["render"] = render = resolve_render(render, torch_device, steps_left)
    if meta["step"] >= (meta["total_steps"] or math.inf):
        return _write_root(work, model, spec, meta, root_dtype, command)
    interval = _clamped_interval(checkpoint_every, meta["total_steps"])

    # Every session ends at a checkpoint, which scores these.
    held_out = HeldOut(spec, recipe, torch_device, eval_examples)
    threads = torch.get_num_threads()
    bar = None
    if progress and meta["total_steps"] is not None:
        bar = _bar(meta["total_steps"], meta["step"])
    session_start = time.perf_counter()
    seconds_before = meta["seconds"]
    # Summed on the device and read only at checkpoints: a per-step read would make the host
    # wait for the GPU every step.
    loss_sum = torch.zeros((), device=torch_device)
    loss_count = 0
    # Where a minutes budget's timing starts (moved past the warm-up steps when they run here).
    probe_start, probe_from = session_start, meta["step"]
    # The next batches are rendered beside the training (render.py); each is a pure function
    # of its step, so where it is rendered never changes the weights.
    with batch_source(render, spec, recipe, torch_device, meta["step"]) as batches:
        while meta["total_steps"] is None or meta["step"] < meta["total_steps"]:
            step = meta["step"]
            images, labels = batches.batch(step)
            total_for_lr = meta["total_steps"] or _minutes_probe_total(minutes)
            for group in optimizer.param_groups:
                group["lr"] = lr_at(spec, step, total_for_lr)
            loss = _train_step(model, optimizer, images, labels, spec, precision, torch_device)
            loss_sum += loss
            loss_count += 1
            meta["step"] = step + 1
            meta["seconds"] = seconds_before + time.perf_counter() - session_start
            if meta["total_steps"] is None and meta["step"] == PROBE_WARMUP:
                _sync(torch_device)
                probe_start, probe_from = time.perf_counter(), meta["step"]
            if meta["total_steps"] is None and meta["step"] >= PROBE_WARMUP + PROBE_STEPS:
                # Timed after a few warm-up steps (a GPU's first steps pay for its set-up)
                # and with the device synchronised (its queue would hide the true rate).
                _sync(torch_device)
                per_step = (time.perf_counter() - probe_start) / (meta["step"] - probe_from)
                left = minutes * 60 - (time.perf_counter() - session_start)
                meta["total_steps"] = meta["step"] + max(0, int(left / per_step))
                log.info(
                    "%.1f minutes at %.3f s/step: %d steps", minutes, per_step, meta["total_steps"]
                )
                interval = _clamped_interval(checkpoint_every, meta["total_steps"])
                if progress:
                    bar = _bar(meta["total_steps"], meta["step"])
            if bar is not None:
                bar.update(1)
            done = meta["total_steps"] is not None and meta["step"] >= meta["total_steps"]
            stopping = stop_at is not None and meta["step"] >= stop_at
            if max_seconds is not None and time.perf_counter() - session_start >= max_seconds:
                if not done:
                    log.info(
                        "time limit of %.0f s reached at step %d: checkpointing; rerun to go on",
                        max_seconds,
                        meta["step"],
                    )
                stopping = True
            if meta["step"] % interval == 0 or done or stopping:
                accuracy = evaluate(model, held_out)
                meta["history"].append(
                    {
                        "step": meta["step"],
                        "train_loss": round(float(loss_sum) / max(1, loss_count), 4),
                        "val_accuracy": accuracy,
                        "seconds": round(meta["seconds"], 3),
                    }
                )
                loss_sum.zero_()
                loss_count = 0
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


def _train_step(
    model: torch.nn.Module, optimizer: torch.optim.Optimizer, images: torch.Tensor,
    labels: torch.Tensor, spec: PretrainSpec, precision: str, device: torch.device,
) -> torch.Tensor:  # fmt: skip
    """One AdamW step; the loss (detached, on the device)."""
    images = images.to(device, non_blocking=True)
    labels = labels.to(device, non_blocking=True)
    with _autocast(precision, device):
        loss = pretrain_loss(model(images), images, labels, spec)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss.detach()


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _autocast(precision: str, device: torch.device):
    if precision == "bf16":
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def _minutes_probe_total(minutes: float | None) -> int:
    # While a minutes budget is timed, the schedule assumes a long run (warmup only: the first
    # probe steps sit in the warmup of any budget of 260 steps or more).
    return max((PROBE_WARMUP + PROBE_STEPS) * 20, int((minutes or 1) * 60))


def _bar(total: int, initial: int):
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, unit="step", desc="pretrain", dynamic_ncols=True)


def _write_root(
    work: Path,
    model: VisionTransformer,
    spec: PretrainSpec,
    meta: dict[str, Any],
    root_dtype: str,
    command: str,
) -> PretrainResult:
    return PretrainResult(*write_root(work, model, spec, meta, root_dtype, command))
