"""Entry points shared by the command line and the demo: resolve an agent's config, run it,
read the leaderboard of a state dir."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from munet.agents.options import RunOptions, takes_run_options
from munet.agents.task_data import task_source_label
from munet.config import AgentConfig, ConfigError, apply_overrides, get_preset
from munet.report.leaderboard import record_row
from munet.system import CorruptStateError, SystemStore, format_agent_id

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
    metrics (score, accounted params, ...) as the agent recorded them when it committed, and
    the parent each path was sampled from (its agent's history) beside its nearest kept
    ancestor (see :func:`munet.report.leaderboard.recorded_parent`).

    Only manifests, shard headers and history CSVs are read (no tensors), so this is cheap on
    a large system; a damaged state is skipped with one warning in favour of the agent's
    previous one, and an unreadable history with one warning (the parent then comes from the
    path's record).
    """
    rows = []
    for agent_id in store.agent_ids(agent_classes):
        found = store.latest_good_state(agent_id, end_of_cycle=True, verify="structure")
        if found is None:
            continue
        _state, manifest = found
        data = (manifest.get("config") or {}).get("data") or ""
        history = _history_by_id(store, agent_id)
        for full_id in manifest.get("published", []):
            record = manifest["paths"][full_id]
            if record["agent_id"] != agent_id:
                continue
            rows.append(record_row(record, history.get(str(record["id"]))))
            rows[-1]["source"] = task_source_label(record["task_name"], data)
    return rows


def _history_by_id(store: SystemStore, agent_id: str) -> dict[str, dict[str, str]]:
    """The agent's own history rows by path id (a string, as the CSV holds it)."""
    try:
        rows = store.read_path_history(agent_id)
    except CorruptStateError as error:
        log.warning("%s: path history unreadable (%s); parents as the records say", agent_id, error)
        return {}
    return {r.get("id", ""): r for r in rows if r.get("agent_id", agent_id) == agent_id}
