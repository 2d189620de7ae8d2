"""What agents published, as models: find the best published paths, export one as a standalone
folder, re-evaluate them on their test split (the seed's immutability test).

A path's model is described generically over its components (`path_model`): plain components
make a ViT; wrapped paths (`PathComponent`, multipath agents) make a multipath model whose
subpaths are built the same way. The same description serves `munet export` (written to a
folder) and `munet test` (built in memory), so what `munet test` checks is what is exported.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from munet.models import VitArch, component_names
from munet.models.adapted_vit import adapter_block_index, adapter_name
from munet.system import Path, PathComponent, SystemStore, agent_class_name, is_root_model_agent
from munet.tasks.registry import did_you_mean

log = logging.getLogger("munet.agents")

# An agent id that owns no folder: loading as it reads every agent's latest end-of-cycle state.
_READER_ID = "munet~published-reader"


class PublishedError(ValueError):
    """No published path matches what was asked (the message lists what there is)."""


@dataclass
class PublishedPath:
    """A path an agent published in its latest end-of-cycle state.

    Attributes:
        path: the loaded path (tensors read lazily).
        config: the publishing agent's config as stored (a dict).
        state: the state, `<agent_id>/state_<c>_<g>`.
        is_best: whether it is the agent's best published path.
    """

    path: Path
    config: dict[str, Any]
    state: str
    is_best: bool = True

    @property
    def agent_id(self) -> str:
        return self.path.agent_id

    @property
    def task_name(self) -> str:
        return self.path.task_name


@dataclass
class PublishedSystem:
    """Every agent's published paths, loaded once from a state dir."""

    store: SystemStore
    paths: dict[str, list[Path]]  # agent id -> its own published paths
    configs: dict[str, dict[str, Any]] = field(default_factory=dict)
    states: dict[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls, store: SystemStore) -> PublishedSystem:
        """Reads the latest end-of-cycle state of every agent (manifests only; tensors lazy)."""
        loaded = store.load(_READER_ID)
        configs, states, paths = {}, {}, {}
        for state in loaded.loaded_states:
            manifest = store.read_manifest(state)
            configs[state.agent_id] = manifest.get("config") or {}
            states[state.agent_id] = state.relative_dir
            published = set(manifest.get("published", []))
            paths[state.agent_id] = sorted(
                (p for p in loaded.population.paths.get(state.agent_id, [])
                 if p.full_id in published),
                key=lambda p: p.id,
            )  # fmt: skip
        return cls(store, paths, configs, states)

    def best(self, agent_id: str) -> Path | None:
        """The agent's best published path: the oldest with the highest recorded score."""
        own = self.paths.get(agent_id) or []
        if not own:
            return None
        return max(own, key=lambda p: _score(p))

    def select(
        self, task_name: str | None = None, agent_classes: Iterable[str] | None = None
    ) -> list[PublishedPath]:
        """The best published path of every (non-root) agent, optionally of one task and of
        some agent classes, sorted by agent id."""
        classes = None if agent_classes is None else set(agent_classes)
        out = []
        for agent_id in sorted(self.paths):
            if is_root_model_agent(agent_id):
                continue
            if classes is not None and agent_class_name(agent_id) not in classes:
                continue
            best = self.best(agent_id)
            if best is None or (task_name is not None and best.task_name != task_name):
                continue
            out.append(PublishedPath(best, self.configs[agent_id], self.states[agent_id]))
        return out

    def find(
        self, task_name: str, agent_class: str | None = None, path_id: int | None = None
    ) -> PublishedPath:
        """The path to export: the named one, else the best-scoring published path of the task.

        Raises:
            PublishedError: nothing matches (listing the agents and path ids there are), or a
                path id with several agents on the task and no agent class.
        """
        agents = [
            a for a in sorted(self.paths)
            if not is_root_model_agent(a) and self.paths[a] and self.paths[a][0].task_name
            == task_name and (agent_class is None or agent_class_name(a) == agent_class)
        ]  # fmt: skip
        if not agents:
            known = sorted({p[0].task_name for a, p in self.paths.items() if p and
                            not is_root_model_agent(a)})  # fmt: skip
            which = f" of agent class {agent_class!r}" if agent_class else ""
            raise PublishedError(
                f"no published paths of task {task_name!r}{which} in {self.store.root}"
                f"{did_you_mean(task_name, known)}; tasks there: {', '.join(known) or 'none'}"
            )
        if path_id is None:
            best = max((self.best(a) for a in agents), key=_score)
            return PublishedPath(best, self.configs[best.agent_id], self.states[best.agent_id])
        if len(agents) > 1:
            raise PublishedError(
                f"task {task_name!r} has several agents ({', '.join(agents)}); name one with "
                "--agent CLASS"
            )
        agent_id = agents[0]
        for path in self.paths[agent_id]:
            if path.id == path_id:
                best = self.best(agent_id)
                return PublishedPath(
                    path, self.configs[agent_id], self.states[agent_id], path is best
                )
        ids = ", ".join(str(p.id) for p in self.paths[agent_id])
        raise PublishedError(
            f"agent {agent_id} published no path {path_id} in {self.states[agent_id]}; "
            f"published: {ids}"
        )

    def config_of(self, agent_id: str, fallback: Mapping[str, Any]) -> Mapping[str, Any]:
        return self.configs.get(agent_id) or fallback


