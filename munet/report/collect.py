"""What the HTML report shows, read from a system state dir: manifests and path history only.

No tensor is read: parameter counts come from the manifests' component index, qualities and
scores from the path records and the history CSVs. A damaged state of one agent is skipped
with a warning (kept in :attr:`SystemView.warnings`), as the store's readers do.

The result is plain data (:class:`SystemView`), so the HTML and PNG renderers and the tests
share one reading of the system.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from munet.report.leaderboard import recorded_parent
from munet.report.rows import (  # noqa: F401  (re-exported: the report modules' old home)
    Candidate,
    as_float,
    as_int,
    candidate_from_row,
    mutation_name,
    parse_numbers,
)
from munet.system.errors import CorruptStateError
from munet.system.manifest import StateRef
from munet.system.naming import ROOT_MODEL_TASK_PREFIX, is_root_model_agent
from munet.system.store import SystemStore

# Component status within a task's path: the task's own (fresh, or cloned from the root model
# and trained along its own lineage), first cloned from another task's component then trained,
# used frozen as another agent's component, or a whole frozen path of another agent (multipath).
OWNED, CLONED, SHARED, SUBPATH = "owned", "cloned", "shared", "subpath"
STATUSES = (OWNED, CLONED, SHARED, SUBPATH)
# In the id of every root-model agent: `Class~root_model~name`.
ROOT_MODEL_MARK = "~" + ROOT_MODEL_TASK_PREFIX.replace("/", "~")


@dataclass
class ComponentUse:
    """One slot of a path: the component it holds and how the path's agent got it."""

    slot: str
    key: str
    owner: str
    num_params: int
    status: str
    origin: str  # Agent the component came from (cloned: the copied component's owner).


@dataclass
class PathView:
    """A published path as its manifest record describes it."""

    full_id: str
    agent_id: str
    task_name: str
    metrics: dict[str, Any]
    parent: str | None  # The path it was mutated from (see leaderboard.recorded_parent).
    kept_ancestor: str | None  # Its nearest ancestor still kept (the record's parent).
    components: list[ComponentUse] = field(default_factory=list)
    hparams: dict[str, Any] = field(default_factory=dict)
    subpaths: list[tuple[str, str]] = field(default_factory=list)  # (slot, full id)

    @property
    def score(self) -> float | None:
        return as_float(self.metrics.get("score"))


@dataclass
class CycleResult:
    """The best own published path of one end-of-cycle state."""

    cycle: int
    full_id: str
    quality: float | None
    score: float | None
    test_quality: float | None


@dataclass
class AgentView:
    """One agent of the system: its latest states, published paths and history."""

    agent_id: str
    task_name: str
    cycle: int
    generation: int
    published: list[PathView]
    history: list[Candidate]
    cycles: list[CycleResult]
    config: dict[str, Any] = field(default_factory=dict)  # The latest manifest's agent config.

    @property
    def is_root(self) -> bool:
        return is_root_model_agent(self.agent_id)

    @property
    def best(self) -> PathView | None:
        """The oldest published path of the highest score (the seed's best path)."""
        scored = [(p.score if p.score is not None else -math.inf, p) for p in self.published]
        if not scored:
            return None
        top = max(s for s, _ in scored)
        return next(p for s, p in scored if s == top)

    @property
    def is_multipath(self) -> bool:
        return any(p.subpaths for p in self.published)


@dataclass
class SystemView:
    """Everything the report shows."""

    state_dir: str
    agents: dict[str, AgentView]
    paths: dict[str, PathView]  # Every published path, subpaths of multipath paths included.
    warnings: list[str]
    # Per task, baselines from result files (`munet report --baseline`; munet.report.baseline).
    baselines: dict[str, list[Any]] = field(default_factory=dict)
    # Per agent id, (its best path's full id, that path's per-class test metrics: a
    # `munet.models.class_metrics.ClassMetrics`), when the report was asked to evaluate them
    # (`munet report` does; the report itself reads no tensors).
    class_metrics: dict[str, Any] = field(default_factory=dict)

    @property
    def task_names(self) -> list[str]:
        """The distinct tasks of the task agents (several agents may grow one task)."""
        return sorted({a.task_name for a in self.agents.values() if not a.is_root})

    @property
    def tasks(self) -> list[AgentView]:
        """Agents that are not root models, grouped by task (tasks by name; within a task,
        singlepath agents before multipath ones, then by agent id)."""
        agents = [a for a in self.agents.values() if not a.is_root]
        return sorted(agents, key=lambda a: (a.task_name, _multipath_config(a), a.agent_id))


