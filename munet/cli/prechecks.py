"""Checks a run passes before it takes its agent's lock, so a refused run writes nothing (no
agent folder, no `.lock`) and its message names the values the user set."""

from __future__ import annotations

from typing import Any

from munet.config import ConfigError
from munet.system import SystemStore
from munet.system.errors import SystemStateError
from munet.system.naming import agent_class_name


def _parent_hparams(store: SystemStore, agent_id: str) -> list[tuple[str, dict[str, Any]]]:
    """(path full id, hparams) of every path the agent may draw as a parent: those of its own
    latest state and of every agent of its class's latest end-of-cycle state."""
    agent_class = agent_class_name(agent_id)
    found = []
    for other in store.agent_ids([agent_class]):
        state = store.latest_state(other, end_of_cycle=other != agent_id)
        if state is None:
            continue
        try:
            records = store.read_manifest(state).get("paths") or {}
        except SystemStateError:
            continue  # A damaged state is reported (or skipped) by the run itself.
        for full_id, record in records.items():
            if isinstance(record, dict) and isinstance(record.get("hparams"), dict):
                if agent_class_name(str(record.get("agent_id", other))) == agent_class:
                    found.append((full_id, record["hparams"]))
    return found


def check_parent_hparams(config: Any, store: SystemStore, agent_id: str) -> None:
    """Refuse a singlepath run whose mutation ranges do not hold a parent's hparam value:
    the seed mutates a value by stepping along its range, so a parent whose value is not in
    it cannot be mutated (the run would stop at its first such mutation, its lock and states
    already written).

    Args:
        config: the run's `AgentConfig` (overrides applied).
        store: the state dir.
        agent_id: the agent to run.

    Raises:
        ConfigError: naming the range and default that were set and the parent's value.
    """
    if getattr(config, "is_multipath", False):
        return  # Multipath parents are multipath paths, checked by the run itself.
    ranges = config.hparams_mutation_ranges
    for full_id, hparams in _parent_hparams(store, agent_id):
        for key in sorted(ranges):
            if key in hparams and hparams[key] not in ranges[key]:
                default = config.hparams_defaults.get(key)
                raise ConfigError(
                    f"hparams_mutation_ranges.{key}={ranges[key]!r} (hparams_defaults.{key}="
                    f"{default!r}) does not hold {key}={hparams[key]!r} of path {full_id}, a "
                    f"parent this agent draws from: the seed mutates {key} by stepping along "
                    f"its range, so the range must hold every parent's value; add "
                    f"{hparams[key]!r} to it"
                )
