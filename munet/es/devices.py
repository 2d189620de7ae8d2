"""Devices for the multi-device estimators: naming and checking them, moving problems and data
onto them, and running one piece of work per device at the same time (worker threads, or CUDA
streams driven from one thread).

A device list may name the same device more than once (``["cpu", "cpu"]`` or
``["cuda:0", "cuda:0"]``): each entry is one shard of the particles, with its own worker
thread on the CPU and its own stream on CUDA, so the multi-device code runs and is tested on a
machine without accelerators.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from typing import Any

import torch

from munet.es.problem import InnerProblem

DEVICE_TYPES = ("cpu", "cuda")
# A shard's work: (entry index, device, argument) -> a generator that yields between inner
# steps and returns the shard's result.
WorkFunction = Callable[[int, torch.device, Any], Generator[None, None, Any]]


def _cuda_count() -> int:
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def resolve_devices(
    devices: Sequence[str | torch.device], num_devices: int | None = None
) -> list[torch.device]:
    """Parses and checks a device list.

    Args:
        devices: device names (``"cpu"``, ``"cuda"``, ``"cuda:1"``) or ``torch.device``; the
            same device may appear several times.
        num_devices: when given, the number of devices the caller expects; a list of another
            length is an error (the reference refuses to run on a device count other than the
            one it was configured for).

    Returns:
        One ``torch.device`` per entry; ``"cuda"`` without an index becomes the current CUDA
        device.

    Raises:
        ValueError: for an empty list, an unknown device type, a CUDA device this machine does
            not have, or a length other than ``num_devices``.
    """
    if isinstance(devices, (str, torch.device)):
        raise ValueError(f"devices must be a list of devices, got the single value {devices!r}")
    names = list(devices)
    if not names:
        raise ValueError("devices is empty; give at least one device, e.g. ['cpu']")
    if num_devices is not None and len(names) != num_devices:
        raise ValueError(
            f"device count mismatch: devices lists {len(names)} ({', '.join(map(str, names))}); "
            f"expected num_devices={num_devices}"
        )
    resolved = []
    for name in names:
        try:
            device = torch.device(name)
        except (RuntimeError, TypeError):
            raise ValueError(f"unknown device {name!r}; expected cpu, cuda or cuda:N") from None
        if device.type not in DEVICE_TYPES:
            raise ValueError(f"unsupported device {name!r}; expected cpu, cuda or cuda:N")
        if device.type == "cuda":
            count = _cuda_count()
            if count == 0:
                raise ValueError(f"device {name!r} asked for, but this machine has no CUDA device")
            index = torch.cuda.current_device() if device.index is None else device.index
            if index >= count:
                found = ", ".join(f"cuda:{i}" for i in range(count))
                raise ValueError(
                    f"device {name!r} does not exist: found {count} CUDA device(s) ({found})"
                )
            device = torch.device("cuda", index)
        resolved.append(device)
    return resolved


def devices_for_count(count: int) -> list[str]:
    """``count`` devices of the default kind: ``cuda:0 .. cuda:count-1`` where CUDA exists,
    else ``count`` CPU shards.

    Raises:
        ValueError: for a count < 1, or more CUDA devices than this machine has.
    """
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise ValueError(f"device count must be a positive int, got {count!r}")
    available = _cuda_count()
    if available == 0:
        return ["cpu"] * count
    if count > available:
        raise ValueError(
            f"device count mismatch: {count} devices asked for, this machine has {available} "
            f"CUDA device(s); to run several shards on one device list it repeatedly, e.g. "
            f"cuda:0,cuda:0"
        )
    return [f"cuda:{index}" for index in range(count)]


def move_tree(tree: Any, device: torch.device) -> Any:
    """``tree`` (tensors inside dicts, tuples, lists; anything else kept) with every tensor on
    ``device``; tensors already there are returned as they are (no copy)."""
    if isinstance(tree, torch.Tensor):
        return tree.to(device)
    if isinstance(tree, dict):
        return {key: move_tree(value, device) for key, value in tree.items()}
    if isinstance(tree, (tuple, list)):
        return type(tree)(move_tree(value, device) for value in tree)
    return tree


def problem_on_device(problem: InnerProblem, device: torch.device) -> InnerProblem:
    """The problem with its tensors on ``device``, for running ``step`` there.

    A problem that defines ``to(device)`` is asked to move itself. Otherwise a shallow copy is
    made whose tensor attributes (directly, or inside dicts/tuples/lists) are moved; on the CPU
    the problem itself is returned (its tensors are CPU tensors already). Random draws
    (``init_state``, ``sample_batch``) always stay with the original problem on the CPU, so the
    random stream does not depend on the devices.
    """
    if hasattr(problem, "to") and callable(problem.to):
        return problem.to(device)
    if device.type == "cpu":
        return problem
    moved = copy.copy(problem)
    for name, value in vars(problem).items():
        setattr(moved, name, move_tree(value, device))
    return moved


CONCURRENCY = ("auto", "threads", "streams")


def _drive(work: Generator[None, None, Any]) -> Any:
    """Runs a shard's generator to its end; returns what it returns."""
    while True:
        try:
            next(work)
        except StopIteration as stop:
            return stop.value


