"""Entry points shared by the command line and the demo: resolve an agent's config, run it,
read the leaderboard of a state dir."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from munet.agents.options import RunOptions, takes_run_options
from munet.agents.task_data import task_source_label
from munet.config import AgentConfig, ConfigError, apply_overrides, get_preset
from munet.system import SystemStore, format_agent_id

if TYPE_CHECKING:
    from munet.agents.cycle import Agent

log = logging.getLogger("munet.agents")


def resolve_config(
    agent_class: str,
    overrides: Sequence[str] = (),
    store: SystemStore | None = None,
    task_name: str | None = None,
) -> AgentConfig:
    """The config an agent runs with: the one stored with its latest state when it has one
    (so a rerun continues with the same settings), else the preset; then ``overrides``.

    Raises:
        ConfigError: unknown preset, unknown key or bad value (before any work starts).
    """
    config = get_preset(agent_class)
    if store is not None and task_name is not None:
        agent_id = format_agent_id(agent_class, task_name)
        state = store.latest_state(agent_id)
        if state is not None:
            stored = store.read_manifest(state).get("config") or {}
            if stored:
                try:
                    config = AgentConfig.from_dict(stored).validate()
                except ConfigError as err:
                    raise ConfigError(
                        f"the config stored with {state.relative_dir} is invalid: {err}"
                    ) from None
                log.info("%s: using the config stored with %s", agent_id, state.name)
    return apply_overrides(config, overrides)


@takes_run_options
def make_agent(
    config: AgentConfig,
    task_name: str,
    store: SystemStore | str,
    *,
    options: RunOptions | None = None,
    **option_values: Any,
) -> Agent:
    """The agent of ``config``'s kind: a :class:`MultipathAgent` for a multipath preset
    (``MultiVit*``), else a :class:`SinglepathAgent`; ``options`` and the keyword options are
    its constructor's (see :class:`munet.agents.options.RunOptions`)."""
    if config.is_multipath:
        from munet.agents.multipath import MultipathAgent as agent_class
    else:
        from munet.agents.singlepath import SinglepathAgent as agent_class
    return agent_class(config, task_name, store, options=options, **option_values)


def leaderboard_rows(store: SystemStore, agent_classes: Iterable[str] | None = None) -> list[dict]:
    """One row per path each agent published in its latest end-of-cycle state, with the
    metrics (score, accounted params, ...) as the agent recorded them when it committed.

    Only manifests and shard headers are read (no tensors), so this is cheap on a large
    system; a damaged state is skipped with one warning in favour of the agent's previous one.
    """
    rows = []
    for agent_id in store.agent_ids(agent_classes):
        found = store.latest_good_state(agent_id, end_of_cycle=True, verify="structure")
        if found is None:
            continue
        _state, manifest = found
        data = (manifest.get("config") or {}).get("data") or ""
        for full_id in manifest.get("published", []):
            record = manifest["paths"][full_id]
            if record["agent_id"] != agent_id:
                continue
            rows.append(record_row(record))
            rows[-1]["source"] = task_source_label(record["task_name"], data)
    return rows


def record_row(record: dict) -> dict:
    """A leaderboard row from a manifest's path record."""
    parent = record.get("parent")
    parent_agent, parent_id = (None, -1)
    if parent:
        parent_agent, _, number = parent.rpartition(":")
        parent_id = int(number)
    metrics = record.get("metrics") or {}
    row = {
        "agent_id": record["agent_id"],
        "task_name": record["task_name"],
        "id": int(record["id"]),
        "parent_id": parent_id,
        "parent_agent_id": parent_agent,
        "components": ",".join(
            ref["component"].split(":", 1)[1] for ref in record["components"] if "component" in ref
        ),
    }
    for key in ("test_quality", "score", "quality", "accounted_params", "flops", "num_cycles"):
        row[key] = metrics.get(key)
    # A multipath path's subpaths: the agents and path ids it routes through.
    subpaths = (record.get("hparams") or {}).get("paths") or {}
    row["paths"] = " ".join(
        f"{ref['agent_id']}:{ref['id']}" for _, ref in sorted(subpaths.items())
    )
    return row
