"""Rendering the pretraining batches beside the training loop, so training never waits for them.

A batch is a pure function of ``(spec, step)`` (:func:`munet.pretrain.stream.batch_for_step`),
bit-equal whatever the thread count or process that renders it, so where it is rendered
changes only the speed, never the weights. Two places:

- ``thread``: a second thread of the training process renders the next batch on the training
  device. Torch ops release the GIL, but the recipes' small tensors spend much of a render in
  Python, so on a CPU the render thread and the training step take the GIL from each other.
  On a GPU it is the only choice (the batch is made on the device).
- ``process``: a spawned process (one torch thread) renders ahead into a ring of shared-memory
  slots; the training process only copies a finished batch out. CPU only.

On 2 vCPUs (``python benchmarks/pretrain_throughput.py --agent VitCpu --steps 100 --rounds 3
[--threads 1]``, which times both in the same rounds; the figures, for a recipe mix munet
pretrain does not offer, are in experiments/pretrain_history.md): with every core training
(the default thread count) the process is about 5% faster; with a core left free
(``--threads 1``) both reach 0.97 of a loop over pre-rendered batches, the thread by 1-5%
ahead.

``auto`` (the default) is ``process`` on a CPU and ``thread`` on a GPU, and ``thread`` for a
session of under ``PROCESS_MIN_STEPS`` steps (a smoke run or a test), where starting the process
(a second Python importing torch, about a second) would cost more than it saves, and in a
daemonic process (a ``multiprocessing.Pool`` worker, as in the lab's root_recipe_choice.py),
which may not start one.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

import torch

from munet.pretrain.spec import PretrainSpec
from munet.pretrain.stream import batch_for_step

RENDER_MODES = ("auto", "thread", "process")
# Sessions shorter than this render on a thread under ``auto``.
PROCESS_MIN_STEPS = 200
# Batches the render process may be ahead of the training loop.
PROCESS_SLOTS = 3
# How long the loop waits for one batch before it checks the render process is still alive.
POLL_SECONDS = 5.0


class RenderError(RuntimeError):
    """The render process failed or died."""


class BatchSource(Protocol):
    def batch(self, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The batch of ``step``; steps are asked for in increasing order, one by one."""
        ...


def resolve_render(render: str, device: torch.device, steps_left: int | None = None) -> str:
    """``thread`` or ``process`` for ``render`` on ``device``, for a session of ``steps_left``
    steps (None: not known yet, a minutes budget); ValueError on a bad value."""
    if render not in RENDER_MODES:
        raise ValueError(f"render {render!r}: expected one of {', '.join(RENDER_MODES)}")
    daemonic = multiprocessing.current_process().daemon
    if render == "auto":
        short = steps_left is not None and steps_left < PROCESS_MIN_STEPS
        return "process" if device.type == "cpu" and not short and not daemonic else "thread"
    if render == "process" and daemonic:
        raise ValueError(
            "render 'process': this is a daemonic process (a multiprocessing.Pool worker), "
            "which may not start one; use render 'thread' (or auto)"
        )
    if render == "process" and device.type != "cpu":
        raise ValueError(
            f"render 'process' renders on the CPU; device {device.type!r} renders its batches "
            "itself: use --render thread (or auto)"
        )
    return render


@contextlib.contextmanager
def batch_source(
    render: str, spec: PretrainSpec, recipe, device: torch.device, first_step: int
) -> Iterator[BatchSource]:
    """The batches of steps ``first_step``, ``first_step + 1``, ..., rendered ahead
    (``render``: ``thread`` or ``process``, see :func:`resolve_render`)."""
    if render == "process":
        source = _ProcessSource(spec, first_step)
    else:
        source = _ThreadSource(spec, recipe, first_step)
    try:
        yield source
    finally:
        source.close()


class _ThreadSource:
    def __init__(self, spec: PretrainSpec, recipe, first_step: int):
        self._spec, self._recipe = spec, recipe
        self._pool = ThreadPoolExecutor(max_workers=1)
        self._expected = first_step
        self._pending = self._pool.submit(batch_for_step, spec, recipe, first_step)

    def batch(self, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        _check_order(step, self._expected)
        result = self._pending.result()
        self._expected = step + 1
        self._pending = self._pool.submit(batch_for_step, self._spec, self._recipe, step + 1)
        return result

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


class _ProcessSource:
    def __init__(self, spec: PretrainSpec, first_step: int):
        context = torch.multiprocessing.get_context("spawn")
        size = spec.image_size
        self._images = torch.empty(PROCESS_SLOTS, spec.batch_size, 3, size, size).share_memory_()
        self._labels = torch.empty(PROCESS_SLOTS, spec.batch_size, dtype=torch.int64)
        self._labels.share_memory_()
        self._free = context.Queue()
        self._ready = context.Queue()
        for slot in range(PROCESS_SLOTS):
            self._free.put(slot)
        self._expected = first_step
        self._process = context.Process(
            target=_render_worker,
            args=(
                os.getpid(),
                spec,
                first_step,
                self._images,
                self._labels,
                self._free,
                self._ready,
            ),
            name="munet-pretrain-render",
            daemon=True,
        )
        self._process.start()

    def batch(self, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        _check_order(step, self._expected)
        while True:
            try:
                message = self._ready.get(timeout=POLL_SECONDS)
                break
            except queue.Empty:
                if not self._process.is_alive():
                    raise RenderError(
                        f"the render process (pid {self._process.pid}) died with exit code "
                        f"{self._process.exitcode} before step {step}'s batch"
                    ) from None
        if message[0] == "error":
            raise RenderError(f"rendering the batch of step {step} failed:\n{message[1]}")
        _, rendered_step, slot = message
        if rendered_step != step:  # The protocol's own invariant: one worker, in order.
            raise RenderError(f"the render process sent step {rendered_step}, not {step}")
        images, labels = self._images[slot].clone(), self._labels[slot].clone()
        self._free.put(slot)
        self._expected = step + 1
        return images, labels

    def close(self) -> None:
        # The worker renders ahead without end (a minutes budget has no last step yet): stop it.
        if self._process.is_alive():
            self._process.terminate()
        self._process.join(timeout=10)
        if self._process.is_alive():
            self._process.kill()
            self._process.join(timeout=10)
        for q in (self._free, self._ready):
            q.close()
            q.cancel_join_thread()


def _check_order(step: int, expected: int) -> None:
    if step != expected:
        raise ValueError(f"step {step}: batches are rendered in order, expected step {expected}")


def _render_worker(
    parent: int, spec: PretrainSpec, first_step: int, images: torch.Tensor,
    labels: torch.Tensor, free, ready,
) -> None:  # fmt: skip
    from munet.lifeline import die_with_parent

    die_with_parent(parent)
    # One thread: the training process has the other cores, and a batch is bit-equal at any
    # thread count.
    torch.set_num_threads(1)
    try:
        recipe = spec.make_recipe()
        step = first_step
        while True:
            slot = free.get()
            batch_images, batch_labels = batch_for_step(spec, recipe, step)
            images[slot].copy_(batch_images)
            labels[slot].copy_(batch_labels)
            ready.put(("batch", step, slot))
            step += 1
    except Exception:  # Sent to the training loop, which raises it.
        import traceback

        ready.put(("error", traceback.format_exc()))
