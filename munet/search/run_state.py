"""The checkpoint file of a running search: one JSON document, replaced atomically.

Both drivers (`driver.SearchRun`, `petridish_loop.PetridishLoop`) save their whole state after
every finished job with `save_run_state` (temporary file, fsync, rename: a crash leaves the
previous or the new state, never half of one) and reload it with `load_run_state`, which
refuses a file of another format or another run (objective, settings).
"""

from __future__ import annotations

import json
import os
from typing import Any

from .objectives.base import atomic_target

STATE_FILE = "state.json"
STATE_VERSION = 1


def save_run_state(out_dir: str, identity: dict[str, Any], state: dict[str, Any]) -> None:
    """Write `{format_version, **identity, **state}` to out_dir/state.json atomically."""
    document = {"format_version": STATE_VERSION, **identity, **state}
    path = os.path.join(out_dir, STATE_FILE)
    temporary = atomic_target(path)
    with open(temporary, "w") as handle:
        json.dump(document, handle, allow_nan=False)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def load_run_state(out_dir: str, identity: dict[str, Any]) -> dict[str, Any]:
    """Read out_dir/state.json, checking it was written by a run with this `identity`.

    Raises:
        ValueError: no state, invalid JSON, another format version, or another identity (the
            message shows both).
    """
    path = os.path.join(out_dir, STATE_FILE)
    if not os.path.isfile(path):
        raise ValueError(f"nothing to resume: {path} does not exist")
    with open(path) as handle:
        try:
            state = json.load(handle)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path} is not valid JSON ({error}); cannot resume") from error
    if not isinstance(state, dict) or state.get("format_version") != STATE_VERSION:
        version = state.get("format_version") if isinstance(state, dict) else None
        raise ValueError(f"{path} has format_version {version!r}; expected {STATE_VERSION}")
    expected = json.loads(json.dumps(identity))
    saved = {key: state.get(key) for key in expected}
    if saved != expected:
        raise ValueError(
            f"{path} was written by another run: saved {saved!r}, this run {expected!r}; "
            "resume with the same objective and settings"
        )
    return state


def refuse_existing_state(out_dir: str) -> None:
    """Raise ValueError when out_dir already holds a run's state (a fresh run would mix in)."""
    path = os.path.join(out_dir, STATE_FILE)
    if os.path.exists(path):
        raise ValueError(
            f"{path} exists: resume that run (resume=True, --resume) or choose another "
            "output folder"
        )
