"""Executors: run search jobs in this process or as Ray tasks, and hand back results as they end.

A *job* is a module-level function applied to one JSON-like payload, `fn(payload) -> result`
(both plain data, so a job can travel to another process and its result into a checkpoint).
Drivers `submit` jobs under their own ids and `wait` for finished ones:

- `InProcessExecutor` (the default): `wait` runs the oldest submitted job to completion in this
  process and returns it. Order is first-in, first-out, so a seeded search replays exactly, and
  a driver that keeps one job in flight behaves like a plain sequential loop.
- `RayExecutor`: each job is a Ray task with its own resources (`num_cpus`, `num_gpus`);
  `wait` returns whichever jobs finished first (Ray's `wait`). A task whose worker process dies
  (killed, out of memory, a lost node) is re-run by Ray up to `max_retries` times; an exception
  raised by the job itself is not retried and comes back as a failure.

Ray is imported only inside `RayExecutor` (install the `munet-evolve[ray]` extra).
"""

from __future__ import annotations

import collections
import logging
import os
import signal
import sys
import threading
import traceback
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from munet.job_cancel import run_watched

JobFunction = Callable[[Any], Any]

RAY_EXTRA_HINT = "Ray is not installed; install the extra with: pip install 'munet-evolve[ray]'"


@dataclass(frozen=True)
class JobOutcome:
    """A finished job: its id and either its result or the error that ended it.

    Attributes:
        job_id: the id it was submitted under.
        result: the function's return value (None when it failed).
        error: None on success, else a one-line description of the failure.
    """

    job_id: int
    result: Any = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class Executor(ABC):
    """Runs jobs; `num_workers` is how many may run at the same time."""

    num_workers: int = 1

    @abstractmethod
    def submit(self, job_id: int, fn: JobFunction, payload: Any) -> None:
        """Starts (or queues) `fn(payload)` under `job_id` (unique among jobs in flight)."""

    @abstractmethod
    def wait(self) -> list[JobOutcome]:
        """Blocks until at least one job has finished; returns the finished ones.

        Raises:
            RuntimeError: nothing is in flight.
        """

    @abstractmethod
    def in_flight(self) -> list[int]:
        """Ids of the jobs submitted and not yet returned by `wait`, oldest first."""

    @abstractmethod
    def cancel_all(self) -> list[int]:
        """Stops every job in flight (their results are dropped); returns their ids."""

    def close(self) -> None:
        """Releases what the executor holds (cancels jobs still in flight)."""
        self.cancel_all()

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _check_new_id(job_id: int, in_flight: Any) -> None:
    if job_id in in_flight:
        raise ValueError(f"job id {job_id} is already in flight")


class InProcessExecutor(Executor):
    """Runs jobs one at a time in this process, oldest first, when the driver waits.

    Args:
        num_workers: how many jobs a driver should keep submitted (the queue length it fills);
            they still run one after another. 1 = a plain sequential loop.
    """

    def __init__(self, num_workers: int = 1) -> None:
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 1:
            raise ValueError(f"num_workers must be an int >= 1, got {num_workers!r}")
        self.num_workers = num_workers
        self._queue: collections.OrderedDict[int, tuple[JobFunction, Any]] = (
            collections.OrderedDict()
        )

    def submit(self, job_id: int, fn: JobFunction, payload: Any) -> None:
        _check_new_id(job_id, self._queue)
        self._queue[job_id] = (fn, payload)

    def wait(self) -> list[JobOutcome]:
        if not self._queue:
            raise RuntimeError("wait() with no job in flight")
        job_id, (fn, payload) = self._queue.popitem(last=False)
        try:
            return [JobOutcome(job_id, result=fn(payload))]
        except Exception as error:  # a failed job is a result, not a crash of the driver
            return [JobOutcome(job_id, error=_describe(error))]

    def in_flight(self) -> list[int]:
        return list(self._queue)

    def cancel_all(self) -> list[int]:
        cancelled = list(self._queue)
        self._queue.clear()
        return cancelled


