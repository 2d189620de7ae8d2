"""A pretraining run's work dir: the resumable state, written so that a kill -9 at any instant
leaves either the previous state or the new one, never half of one.

``state-<step>.safetensors`` holds model and AdamW tensors; ``state.json`` (replaced
atomically after it) names the complete tensor file, with the step, spec and history. No pickle.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from munet.files import follow_umask

STATE_FILE = "state.json"


def atomic_write(path: Path, write: Callable[[str], None]) -> None:
    """Writes ``path`` through ``write(tmp)``, fsynced, then renamed over it."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    write(str(tmp))
    with open(tmp, "rb+") as handle:
        os.fsync(handle.fileno())
    follow_umask(tmp)  # safetensors writes 0600; roots and cards are meant to be shared
    os.replace(tmp, path)


def save_state(
    work: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer, meta: dict[str, Any]
) -> None:
    """Saves model and AdamW tensors as ``state-<step>.safetensors``, then ``state.json``
    naming it (``meta`` plus ``tensors``), and deletes older tensor files."""
    from munet.files import save_safetensors_file

    step = meta["step"]
    tensors = {f"model.{k}": v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    opt_state = optimizer.state_dict()
    for index, state in opt_state["state"].items():
        for key, value in state.items():
            tensors[f"opt.{index}.{key}"] = torch.as_tensor(value).detach().cpu().contiguous()
    name = f"state-{step:08d}.safetensors"
    atomic_write(work / name, lambda tmp: save_safetensors_file(tensors, tmp))
    meta = {**meta, "tensors": name}
    atomic_write(
        work / STATE_FILE,
        lambda tmp: Path(tmp).write_text(json.dumps(meta, indent=1, sort_keys=True)),
    )
    for old in work.glob("state-*.safetensors"):
        if old.name != name:
            old.unlink(missing_ok=True)


def load_state(
    work: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer
) -> dict[str, Any] | None:
    """Loads the last saved state into ``model`` and ``optimizer``; its meta, or None."""
    from safetensors.torch import load_file

    state_path = work / STATE_FILE
    if not state_path.exists():
        return None
    meta = json.loads(state_path.read_text())
    tensors = load_file(str(work / meta["tensors"]))
    model.load_state_dict(
        {k.removeprefix("model."): v for k, v in tensors.items() if k.startswith("model.")}
    )
    opt_state = optimizer.state_dict()
    per_param: dict[int, dict[str, torch.Tensor]] = {}
    for key, value in tensors.items():
        if key.startswith("opt."):
            _, index, name = key.split(".", 2)
            per_param.setdefault(int(index), {})[name] = value
    opt_state["state"] = per_param
    optimizer.load_state_dict(opt_state)
    return meta


LOCK_FILE = ".lock"


class PretrainLockedError(RuntimeError):
    """Another process is pretraining in the same work dir."""


class WorkDirLock:
    """Exclusive use of a pretraining work dir: an ``flock`` on ``<work>/.lock``.

    The kernel drops the lock when its process dies (also on ``kill -9``), so a stale file never
    blocks a rerun; the file is never deleted (two processes would then lock two inodes). It
    records the holder's pid and start time, named in the refusal. Where ``fcntl`` is missing
    (Windows) no lock is taken.

    Raises:
        PretrainLockedError: from ``__enter__`` when another process holds the work dir.
    """

    def __init__(self, work: Path) -> None:
        self.path = Path(work) / LOCK_FILE
        self._handle = None

    def __enter__(self) -> WorkDirLock:
        try:
            import fcntl
        except ImportError:  # not POSIX: nothing to lock with
            return self
        handle = open(self.path, "a+")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown process"
            handle.close()
            raise PretrainLockedError(
                f"{self.path.parent} is being pretrained by another process ({holder}); wait "
                "for it to end or use another --out"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(
            json.dumps(
                {"pid": os.getpid(), "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
            )
        )
        handle.flush()
        self._handle = handle
        return self

    def __exit__(self, *exc: object) -> None:
        if self._handle is not None:
            self._handle.close()  # closing the descriptor releases the flock
            self._handle = None
