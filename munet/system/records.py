"""Manifest records: paths to and from JSON, and rebuilding loaded paths.

A path record holds the path's id, agent, task, parent (full id), hparams, metrics and its
components in order, each either `{"name", "component": "name:agent:id"}` or, for a wrapped
path, `{"name", "path": "agent:id"}`. Loading links parents and wrapped paths by full id.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from munet.system.component import AnyComponent, Component, PathComponent
from munet.system.errors import CorruptStateError
from munet.system.naming import agent_class_name, is_root_model_agent, path_full_id
from munet.system.path import Path
from munet.system.population import Population

if TYPE_CHECKING:
    from munet.system.manifest import StateRef

logger = logging.getLogger("munet.system")


def json_default(value: Any) -> Any:
    """`json.dumps` fallback: numpy / torch scalars and arrays become numbers and lists."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, (set, tuple)):
        return list(value)
    raise TypeError(f"value {value!r} of type {type(value).__name__} is not JSON-serializable")


def path_record(path: Path) -> dict[str, Any]:
    """The manifest record of a path (JSON-able once hparams and metrics are)."""
    components: list[dict[str, str]] = []
    for c in path.components:
        if isinstance(c, PathComponent):
            components.append({"name": c.name, "path": c.path.full_id})
        else:
            components.append({"name": c.name, "component": c.key})
    return {
        "agent_id": path.agent_id,
        "id": path.id,
        "task_name": path.task_name,
        "parent": path.parent.full_id if path.parent is not None else None,
        "orphaned_parent": path.orphaned_parent,
        "hparams": path.hparams,
        "metrics": path.metrics,
        "components": components,
    }


SEEN_METRICS = ("quality", "score", "accounted_params", "flops")


def seen_metrics(path: Path) -> dict[str, Any]:
    return {k: path.metrics[k] for k in SEEN_METRICS if k in path.metrics}


def publish_closure(paths: Iterable[Path]) -> list[Path]:
    """The paths plus every path they wrap as a component, recursively, in order."""
    out: dict[str, Path] = {}

    def visit(path: Path) -> None:
        if path.full_id in out:
            return
        out[path.full_id] = path
        for c in path.path_components():
            visit(c.path)

    for p in paths:
        visit(p)
    return list(out.values())


def path_from_record(record: Mapping[str, Any], components: Mapping[str, Component]) -> Path:
    """A loaded path with its plain components (parents and wrapped paths are linked later)."""
    plain: list[AnyComponent] = []
    for ref in record["components"]:
        if "component" in ref:
            key = ref["component"]
            if key not in components:
                raise KeyError(f"component {key} is missing from the component index")
            plain.append(components[key])
    path = Path(
        int(record["id"]), record["agent_id"], record["task_name"], record["hparams"], plain
    )
    path.metrics = dict(record["metrics"])
    path.orphaned_parent = record.get("orphaned_parent")
    return path


def assemble_paths(
    population: Population,
    manifests: list[tuple[StateRef, dict[str, Any]]],
    lazy_component: Callable[[str, Mapping[str, Any]], Component],
    *,
    log_orphans: bool = True,
) -> None:
    """Rebuild the published paths of the given states into `population`.

    States earlier in `manifests` win for a path or component published twice. Every path's
    agent locks the components it uses (the seed's rule); a parent that was not published
    falls back to a root-model path; wrapped paths are linked last.

    Raises:
        CorruptStateError: a malformed manifest or record, naming its state.
    """
    components: dict[str, Component] = {}
    component_sources: dict[str, StateRef] = {}
    records: dict[str, dict[str, Any]] = {}
    sources: dict[str, StateRef] = {}
    for state, manifest in manifests:
        try:
            index = manifest["components"]
            published = [manifest["paths"][fid] for fid in manifest["published"]]
            for key, entry in index.items():
                if key not in components:
                    components[key] = lazy_component(key, entry)
                    component_sources[key] = state
                elif components[key].checksum != entry.get("sha256"):
                    warnings.warn(
                        f"component {key}: {state.relative_dir} records another checksum "
                        f"than {component_sources[key].relative_dir}; keeping the first",
                        stacklevel=3,
                    )
            for record in published:
                full_id = path_full_id(record["agent_id"], record["id"])
                if full_id not in records:  # First occurrence wins (own state first).
                    records[full_id] = record
                    sources[full_id] = state
        except (KeyError, TypeError, ValueError) as e:
            raise CorruptStateError(f"state {state.relative_dir}: bad manifest ({e!r})") from None

    paths: dict[str, Path] = {}
    for full_id, record in records.items():
        try:
            path = path_from_record(record, components)
        except (KeyError, TypeError, ValueError) as e:
            raise CorruptStateError(
                f"state {sources[full_id].relative_dir}: bad record of path {full_id} ({e!r})"
            ) from None
        # The seed: every loaded path's agent locks the (plain) components it uses.
        for c in path.components:
            c.train_locks.add(path.agent_id)
        paths[full_id] = path
        population.paths[path.agent_id].append(path)

    roots = sorted(
        (p for p in paths.values() if is_root_model_agent(p.agent_id)),
        key=lambda p: (p.agent_id, p.id),
    )
    for full_id, record in records.items():
        path = paths[full_id]
        parent_id = record.get("parent")
        if parent_id is None:
            continue
        if parent_id in paths:
            path.parent = paths[parent_id]
            continue
        # The parent was retired by its agent (e.g. a parallel agent moved on): fall back
        # to a root model, preferring one of the path's own agent class (the seed falls
        # back to the last root-model path it loaded).
        same_class = [
            r for r in roots if agent_class_name(r.agent_id) == agent_class_name(path.agent_id)
        ]
        fallback = (same_class or roots or [None])[-1]
        path.orphaned_parent = parent_id
        path.parent = fallback
        if not log_orphans:
            continue
        logger.info(
            "path %s: parent %s not loaded; falling back to %s",
            full_id,
            parent_id,
            fallback.full_id if fallback is not None else "no parent",
        )

    # Wrapped paths (multipath agents), now that every path exists.
    for full_id, record in records.items():
        path = paths[full_id]
        rebuilt: list[AnyComponent] = []
        plain = iter(path.components)
        for ref in record["components"]:
            if "component" in ref:
                rebuilt.append(next(plain))
                continue
            sub_id = ref.get("path")
            if sub_id not in paths:
                raise CorruptStateError(
                    f"state {sources[full_id].relative_dir}: path {full_id} wraps path "
                    f"{sub_id!r}, which is not published with it"
                )
            rebuilt.append(PathComponent(ref["name"], paths[sub_id]))
        path.components = rebuilt