def _score(path: Path) -> tuple[float, int]:
    score = path.metrics.get("score")
    value = float(score) if isinstance(score, (int, float)) else float("-inf")
    if math.isnan(value):
        value = float("-inf")
    return value, -path.id  # ties: the oldest (lowest id)


# A path as a model tree ---------------------------------------------------------------------
def path_model(
    path: Path,
    config: Mapping[str, Any],
    configs: Mapping[str, Mapping[str, Any]] | None = None,
    hparams: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """The model tree and flat tensors of a path (see `munet.models.export`).

    Generic over the path's components: plain ones form a ViT (the ones its architecture
    uses: a subpath used headless leaves its head out); wrapped paths form a multipath model
    whose slots are built the same way, with the hparams the multipath path recorded for them
    (`hparams["paths"][slot]["hparams"]`) and at the model size recorded for a slot grown at
    another size than the holding agent's (`hparams["paths"][slot]["model"]`: a hybrid).

    Args:
        path: the path.
        config: the config of the path's agent (its `model` names the ViT size).
        configs: other agents' configs (not read: a multipath agent builds its subpaths
            with its own config, and so does this).
        hparams: the hparams to build with (default the path's own).

    Returns:
        (model tree, {flat tensor name: tensor}).

    Raises:
        ValueError: a path mixing kinds the tree does not describe.
    """
    hparams = dict(path.hparams if hparams is None else hparams)
    wrapped = path.path_components()
    if not wrapped:
        arch = VitArch.from_size(
            str(config["model"]),
            num_layers=int(hparams["num_layers"]),
            num_classes=int(hparams.get("num_classes", 0)),
        )
        image_size = int(hparams["ds_image_size"])
        params = path.params()
        # Adapters after the blocks the architecture has (munet's adapter mutation).
        adapters = {
            index: int(params[name]["down.weight"].shape[0])
            for name in params
            if (index := adapter_block_index(name)) is not None and index < arch.num_layers
        }
        names = [*component_names(arch), *(adapter_name(i) for i in sorted(adapters))]
        tensors = {
            f"{name}.{tensor}": value for name in names for tensor, value in params[name].items()
        }
        node = {"type": "vit", "arch": arch.to_dict(), "image_size": image_size}
        if adapters:  # Only then: a path without adapters exports as a plain ViT.
            node["adapters"] = {str(i): b for i, b in sorted(adapters.items())}
        return node, tensors
    slots = {}
    tensors: dict[str, torch.Tensor] = {}
    recorded = hparams.get("paths") or {}
    for component in path.components:
        if isinstance(component, PathComponent):
            sub = component.path
            ref = recorded.get(component.name) or {}
            sub_hparams = ref.get("hparams") or sub.hparams
            # The holding agent's config builds its subpaths, at the model size recorded for
            # the slot, as the multipath agent does.
            sub_config = {**config, "model": ref["model"]} if ref.get("model") else config
            node, sub_tensors = path_model(sub, sub_config, configs, sub_hparams)
            if node["type"] != "vit":
                raise ValueError(f"path {path.full_id}: slot {component.name} wraps a multipath")
            slots[component.name] = node
            tensors.update({f"{component.name}.{k}": v for k, v in sub_tensors.items()})
        else:
            tensors.update({f"{component.name}.{k}": v for k, v in component.tensors.items()})
    node = {
        "type": "multipath",
        "router_lr_mult": float(hparams.get("router_lr_mult", 1.0)),
        "paths": slots,
    }
    return node, tensors


def build_path_module(published: PublishedPath, system: PublishedSystem) -> torch.nn.Module:
    """The path as a plain module (the exported model, built in memory), in eval mode."""
    from munet.models.export import build_module, load_module_tensors

    node, tensors = path_model(published.path, published.config, system.configs)
    module = build_module(node)
    load_module_tensors(
        module, {k: v.to(torch.float32) for k, v in tensors.items()}, published.state
    )
    return module.eval().requires_grad_(False)


# Tasks of published paths -------------------------------------------------------------------
def task_of(published: PublishedPath, data_dir: str | None = None):
    """The `Task` a published path was grown on, from its agent's stored config (its data
    source and split rule included; no `--data` needed).

    Raises:
        ValueError / ImportError: the data cannot be read here (naming the source).
    """
    from munet.tasks import get_task

    config = published.config
    return get_task(
        published.task_name,
        batch_size=int(config["batch_size"]),
        num_train_examples_between_validations_max=int(
            config["num_train_examples_between_validations_max"]
        ),
        num_validation_examples_max=int(config["num_validation_examples_max"]),
        seed=int(config.get("seed", 0)),
        data=config.get("data") or None,
        split_rule=config.get("data_split") or None,
        data_dir=data_dir,
    )


def storage_size(task) -> tuple[int, int]:
    """(H, W) the task's source keeps images at (what its first training image decodes to)."""
    first = task.source.images("train", torch.tensor([0]))
    return int(first.shape[-2]), int(first.shape[-1])


# Export ---------------------------------------------------------------------------------------
def export_published(
    store: SystemStore,
    task_name: str,
    out_dir: str,
    agent_class: str | None = None,
    path_id: int | None = None,
    data_dir: str | None = None,
    class_metrics: bool = True,
    check_model: Callable[[dict[str, Any], str], None] | None = None,
):
    """Exports the best published path of a task (or the one named) as a standalone folder.

    The class names and the storage size of the preprocessing come from the task's data;
    when the data cannot be read here, the folder is still written, without class names and
    with inputs resized straight to the model's image size (a warning says so).

    With `class_metrics`, the exported model is evaluated on the task's test split (one
    pass) and its per-class accuracy, confusion matrix and top-5 go into `config.json` and
    the model card.

    `check_model(model tree, "path AGENT:ID")` runs before any data is read or anything is
    written; it raises to refuse the path (`munet export --format hf` refuses a hybrid ViT).

    Returns:
        (the folder, the `PublishedPath` exported).

    Raises:
        PublishedError: no such path. munet.models.export.ExportError: `out_dir` not empty,
            or refused by `check_model`.
    """
    from munet.models.export import Preprocessing, save_exported

    system = PublishedSystem.load(store)
    published = system.find(task_name, agent_class, path_id)
    path = published.path
    node, tensors = path_model(path, published.config, system.configs)
    if check_model is not None:
        check_model(node, f"path {path.full_id}")
    class_names = None
    size = None
    per_class = None
    try:
        task = task_of(published, data_dir)
        class_names = list(task.class_names) if task.class_names else None
        size = storage_size(task)
        if class_metrics:
            from munet.agents.class_evaluation import test_class_metrics

            per_class = test_class_metrics(published, system, task, class_names).to_dict()
    except (ValueError, ImportError, NotImplementedError) as error:
        log.warning(
            "the data of task %r cannot be read here (%s): exporting without class names, "
            "inputs resized straight to the image size",
            task_name,
            error,
        )
    config = published.config
    provenance = {
        "agent_id": path.agent_id,
        "path_id": path.id,
        "full_id": path.full_id,
        "task_name": path.task_name,
        "source": config.get("data") or task_name,
        "split_rule": config.get("data_split") or None,
        "state": published.state,
        "best_published": published.is_best,
        "parent": path.parent.full_id if path.parent is not None else None,
        "hparams": path.hparams,
    }
    metrics = {
        key: path.metrics.get(key)
        for key in ("test_quality", "quality", "score", "accounted_params", "flops", "num_cycles")
        if path.metrics.get(key) is not None
    }
    folder = save_exported(
        out_dir,
        node,
        tensors,
        preprocessing=Preprocessing(path.hparams["ds_image_size"], size),
        class_names=class_names,
        provenance=provenance,
        metrics=metrics,
        class_metrics=per_class,
    )
    return folder, published
