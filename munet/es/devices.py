"""Devices for the multi-device estimators: naming and checking them, moving problems and data
onto them, and running one piece of work per device at the same time.

A device list may name the same device more than once (``["cpu", "cpu"]`` or
``["cuda:0", "cuda:0"]``): each entry is one shard of the particles with its own worker thread
(and, on CUDA, its own stream), so the multi-device code runs and is tested on a machine
without accelerators.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from typing import Any

import torch

from munet.es.problem import InnerProblem

DEVICE_TYPES = ("cpu", "cuda")


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


class DeviceWorkers:
    """One worker thread (and on CUDA one stream) per device entry; ``run`` calls a function
    for every entry at the same time and returns the results in entry order.

    Each call runs inside ``torch.cuda.device`` and its entry's stream on CUDA, with the
    caller's torch thread count (torch's CPU thread setting is per thread), and waits for its
    stream before returning, so results are ready to read.
    """

    def __init__(self, devices: Sequence[torch.device]) -> None:
        self.devices = list(devices)
        self._pool: ThreadPoolExecutor | None = None
        self._streams: list[Any] | None = None

    def _streams_for_devices(self) -> list[Any]:
        if self._streams is None:
            self._streams = [
                torch.cuda.Stream(device=device) if device.type == "cuda" else None
                for device in self.devices
            ]
        return self._streams

    def _call(self, index: int, function: Callable[..., Any], threads: int, argument: Any):
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)
        device = self.devices[index]
        stream = self._streams_for_devices()[index]
        with ExitStack() as stack:
            if stream is not None:
                stack.enter_context(torch.cuda.device(device))
                stack.enter_context(torch.cuda.stream(stream))
            result = function(index, device, argument)
            if stream is not None:
                stream.synchronize()
        return result

    def run(self, function: Callable[[int, torch.device, Any], Any], arguments: Sequence[Any]):
        """``[function(i, devices[i], arguments[i]) for every i]``, the calls running
        concurrently (inline when there is one device)."""
        if len(arguments) != len(self.devices):
            raise ValueError(f"{len(arguments)} arguments for {len(self.devices)} devices")
        threads = torch.get_num_threads()
        if len(self.devices) == 1:
            return [self._call(0, function, threads, arguments[0])]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(
                max_workers=len(self.devices), thread_name_prefix="munet-es-device"
            )
        futures = [
            self._pool.submit(self._call, index, function, threads, argument)
            for index, argument in enumerate(arguments)
        ]
        return [future.result() for future in futures]

    def close(self) -> None:
        """Stops the worker threads (a later ``run`` starts new ones)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