def _multipath_config(agent: AgentView) -> bool:
    return bool(agent.config.get("singlepath_agent")) or agent.is_multipath


def mutation_counts(agents: Iterable[AgentView]) -> list[tuple[str, int, int]]:
    """(mutation, times it fired in admitted paths, times it fired in all sampled paths),
    most admitted first."""
    admitted: Counter[str] = Counter()
    sampled: Counter[str] = Counter()
    for agent in agents:
        for candidate in agent.history:
            names = {n for n in map(mutation_name, candidate.mutations) if n}
            sampled.update(names)
            if candidate.admitted:
                admitted.update(names)
    return sorted(
        ((name, admitted[name], sampled[name]) for name in sampled),
        key=lambda item: (-item[1], -item[2], item[0]),
    )


def _reuse_sources(reuse: str) -> dict[str, tuple[str, str]]:
    """``shared from A: x, y; cloned from B: z; fresh: head`` -> {slot: (verb, agent)}.

    Multipath agents name the source path (``cloned from A:5: router``): its agent is kept.
    """
    out = {}
    for group in (reuse or "").split("; "):
        head, _, names = group.rpartition(": ")
        verb, _, source = head.partition(" from ")
        source = source.split(":", 1)[0]  # Agent ids hold no ':'.
        for name in names.split(", "):
            if name:
                out[name] = (verb, source)
    return out


def _clone_origin(
    slot: str, row: Mapping[str, Any] | None, agent_id: str, rows: Mapping[int, Mapping]
) -> str | None:
    """The other task's agent a component was first cloned from, following the agent's own
    lineage back through its history; None when it grew in this agent (fresh, from the root
    model, or the history is missing)."""
    seen = set()
    while row is not None and id(row) not in seen:
        seen.add(id(row))
        verb, source = _reuse_sources(str(row.get("metrics.reuse") or "")).get(slot, ("", ""))
        if verb != "cloned" or ROOT_MODEL_MARK in source:
            return None
        if source != agent_id:
            return source
        if row.get("parent_agent_id") != agent_id:
            return None
        row = rows.get(as_int(row.get("parent_id"), -1))
    return None


def _path_view(
    record: Mapping[str, Any],
    index: Mapping[str, Any],
    history: Mapping[int, Mapping[str, Any]],
) -> PathView:
    agent_id = record["agent_id"]
    metrics = dict(record.get("metrics") or {})
    # The history row has the parent at sampling time (a record's parent may have been relinked
    # to an older ancestor once the parent was pruned); the record is the fallback.
    history_row = history.get(as_int(record["id"], -1))
    parent = recorded_parent(record, history_row)
    view = PathView(
        full_id=f"{agent_id}:{record['id']}",
        agent_id=agent_id,
        task_name=record["task_name"],
        metrics=metrics,
        parent=parent,
        kept_ancestor=record.get("parent") or None,
        hparams=dict(record.get("hparams") or {}),
    )
    own_row = history_row or {
        "metrics.reuse": metrics.get("reuse", ""),
        "parent_agent_id": (parent or "").rpartition(":")[0],
        "parent_id": (parent or "").rpartition(":")[2] or -1,
    }
    for ref in record["components"]:
        if "path" in ref:
            view.subpaths.append((ref["name"], ref["path"]))
            continue
        key = ref["component"]
        entry = index.get(key, {})
        owner = entry.get("agent_id") or key.partition(":")[2].rpartition(":")[0]
        if owner != agent_id:
            status, origin = SHARED, owner
        else:
            source = _clone_origin(ref["name"], own_row, agent_id, history)
            status, origin = (CLONED, source) if source else (OWNED, owner)
        view.components.append(
            ComponentUse(ref["name"], key, owner, as_int(entry.get("num_params")), status, origin)
        )
    return view


def _read(store: SystemStore, state: StateRef, problems: list[str]) -> dict[str, Any] | None:
    try:
        return store.read_manifest(state)
    except CorruptStateError as e:
        problems.append(f"skipped unreadable state: {e}")
        return None


def _read_history(store: SystemStore, agent_id: str, problems: list[str]) -> list[dict]:
    try:
        return store.read_path_history(agent_id)
    except (OSError, UnicodeDecodeError, ValueError) as e:
        problems.append(f"{agent_id}: path history unreadable ({e!r}); charts left out")
        return []