class RayExecutor(Executor):
    """Runs each job as a Ray task with its own resources; results come back as they finish.

    Connects to `address` (a running cluster, e.g. "ray://host:10001" or "host:6379"), or
    starts a local Ray instance on 127.0.0.1 when `address` is None and Ray is not already
    initialised in this process (a test may initialise it first and share it).

    Args:
        num_workers: jobs to keep in flight; by default the cluster's CPUs / `num_cpus`.
        address: Ray address, or None for an existing or new local instance.
        num_cpus: CPUs reserved per job (Ray schedules no more jobs than fit).
        num_gpus: GPUs per job (Petridish gives each job one).
        max_retries: re-runs of a job whose worker process died (not of a raised exception).
        local_num_cpus: CPUs of a local instance started here (None: all).

    Raises:
        ImportError: Ray is not installed (names the `munet-evolve[ray]` extra).
        ValueError: bad resource numbers.
    """

    def __init__(
        self,
        num_workers: int | None = None,
        *,
        address: str | None = None,
        num_cpus: float = 1.0,
        num_gpus: float = 0.0,
        max_retries: int = 3,
        local_num_cpus: int | None = None,
    ) -> None:
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        try:
            import ray
        except ImportError as error:
            raise ImportError(RAY_EXTRA_HINT) from error
        if address is None and not ray.is_initialized():
            bind_local_ray_to_loopback()
        if num_cpus < 0 or num_gpus < 0 or (num_cpus == 0 and num_gpus == 0):
            raise ValueError(
                f"each job needs some resources; got num_cpus={num_cpus!r}, num_gpus={num_gpus!r}"
            )
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries!r}")
        self._ray = ray
        self._started_here = False
        if not ray.is_initialized():
            if address is None:
                init_ray_quietly(
                    ray,
                    num_cpus=local_num_cpus,
                    include_dashboard=False,
                    _node_ip_address="127.0.0.1",
                    log_to_driver=False,
                )
            else:
                init_ray_quietly(ray, address=address, log_to_driver=False)
            self._started_here = True
        self.num_cpus = float(num_cpus)
        self.num_gpus = float(num_gpus)
        self.max_retries = int(max_retries)
        if num_workers is None:
            total = ray.cluster_resources().get("CPU", 1.0)
            num_workers = max(1, int(total // self.num_cpus)) if self.num_cpus else 1
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 1:
            raise ValueError(f"num_workers must be an int >= 1, got {num_workers!r}")
        self.num_workers = num_workers
        self._refs: dict[Any, int] = {}  # ObjectRef -> job id, in submission order
        self._remote_job: Any = None
        self._cancel_key = _new_cancel_key()

    def submit(self, job_id: int, fn: JobFunction, payload: Any) -> None:
        _check_new_id(job_id, set(self._refs.values()))
        if self._remote_job is None:
            self._remote_job = self._ray.remote(
                num_cpus=self.num_cpus,
                num_gpus=self.num_gpus,
                max_retries=self.max_retries,
                retry_exceptions=False,
            )(_ray_job)
        self._refs[self._remote_job.remote(fn, payload, self._cancel_key)] = job_id

    def wait(self) -> list[JobOutcome]:
        if not self._refs:
            raise RuntimeError("wait() with no job in flight")
        ready, _ = self._ray.wait(list(self._refs), num_returns=1)
        # Collect everything else that is already done as well, in submission order.
        done, _ = self._ray.wait(list(self._refs), num_returns=len(self._refs), timeout=0)
        finished = {*ready, *done}
        outcomes = []
        for ref in [r for r in self._refs if r in finished]:
            job_id = self._refs.pop(ref)
            try:
                outcomes.append(JobOutcome(job_id, result=self._ray.get(ref)))
            except Exception as error:  # the job raised, or its worker died too often
                outcomes.append(JobOutcome(job_id, error=_describe(error)))
        return outcomes

    def in_flight(self) -> list[int]:
        return list(self._refs.values())

    def cancel_all(self) -> list[int]:
        cancelled = list(self._refs.values())
        if cancelled:
            # Never ray.cancel (it can abort this process: munet.job_cancel): raise the
            # jobs' flag, and give jobs submitted from now on a fresh one.
            from ray.experimental import internal_kv

            internal_kv._internal_kv_put(self._cancel_key, b"1", namespace=_CANCEL_NAMESPACE)
            self._cancel_key = _new_cancel_key()
        self._refs.clear()
        return cancelled

    def close(self) -> None:
        self.cancel_all()
        if self._started_here:
            self._ray.shutdown()
            self._started_here = False


_CANCEL_NAMESPACE = "munet-search-cancel"


def _new_cancel_key() -> str:
    return uuid.uuid4().hex


def _ray_job(fn: JobFunction, payload: Any, cancel_key: str) -> Any:
    """What a Ray task runs: the job, stopped once its driver raises `cancel_key`."""
    from ray.experimental import internal_kv

    def is_raised() -> bool:
        return internal_kv._internal_kv_exists(cancel_key, namespace=_CANCEL_NAMESPACE)

    return run_watched(fn, payload, is_raised)


def init_ray_quietly(ray: Any, **kwargs: Any) -> None:
    """``ray.init(**kwargs)`` without the notices Ray logs on the driver while it starts (the
    token-authentication notice, "Started a local Ray instance"): they would mix into munet's
    own lines. Ray's warnings after the start (an infeasible resource request, a lost node)
    still show.

    The caller's SIGTERM handler is put back: ray.init installs one that exits at once
    (``sys.exit``), which would skip munet's stop (munet.interrupts: SIGTERM taken as Ctrl-C,
    agents stopped, exit 143) and outlive ``ray.shutdown``."""
    logger = logging.getLogger("ray")
    main_thread = threading.current_thread() is threading.main_thread()
    sigterm = signal.getsignal(signal.SIGTERM) if main_thread else None
    try:
        ray.init(logging_level=logging.ERROR, **kwargs)
    finally:
        logger.setLevel(logging.WARNING)
        if main_thread and sigterm is not None:
            signal.signal(signal.SIGTERM, sigterm)


def bind_local_ray_to_loopback() -> None:
    """Make a Ray instance started from this process listen on 127.0.0.1 only.

    On Linux Ray resolves a node address of "127.0.0.1" to the machine's external address and
    listens there, unless it treats the machine as a single-node setup: the switch for that is
    the environment variable RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, which Ray reads when it is
    imported; if ray is already imported, its constant is set as well.
    """
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    constants = sys.modules.get("ray._private.ray_constants")
    if constants is not None and hasattr(constants, "ENABLE_RAY_CLUSTER"):
        constants.ENABLE_RAY_CLUSTER = False


def _describe(error: BaseException) -> str:
    lines = traceback.format_exception_only(type(error), error)
    text = "".join(lines).strip().splitlines()
    return text[-1] if text else type(error).__name__


def make_executor(
    workers: int = 1,
    *,
    ray: bool = False,
    address: str | None = None,
    num_cpus: float = 1.0,
    num_gpus: float = 0.0,
) -> Executor:
    """The in-process executor, or a Ray one when `ray` is true or an `address` is given."""
    if ray or address is not None:
        return RayExecutor(workers, address=address, num_cpus=num_cpus, num_gpus=num_gpus)
    return InProcessExecutor(workers)
