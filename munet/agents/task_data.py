"""Named tasks in a state dir: which data source each task reads.

`munet run --agent VitCpu --task flowers --data folder:/data/flowers` binds the task name
`flowers` to its source. The binding travels in the agent's config (`data`, `data_split`),
which is saved with every state, so a rerun, a resume, another agent class on the same task,
or another machine reading the state dir finds the source without `--data`. A different
source for a task the state dir already binds is refused, showing both; so is a different
split rule (`--val-split`, `--test-split`: munet.tasks.splits).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

from munet.config import AgentConfig, ConfigError
from munet.system import SystemStore, agent_task_name, is_root_model_agent
from munet.system.errors import CorruptStateError


@dataclass(frozen=True)
class TaskBinding:
    """A task's data as one agent's latest state records it.

    Attributes:
        task_name: the task.
        data: the source spec (`folder:/abs/root`, ...); empty for munet's own task names.
        split_rule: the split rule of `data` (empty when `data` is).
        agent_id: the agent whose state records it.
        state: that state, `<agent_id>/state_<c>_<g>`.
    """

    task_name: str
    data: str
    split_rule: str
    agent_id: str
    state: str

    def describe(self) -> str:
        """`folder:/x (split rule default; recorded by A/state_2_0)`."""
        source = self.data or f"munet's task {self.task_name!r}"
        split = self.split_rule or "default"
        rule = f"split rule {split}; "
        return f"{source} ({rule}recorded by {self.state})"


def task_bindings(
    store: SystemStore, task_name: str | None = None, agent_ids: Iterable[str] | None = None
) -> list[TaskBinding]:
    """The data binding recorded by each agent's latest state (root models left out).

    Only manifests are read. An unreadable state is skipped (the agents report those).

    Args:
        store: the system state.
        task_name: only agents of this task.
        agent_ids: only these agents (default: every agent in the store).
    """
    out = []
    for agent_id in store.agent_ids() if agent_ids is None else agent_ids:
        if is_root_model_agent(agent_id):
            continue
        task = agent_task_name(agent_id)
        if task_name is not None and task != task_name:
            continue
        state = store.latest_state(agent_id)
        if state is None:
            continue
        try:
            config = store.read_manifest(state).get("config") or {}
        except CorruptStateError:
            continue
        data = str(config.get("data") or "")
        split = str(config.get("data_split") or "") if data else ""
        out.append(TaskBinding(task, data, split, agent_id, state.relative_dir))
    return out


def bind_task_data(
    config: AgentConfig,
    task_name: str,
    store: SystemStore,
    data: str | None = None,
    agent_id: str | None = None,
    split: str | None = None,
) -> AgentConfig:
    """The config of an agent on `task_name` with its data source and split rule settled.

    - `data` given (or already in `config.data`, e.g. from `--set data=...`): it must be the
      source every state of the store records for this task, if any records one.
    - neither: the source another agent's state records for the task (a rerun, a resume,
      another agent class or machine needs no `--data`); none: `task_name` is one of munet's
      own task names (with a split rule, the binding names it as its own source).

    The split rule: `split` (or a non-empty `config.data_split`) must be the one recorded for
    the task, if any; else the recorded one; else the source's default
    (`munet.tasks.registry.default_split_rule`: `own-data` for folder:/npz:/hf: data).

    Args:
        config: the agent's config (the stored one when the agent has a state).
        task_name: the task.
        store: the system state.
        data: the source the user asked for (`--data`), or None.
        agent_id: the agent being configured (its own record is named first in errors).
        split: the split rule the user asked for (`--val-split`/`--test-split`), or None.

    Returns:
        A copy of `config` with `data` (canonical form) and `data_split` set.

    Raises:
        ConfigError: a source or split rule that differs from the recorded one (both shown), a
            task name that cannot take a source (it holds ':' or is one of munet's task names),
            a split rule for a task without a source, or a malformed split rule.
        ValueError: a malformed source spec.
    """
    from munet.tasks import DEFAULT_SPLIT_RULE, canonical_data_spec, check_task_name_for_data
    from munet.tasks.registry import default_split_rule, is_known_task_name
    from munet.tasks.splits import canonical_split_rule

    requested = data if data is not None else (config.data or None)
    asked_split = split if split is not None else (config.data_split or None)
    try:
        asked_split = None if asked_split is None else canonical_split_rule(asked_split)
    except ValueError as error:
        raise ConfigError(str(error)) from None
    records = task_bindings(store, task_name)
    records.sort(key=lambda b: b.agent_id != agent_id)  # own record first
    if requested is None:
        recorded = next((b for b in records if b.data), None)
        if recorded is not None:
            requested = recorded.data
        elif asked_split is not None and asked_split != DEFAULT_SPLIT_RULE:
            if not is_known_task_name(task_name):
                raise ConfigError(
                    f"a split rule ({asked_split}) for task {task_name!r} needs its data: "
                    f"--data folder:ROOT | npz:FILE | hf:DIR | tfds:NAME"
                )
            requested = task_name  # munet's own task, bound to itself with the split
        else:
            return config
    canonical = canonical_data_spec(requested)
    if canonical != task_name:
        try:
            check_task_name_for_data(task_name)
        except ValueError as error:
            raise ConfigError(str(error)) from None
    for record in records:
        # A record without a source reads munet's own task of its name, by the default rule.
        if (record.data or record.task_name) != canonical:
            raise ConfigError(
                f"task {task_name!r} already reads {record.describe()}; --data asks for "
                f"{canonical}. Rerun without --data to continue on the recorded data, or name "
                "the new data as another task (--task NEW_NAME)"
            )
    holder = next((b for b in records if b.split_rule), records[0] if records else None)
    recorded_rule = ""
    if holder is not None:
        recorded_rule = canonical_split_rule(holder.split_rule or DEFAULT_SPLIT_RULE)
    if asked_split is not None and recorded_rule and asked_split != recorded_rule:
        raise ConfigError(
            f"task {task_name!r} already reads {holder.describe()}; the split asked for is "
            f"{asked_split}. Rerun without --val-split/--test-split to continue on the recorded "
            "splits, or name the data with this split as another task (--task NEW_NAME)"
        )
    # A new binding without a split asked for: the source's default (munet's own-data rule
    # for folder:/npz:/hf: data; the seed's for TFDS and munet's tasks).
    rule = recorded_rule or asked_split or default_split_rule(canonical)
    return dataclasses.replace(config, data=canonical, data_split=rule)


def task_source_label(task_name: str, data: str = "") -> str:
    """What a leaderboard shows as a task's source: the bound spec, or where munet's own
    task names read from (`embedded`, `tfds`)."""
    if data:
        return data
    if task_name.startswith("root_model/"):
        return "-"
    from munet.tasks.registry import registered_tasks
    from munet.tasks.tfds_splits import is_tfds_task

    if task_name in registered_tasks():
        return "embedded"
    if is_tfds_task(task_name):
        return "tfds"
    return task_name