def _cycle_result(state: StateRef, manifest: Mapping[str, Any]) -> CycleResult | None:
    """The best own published path of an end-of-cycle state."""
    agent_id = state.agent_id
    own = [
        manifest["paths"][fid]
        for fid in manifest.get("published", [])
        if manifest["paths"][fid]["agent_id"] == agent_id
    ]
    best = max(own, key=lambda r: as_float(r["metrics"].get("score")) or -math.inf, default=None)
    if best is None or state.cycle == 0:
        return None
    m = best.get("metrics") or {}
    return CycleResult(
        state.cycle,
        f"{agent_id}:{best['id']}",
        as_float(m.get("quality")),
        as_float(m.get("score")),
        as_float(m.get("test_quality")),
    )


def _agent_view(
    store: SystemStore,
    agent_id: str,
    paths: dict[str, PathView],
    problems: list[str],
    cache: dict[tuple[str, str], CycleResult | None],
) -> AgentView | None:
    states = store.list_states(agent_id)
    if not states:
        return None
    rows = _read_history(store, agent_id, problems)
    by_id = {as_int(r.get("id"), -1): r for r in rows if r.get("agent_id", agent_id) == agent_id}
    cycles = []
    latest: tuple[StateRef, dict[str, Any]] | None = None
    for state in reversed([s for s in states if s.end_of_cycle]):
        key = (str(store.root), state.relative_dir)
        if latest is not None and key in cache:  # Committed states never change.
            result = cache[key]
        else:
            manifest = _read(store, state, problems)
            if manifest is None:
                continue
            try:
                result = _cycle_result(state, manifest)
            except (KeyError, TypeError, ValueError) as e:
                problems.append(f"state {state.relative_dir}: bad path record ({e!r}); left out")
                continue
            cache[key] = result
            if latest is None:
                latest = (state, manifest)
        if result is not None:
            cycles.append(result)
    cycles.reverse()
    published: list[PathView] = []
    task_name = agent_id
    config: dict[str, Any] = {}
    if latest is not None:
        state, manifest = latest
        task_name = manifest.get("task_name") or agent_id
        config = manifest.get("config") if isinstance(manifest.get("config"), dict) else {}
        try:
            for fid in manifest.get("published", []):
                record = manifest["paths"][fid]
                view = _path_view(record, manifest.get("components", {}), by_id)
                paths.setdefault(view.full_id, view)
                if view.agent_id == agent_id:
                    published.append(view)
        except (KeyError, TypeError, ValueError) as e:
            problems.append(f"state {state.relative_dir}: bad path record ({e!r}); left out")
            published = []
    last = states[-1]
    return AgentView(
        agent_id=agent_id,
        task_name=task_name,
        cycle=last.cycle,
        generation=last.generation,
        published=published,
        history=[candidate_from_row({"agent_id": agent_id, **r}) for r in rows],
        cycles=cycles,
        config=config,
    )


def collect_system(
    state_dir: str | SystemStore, cache: dict[tuple[str, str], Any] | None = None
) -> SystemView:
    """Reads what the report shows from a state dir (a path, an fsspec URL or a store).

    Args:
        state_dir: the system state dir, or an open :class:`SystemStore`.
        cache: kept between calls (``--watch``), it saves re-reading the manifests of older
            end-of-cycle states, which never change once committed.

    Returns:
        The system's agents, published paths and history, and the problems met.

    Raises:
        FileNotFoundError: no state dir there.
    """
    store = state_dir if isinstance(state_dir, SystemStore) else SystemStore(str(state_dir))
    if not store.fs.exists(store.root):
        raise FileNotFoundError(f"no state dir at {store.root!r}")
    problems: list[str] = []
    agents: dict[str, AgentView] = {}
    paths: dict[str, PathView] = {}
    for agent_id in sorted(store.agent_ids()):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            view = _agent_view(store, agent_id, paths, problems, {} if cache is None else cache)
        if view is not None:
            agents[agent_id] = view
    for agent in agents.values():  # Own records win over copies published by others.
        for path in agent.published:
            paths[path.full_id] = path
    return SystemView(str(store.root), agents, paths, problems)


def store_signature(state_dir: str | SystemStore) -> tuple:
    """The committed states of every agent: changes when any agent commits (for ``--watch``)."""
    store = state_dir if isinstance(state_dir, SystemStore) else SystemStore(str(state_dir))
    if not store.fs.exists(store.root):
        return ()
    return tuple(
        (agent_id, tuple((s.cycle, s.generation) for s in store.list_states(agent_id)))
        for agent_id in sorted(store.agent_ids())
    )
