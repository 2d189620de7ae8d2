"""Jobs in worker processes: the one pool `munet demo` and `munet benchmark` run their agents
and cells in (`munet launch` runs them as Ray tasks instead: munet.cluster).

The policy, the same for both:

- workers are spawned (no fork of a process that holds torch's threads) and die with this
  process at any instant, start-up included (munet.lifeline);
- results come back as jobs finish, in that order;
- a job that fails: the jobs not started are cancelled, the running ones finish (what they
  wrote is kept), then its error is raised;
- an interrupt (Ctrl-C, SIGTERM): the workers are stopped at once (SIGTERM, then SIGKILL), not
  waited for (an agent's cycle or a benchmark cell runs for minutes; what they committed is
  on disk and a rerun resumes).
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
from collections.abc import Callable, Sequence
from typing import Any

#: A job: a picklable function and its arguments.
Job = tuple[Callable[..., Any], tuple]


def _start_worker(parent: int, threads: int | None) -> None:
    from munet.lifeline import die_with_parent

    die_with_parent(parent)  # first, before anything heavy is imported
    if threads is not None:
        os.environ["OMP_NUM_THREADS"] = str(threads)
        import torch

        torch.set_num_threads(threads)


class WorkerPool:
    """A pool of spawned worker processes, used as a context manager.

    Args:
        workers: processes (at least 1).
        threads: torch threads per worker (None: the jobs set their own).
    """

    def __init__(self, workers: int, threads: int | None = None) -> None:
        if workers < 1:
            raise ValueError(f"workers {workers!r}: expected at least 1")
        self.workers = workers
        self.threads = threads
        self._executor: concurrent.futures.ProcessPoolExecutor | None = None

    def __enter__(self) -> WorkerPool:
        self._executor = concurrent.futures.ProcessPoolExecutor(
            max_workers=self.workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_worker,
            initargs=(os.getpid(), self.threads),
        )
        return self

    def __exit__(self, kind: type[BaseException] | None, error: Any, traceback: Any) -> None:
        executor, self._executor = self._executor, None
        assert executor is not None
        if kind is not None and issubclass(kind, KeyboardInterrupt):
            _stop_now(executor)
        executor.shutdown(wait=True, cancel_futures=True)

    def run(
        self,
        jobs: Sequence[Job],
        on_result: Callable[[Any], None] | None = None,
        on_tick: Callable[[], None] | None = None,
        tick: float = 2.0,
    ) -> None:
        """Run ``jobs``; ``on_result`` gets each job's result as it finishes, ``on_tick`` is
        called at least every ``tick`` seconds while they run (to report progress the jobs
        write elsewhere).

        Raises:
            The first failed job's error, once the running jobs have finished (the others are
            cancelled).
        """
        if self._executor is None:
            raise RuntimeError("WorkerPool.run outside its `with` block")
        pending = {self._executor.submit(function, *args) for function, args in jobs}
        try:
            while pending:
                finished, pending = concurrent.futures.wait(
                    pending, timeout=tick, return_when=concurrent.futures.FIRST_COMPLETED
                )
                if on_tick is not None:
                    on_tick()
                for future in finished:
                    result = future.result()  # raises the job's error
                    if on_result is not None:
                        on_result(result)
        except Exception:
            for future in pending:
                future.cancel()
            concurrent.futures.wait(pending)  # the running jobs finish; their work is kept
            raise


def _stop_now(executor: concurrent.futures.ProcessPoolExecutor) -> None:
    """Ends the executor's worker processes now (SIGTERM, then SIGKILL after 10 s)."""
    if hasattr(executor, "terminate_workers"):  # Python 3.14+
        executor.terminate_workers()
        return
    # Before 3.14 the executor has no public way to stop a running job: its processes.
    processes = list((getattr(executor, "_processes", None) or {}).values())
    # The executor's manager thread also waits for the workers it sees die, and may reap one
    # (waitpid) a moment before it records the exit code: until then the process still looks
    # alive here. So it is joined too, after the workers; `shutdown(wait=False)` forgets it.
    manager = getattr(executor, "_executor_manager_thread", None)
    executor.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()
    for process in processes:
        process.join(timeout=10)
        if process.is_alive():
            process.kill()
            process.join(timeout=10)
    if manager is not None:
        manager.join(timeout=10)
