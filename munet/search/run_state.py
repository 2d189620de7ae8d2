"""The checkpoint file of a running search: one JSON document, replaced atomically.

Both drivers (`driver.SearchRun`, `petridish_loop.PetridishLoop`) save their whole state after
every finished job with `save_run_state` (temporary file, fsync, rename: a crash leaves the
previous or the new state, never half of one) and reload it with `load_run_state`, which
refuses a file of another format or another run (objective, settings), naming each setting
that differs. Settings listed as `extendable` (the budgets: a finished run resumed with a
larger one goes on) may differ.
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


def _short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def differences(saved: Any, expected: Any, prefix: str = "") -> list[tuple[str, Any, Any]]:
    """(dotted setting name, saved value, this run's value) for every leaf that differs,
    descending into objects present on both sides (``objective.widths``)."""
    if isinstance(saved, dict) and isinstance(expected, dict):
        out = []
        for key in sorted(set(saved) | set(expected), key=str):
            name = f"{prefix}.{key}" if prefix else str(key)
            out.extend(differences(saved.get(key), expected.get(key), name))
        return out
    return [] if saved == expected else [(prefix, saved, expected)]


def load_run_state(
    out_dir: str, identity: dict[str, Any], extendable: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """Read out_dir/state.json, checking it was written by a run with this `identity`.

    Args:
        out_dir: the run's folder.
        identity: what must match (objective, strategy, settings, ...).
        extendable: dotted names in `identity` that may differ (budgets and stop limits).

    Raises:
        ValueError: no state, invalid JSON, another format version, or another identity (the
            message names each setting that differs, with both values).
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
    differing = [d for d in differences(saved, expected) if d[0] not in extendable]
    if differing:
        listed = "; ".join(
            f"{name} (saved {_short(old)}, this run {_short(new)})" for name, old, new in differing
        )
        allowed = f" (only {', '.join(sorted(extendable))} may change)" if extendable else ""
        raise ValueError(
            f"cannot resume {path}: {len(differing)} setting(s) differ from the saved run: "
            f"{listed}; resume with the same settings{allowed}, or choose another output folder"
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
