"""Checks of a committed state that read no component: the verify levels, and a state's
files besides its manifest and shards (the path history, the population file).

The component checks are the reader's (munet.system.loading.StateReader.check_state); finding
and quarantining damaged states is `munet doctor`'s (munet.system.integrity).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from munet.system.errors import CorruptStateError

if TYPE_CHECKING:
    from munet.system.layout import StateLayout
    from munet.system.manifest import StateRef

#: How much of a state is checked before it is used (munet.system.integrity says what each
#: level reads and finds).
VERIFY_LEVELS = ("none", "structure", "checksums")


def check_verify_level(verify: str) -> str:
    """Return `verify` if it is a known level.

    Raises:
        ValueError: an unknown level (naming the known ones).
    """
    if verify not in VERIFY_LEVELS:
        raise ValueError(f"unknown verify level {verify!r}; known: {', '.join(VERIFY_LEVELS)}")
    return verify


def check_state_files(
    layout: StateLayout, state: StateRef, manifest: dict[str, Any]
) -> list[dict[str, str]]:
    """Check the files of a state besides its manifest and shards: the path history
    (`paths.csv`: parseable, the fixed columns, one well-formed row of this agent per
    sampled path, as many rows as the manifest counts) and the population file (JSON).

    Returns:
        The history's rows (`munet.system.history.csv_to_rows`).

    Raises:
        CorruptStateError: naming the file and what is wrong.
    """
    from munet.system.history import check_history_rows, csv_to_rows
    from munet.system.manifest import history_file_name

    folder = layout.fs.join(layout.agent_dir(state.agent_id), state.name)
    where = f"state {state.relative_dir}"
    # On object stores each save names its files apart (recorded in the manifest).
    history = history_file_name(manifest, state)
    try:
        text = layout.fs.read_bytes(layout.fs.join(folder, history)).decode("utf-8")
        rows = check_history_rows(text, state.agent_id, manifest.get("next_path_id"))
    except FileNotFoundError:
        raise CorruptStateError(f"{where}: {history} is missing") from None
    except (UnicodeDecodeError, ValueError) as error:
        raise CorruptStateError(f"{where}: {history}: {error}") from None
    expected = manifest.get("history_rows")
    if isinstance(expected, int) and rows != expected:
        raise CorruptStateError(
            f"{where}: {history} has {rows} rows; the manifest records {expected}"
        )
    if isinstance(manifest.get("population_file"), str):  # not in states written before it
        _check_population_file(layout, state, manifest)
    return csv_to_rows(text)


def _check_population_file(layout: StateLayout, state: StateRef, manifest: dict[str, Any]) -> None:
    from munet.system.manifest import POPULATION, recorded_file_name

    folder = layout.fs.join(layout.agent_dir(state.agent_id), state.name)
    where = f"state {state.relative_dir}"
    population = recorded_file_name(manifest, "population_file", POPULATION, state)
    try:
        data = json.loads(layout.fs.read_bytes(layout.fs.join(folder, population)))
    except FileNotFoundError:
        raise CorruptStateError(f"{where}: {population} is missing") from None
    except ValueError as error:
        raise CorruptStateError(f"{where}: {population} is not JSON ({error})") from None
    entries = data.get("population") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not all(
        isinstance(e, dict) and isinstance(e.get("path"), str) for e in entries
    ):
        raise CorruptStateError(f"{where}: {population} holds no list of path entries")
