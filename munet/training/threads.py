"""The CPU thread policy of training and evaluation.

Two settings decide how PyTorch's CPU ops share the machine:

- **How OpenMP threads wait.** By default the GNU OpenMP runtime that PyTorch ships spins for a
  while at the end of every parallel region before it sleeps. On an idle machine that saves a
  wake-up; on a busy one the spinning threads burn the cores other processes need, and a
  descheduled worker holds every other one at the next barrier: a multi-threaded step then
  runs slower than a single-threaded one (measured on a shared 2-core machine, see
  docs/speed.md). ``OMP_WAIT_POLICY=PASSIVE`` makes waiting threads sleep at once. The runtime
  reads the variable once, when it is loaded (on ``import torch``), so
  :func:`prepare_openmp_env` must run before torch is imported: every ``munet`` entry point
  calls it first, and a user's own script can too. A value already in the environment wins.
- **How many threads.** :func:`apply_thread_policy` sets PyTorch's intra-op threads from the
  config's ``num_threads``: a positive count as given, 0 for the cores this process may use
  (its CPU affinity, capped by a cgroup CPU quota, which PyTorch's own default ignores).

Override with ``--set num_threads=N`` and by setting ``OMP_WAIT_POLICY`` (``ACTIVE`` restores
spinning) in the environment before the process starts.

This module imports torch only inside :func:`apply_thread_policy`, so importing it does not
start the OpenMP runtime.
"""

from __future__ import annotations

import logging
import os
import sys

from munet.cpus import usable_cpu_count

log = logging.getLogger(__name__)

# What prepare_openmp_env sets when the environment does not say otherwise.
OPENMP_ENV_DEFAULTS = {"OMP_WAIT_POLICY": "PASSIVE"}


def prepare_openmp_env() -> bool:
    """Sets the OpenMP defaults of :data:`OPENMP_ENV_DEFAULTS` where the environment has none.

    Call it before ``import torch``; afterwards the OpenMP runtime has read its environment
    and the call changes nothing for this process (child processes still inherit it).

    Returns:
        True when it ran before torch was imported (the settings take effect here).
    """
    for key, value in OPENMP_ENV_DEFAULTS.items():
        os.environ.setdefault(key, value)
    return "torch" not in sys.modules


def resolve_num_threads(num_threads: int) -> int:
    """The intra-op thread count for a configured ``num_threads`` (0: usable cores).

    Raises:
        ValueError: a negative count.
    """
    if num_threads < 0:
        raise ValueError(f"num_threads must be >= 0 (0: the usable cores), got {num_threads}")
    return num_threads if num_threads > 0 else usable_cpu_count()


def apply_thread_policy(num_threads: int) -> int:
    """Sets PyTorch's intra-op threads for a configured ``num_threads`` (0: usable cores).

    Logs once, at debug level, when the OpenMP wait policy was not set before torch loaded.

    Returns:
        The thread count set.

    Raises:
        ValueError: a negative count.
    """
    import torch

    count = resolve_num_threads(num_threads)
    if torch.get_num_threads() != count:
        torch.set_num_threads(count)
    if count > 1 and "OMP_WAIT_POLICY" not in os.environ:
        log.debug(
            "OMP_WAIT_POLICY is unset: OpenMP threads spin while waiting, which slows "
            "multi-threaded steps on a busy machine (call "
            "munet.training.threads.prepare_openmp_env() before importing torch)"
        )
    return count
