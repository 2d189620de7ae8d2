"""The benchmark's results on disk: one JSON file per (method, task, seed) cell, written
atomically, so a run killed at any instant (even ``kill -9``) resumes by redoing only the
cells that have no complete file.

    OUT/settings.json                        what the results are of (a rerun must match)
    OUT/cells/METHOD/TASK/seed_S.json        one finished cell (``/`` in TASK becomes ``~``)
    OUT/state/...                            the systems' stores (method ``system``)
"""

from __future__ import annotations

import json
import logging
import math
import os
import tempfile
from pathlib import Path
from typing import Any

from munet.benchmark.plan import BenchmarkError, Settings, settings_mismatch
from munet.files import follow_umask

log = logging.getLogger("munet.benchmark")

SETTINGS_FILE = "settings.json"
# What a finished cell holds, at least; a file without them is half-written and redone.
CELL_KEYS = ("method", "task", "seed", "quality", "test_quality", "params_added", "flops")


def cell_file(out: str | Path, method: str, task: str, seed: int) -> Path:
    """Where the cell's result lives."""
    return Path(out) / "cells" / method / task.replace("/", "~") / f"seed_{seed}.json"


def write_json_atomic(path: str | Path, data: Any) -> None:
    """Writes ``data`` as JSON to ``path`` so a reader sees the old file or the whole new one:
    a temporary file beside it, flushed and fsynced, then renamed over it (and the folder
    fsynced, so the rename survives a power cut). The file gets the umask's mode."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        follow_umask(fd)  # mkstemp makes it private; results are for reading.
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1, allow_nan=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with _suppress_os_error():
            os.unlink(tmp)
        raise
    with _suppress_os_error():
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


class _suppress_os_error:
    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, value: Any, traceback: Any) -> bool:
        return kind is not None and issubclass(kind, OSError)


def read_cell(path: str | Path) -> dict[str, Any] | None:
    """The finished cell in ``path``, or None when there is none: no file, or a damaged one
    (cut short, not JSON, missing fields), which is then redone (with a warning)."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        log.warning("benchmark: redoing the cell of %s: unreadable (%s)", path, err)
        return None
    if not isinstance(data, dict) or any(key not in data for key in CELL_KEYS):
        log.warning("benchmark: redoing the cell of %s: incomplete", path)
        return None
    if not isinstance(data["test_quality"], (int, float)) or not math.isfinite(
        float(data["test_quality"])
    ):
        log.warning("benchmark: redoing the cell of %s: no test accuracy", path)
        return None
    return data


def done_cells(out: str | Path, settings: Settings) -> dict[tuple[str, str, int], dict]:
    """Every finished cell of ``settings`` under ``out``, by (method, task, seed)."""
    done = {}
    for method in settings.methods:
        for task in settings.tasks:
            for seed in settings.seeds:
                cell = read_cell(cell_file(out, method, task, seed))
                if cell is not None:
                    done[(method, task, seed)] = cell
    return done


def claim_out(out: str | Path, settings: Settings) -> None:
    """Records ``settings`` in ``out`` (a new or empty folder), or checks that the results
    already there are of the same settings.

    Raises:
        BenchmarkError: ``out`` holds another configuration's results (the message names
            what differs), or is a file.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise BenchmarkError(f"--out {str(out)!r} is a file; expected a folder for the results")
    file = out / SETTINGS_FILE
    wanted = settings.to_dict()
    if file.is_file():
        try:
            stored = json.loads(file.read_text())
        except ValueError as err:
            raise BenchmarkError(
                f"--out {str(out)!r}: {SETTINGS_FILE} is unreadable ({err}); choose another "
                "--out or remove that file"
            ) from None
        difference = settings_mismatch(stored, wanted)
        if difference:
            raise BenchmarkError(
                f"--out {str(out)!r} holds the results of another configuration ({difference}); "
                "rerun with that configuration to resume, or choose another --out"
            )
        return
    if out.is_dir() and (out / "cells").exists():
        raise BenchmarkError(
            f"--out {str(out)!r} holds cells but no {SETTINGS_FILE}: not a benchmark folder "
            "this version can resume; choose another --out"
        )
    write_json_atomic(file, wanted)