class DeviceWorkers:
    """Runs one piece of work per device entry at the same time; results in entry order.

    A piece of work is a generator function ``work(index, device, argument)`` that yields
    between inner steps and returns its result. Two ways to run them concurrently:

    - ``"threads"``: one worker thread per entry runs its generator to the end. On the CPU this
      is the only way to use several cores at once; each thread runs with the caller's torch
      thread count (torch's CPU thread setting is per thread).
    - ``"streams"``: the calling thread takes one step of every entry in turn, each inside its
      entry's CUDA stream. Kernel launches return at once, so the devices (and the streams of
      a repeated device) compute at the same time while one thread launches, with no contention
      for Python's GIL. On the CPU this interleaves the entries on the calling thread.

    ``"auto"`` picks ``"streams"`` when every device is a CUDA device, else ``"threads"``.
    Every entry has its own CUDA stream; results are ready to read when ``run`` returns.
    """

    def __init__(self, devices: Sequence[torch.device], concurrency: str = "auto") -> None:
        if concurrency not in CONCURRENCY:
            raise ValueError(
                f"unknown concurrency {concurrency!r}; known: {', '.join(CONCURRENCY)}"
            )
        self.devices = list(devices)
        if concurrency == "auto":
            all_cuda = all(device.type == "cuda" for device in self.devices)
            concurrency = "streams" if all_cuda else "threads"
        self.concurrency = concurrency
        self._pool: ThreadPoolExecutor | None = None
        self._streams: list[Any] | None = None

    def _stream(self, index: int) -> Any:
        if self._streams is None:
            self._streams = [
                torch.cuda.Stream(device=device) if device.type == "cuda" else None
                for device in self.devices
            ]
        return self._streams[index]

    def _on_device(self, index: int) -> ExitStack:
        """Enters entry ``index``'s CUDA device and stream (nothing on the CPU)."""
        stack = ExitStack()
        stream = self._stream(index)
        if stream is not None:
            stack.enter_context(torch.cuda.device(self.devices[index]))
            stack.enter_context(torch.cuda.stream(stream))
        return stack

    def _synchronize(self, index: int) -> None:
        stream = self._stream(index)
        if stream is not None:
            stream.synchronize()

    def _in_thread(self, index: int, work: WorkFunction, threads: int, argument: Any) -> Any:
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)
        with self._on_device(index):
            result = _drive(work(index, self.devices[index], argument))
        self._synchronize(index)
        return result

    def _interleaved(self, work: WorkFunction, arguments: Sequence[Any]) -> list[Any]:
        generators = [
            work(index, device, argument)
            for index, (device, argument) in enumerate(zip(self.devices, arguments, strict=True))
        ]
        results: list[Any] = [None] * len(generators)
        running = list(range(len(generators)))
        while running:
            for index in list(running):
                with self._on_device(index):
                    try:
                        next(generators[index])
                    except StopIteration as stop:
                        results[index] = stop.value
                        running.remove(index)
        for index in range(len(generators)):
            self._synchronize(index)
        return results

    def run(self, work: WorkFunction, arguments: Sequence[Any]) -> list[Any]:
        """``[result of work(i, devices[i], arguments[i]) for every i]``, run concurrently
        (inline when there is one device)."""
        if len(arguments) != len(self.devices):
            raise ValueError(f"{len(arguments)} arguments for {len(self.devices)} devices")
        if self.concurrency == "streams" or len(self.devices) == 1:
            return self._interleaved(work, arguments)
        if self._pool is None:
            self._pool = ThreadPoolExecutor(
                max_workers=len(self.devices), thread_name_prefix="munet-es-device"
            )
        threads = torch.get_num_threads()
        futures = [
            self._pool.submit(self._in_thread, index, work, threads, argument)
            for index, argument in enumerate(arguments)
        ]
        return [future.result() for future in futures]

    def close(self) -> None:
        """Stops the worker threads (a later ``run`` starts new ones)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
