"""The multipath agent's policy (seed 000: ``MultiVit``, ``sample_path``,
``finalize_ds_hparams``, ``get_paths_to_publish``, ``MultiVitModel``).

A multipath path combines ``path_0``, a path of the same task's singlepath agent, with 1-2
headless paths of other tasks' singlepath agents through a router and one connector per extra
path (munet.models.multipath). The subpaths are whole frozen paths; only the router and the
connectors train. Sampling a child, with every random draw in this order:

1. ``path_0``: uniformly among the paths of the task's singlepath agent (drawn afresh for every
   child; a multipath parent's own ``path_0`` is never inherited);
2. the parent: decay selection over the agent's own paths; when none is selected, ``path_0``
   itself, with hparams from the agent's best path, else the defaults;
3. hparams: the parent's with ``paths`` reset, mutated as in singlepath (``num_paths``,
   ``router_lr_mult``, ``opt_*``, ``ds_*``, ``_mu_``), then the generation's ``ds_*`` values;
4. ``path_1 ..``: the parent's subpath in that slot when it has one, else uniformly among the
   paths of the other singlepath agents of the class (not one already used by this child, nor
   one the parent's later slots bring, not a ``~1k`` task; a root made from a checkpoint
   qualifies, a ``random_init`` root only with ``multipath_random_root``, as in the seed); a
   path of another task runs headless.

Router and connectors are cloned from the immediate parent when it holds a component of that
name and shape, else initialised as the seed does. The child's ``ds_image_size`` is the list
of its subpaths' image sizes, and the generation's batches carry every size its children need.

Where munet differs from the seed (docs/agents.md): random draws among paths use a canonical
order (by agent id, then path id), so a resumed generation replays the same draws whatever
order the states were read in; with fewer eligible agents than ``num_paths`` needs, the child
uses the paths there are (at least two) and says so, where the seed crashes; a parent's
subpath that is no longer loaded is drawn again (the seed crashes), never as the agent of
another slot; by default a ``random_init`` root is never a subpath, drawn or inherited (its
untrained parameters would be published in the model; ``multipath_random_root=true`` restores
the seed's rule).

Each subpath runs at its own architecture: the model size of the agent that grew it (its stored
config's ``model``), so a hybrid subpath (a ResNet stem before the patch embedding) combines
with plain ones, each connector mapping its path's width. The size is recorded in the slot's
reference (``hparams["paths"][slot]["model"]``) only where it differs from this agent's
``model``, so a system of one model size records exactly what it did before.
"""

from __future__ import annotations

import copy
import logging
import random
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from munet.agents.cycle import Agent, BuiltModel, device_tensors
from munet.agents.mutation import mutate_hparams
from munet.agents.options import RunOptions, takes_run_options
from munet.agents.path_cache import PathOutputCache, augmentation_active
from munet.agents.reports import DECISIONS_LOGGER, AgentError, log_level
from munet.agents.reuse import component_shapes_of
from munet.agents.selection import decay_selection
from munet.agents.singlepath import assemble_vit, model_arch
from munet.agents.subpath_choice import (  # noqa: F401  (canonical: re-exported)
    EXCLUDED_TASK_SUFFIX,
    MAIN_PATH,
    SubpathChooser,
    canonical,
    slot_name,
)
from munet.config import AgentConfig
from munet.models.arch import VitArch
from munet.models.multipath import (
    ROUTER,
    MultipathVit,
    count_multipath_flops,
    head_adapter_name,
    init_head_adapter,
    init_router,
)
from munet.system import Component, Path, Population, SystemStore, format_agent_id
from munet.system.component import PathComponent
from munet.system.errors import CorruptStateError

# Mutation, selection and reuse decisions: shown by `munet run -v` (munet.cli.agents).
log = logging.getLogger(DECISIONS_LOGGER)


def subpath_refs(path: Path) -> dict[str, str]:
    """{slot: full id of the subpath} of a multipath path (empty for a singlepath one)."""
    return {
        slot: f"{ref['agent_id']}:{ref['id']}"
        for slot, ref in (path.hparams.get("paths") or {}).items()
    }


class _CachedPath:
    """A frozen assembled ViT whose calls go through the agent's path-output cache."""

    def __init__(self, model: Any, cached: Any) -> None:
        self.arch = model.arch
        self.image_size = model.image_size
        self._cached = cached

    def __call__(self, images: torch.Tensor) -> torch.Tensor:
        return self._cached(images)


class MultipathAgent(Agent):
    """Evolves multipath models for one task over the paths grown by singlepath agents (the
    seed's ``MultiVit`` family). See :class:`munet.agents.cycle.Agent` for the arguments.

    Raises:
        AgentError: a root-model task (root models belong to the singlepath class).
    """

    @takes_run_options
    def __init__(
        self,
        config: AgentConfig,
        task_name: str,
        store: SystemStore | str,
        *,
        options: RunOptions | None = None,
        **option_values: Any,
    ) -> None:
        super().__init__(config, task_name, store, options=options, **option_values)
        # Frozen subpaths' outputs, reused across the steps and generations of this agent.
        self.path_outputs = PathOutputCache(self.config.path_output_cache_mb * 2**20)
        self._agent_models: dict[str, str] = {}
        self.subpaths = SubpathChooser(
            self.agent_id,
            self.task_name,
            self.singlepath_class,
            self.config.multipath_random_root,
            self.store.root,
        )

    @property
    def singlepath_class(self) -> str:
        return self.config.singlepath_agent

    @property
    def main_agent_id(self) -> str:
        """The agent id of the same task's singlepath agent (where ``path_0`` comes from)."""
        return format_agent_id(self.singlepath_class, self.task_name)

    def _root_task_message(self, task_name: str) -> str:
        return (
            f"{task_name!r} is a root model: root models belong to the singlepath agent class; "
            f"create it with `munet root --agent {self.config.singlepath_agent}`"
        )

    # The policy -----------------------------------------------------------------------------
    def agent_classes_to_load(self) -> list[str]:
        """The singlepath class only (not other multipath agents); the agent's own state is
        always read, so the subpaths it published stay available after their agents drop
        them."""
        return [self.singlepath_class]

    def check_store(self) -> None:
        if not self.store.fs.exists(self.store.agent_dir(self.agent_id)):
            if self.store.latest_state(self.main_agent_id) is None:
                self.check_population(Population(self.agent_id))

    def check_population(self, population: Population) -> None:
        if not population.paths.get(self.main_agent_id):
            raise AgentError(
                f"{self.agent_id} combines paths of {self.main_agent_id}, which has no "
                f"state in {self.store.root} yet: run `munet run --agent "
                f"{self.singlepath_class} --task {self.task_name} --cycles 1 "
                f"--state-dir {self.store.root}` first"
            )

    def finalize_ds_hparams(
        self, ds_hparams: dict[str, Any], paths: Sequence[Path]
    ) -> dict[str, Any]:
        """Every image size the generation's children read (each size once)."""
        sizes = sorted({int(s) for path in paths for s in path.hparams["ds_image_size"]})
        return {**ds_hparams, "ds_image_size": sizes}

    def agent_model(self, agent_id: str) -> str:
        """The model size the agent ``agent_id`` grows its paths with (the ``model`` of the
        config stored with its latest state), else this agent's ``model``."""
        model = self._agent_models.get(agent_id)
        if model is None:
            model = self.config.model
            state = self.store.latest_state(agent_id)
            if state is not None:
                try:
                    stored = self.store.read_manifest(state).get("config") or {}
                except (CorruptStateError, OSError, ValueError) as error:
                    log.warning("%s: config unreadable (%s): model %s", agent_id, error, model)
                    stored = {}
                model = str(stored.get("model") or model)
            self._agent_models[agent_id] = model
        return model

    def _subpath_config(self, ref: Mapping[str, Any]) -> AgentConfig:
        """This agent's config with the model size the slot's path was grown with."""
        model = ref.get("model")
        if model is None or model == self.config.model:
            return self.config
        config = copy.copy(self.config)
        config.model = str(model)
        return config

    def subpath_arch(self, ref: Mapping[str, Any]) -> VitArch:
        """The architecture a slot's path runs at (headless for another task's path)."""
        return model_arch(self._subpath_config(ref), ref["hparams"])

    def path_flops(self, path: Path) -> float:
        subpaths = path.hparams["paths"]
        return float(
            count_multipath_flops(
                [
                    (self.subpath_arch(ref), int(ref["hparams"]["ds_image_size"]))
                    for ref in subpaths.values()
                ]
            )
        )

    def describe_path(self, path: Path) -> str:
        refs = subpath_refs(path)
        return f"paths {', '.join(refs[k] for k in sorted(refs))}"

    def build_model(self, path: Path, device: torch.device, train: bool) -> BuiltModel:
        subpaths = path.hparams["paths"]
        slots = [slot_name(i) for i in range(len(subpaths))]
        # Training without augmentation shows the same images every epoch: reuse the frozen
        # subpaths' outputs (never for evaluations that must replay exactly).
        reuse = train and device.type == "cpu" and not augmentation_active(path.hparams)
        models: list[Any] = []
        for slot in slots:
            wrapped = path.component(slot)
            if not isinstance(wrapped, PathComponent):
                raise ValueError(f"path {path.full_id}: component {slot} is not a wrapped path")
            hparams = subpaths[slot]["hparams"]
            config = self._subpath_config(subpaths[slot])
            model, _ = assemble_vit(config, wrapped.path, device, train=False, hparams=hparams)
            if reuse:
                key = (wrapped.path.full_id, int(hparams.get("num_classes", 0)), model.image_size)
                model = _CachedPath(model, self.path_outputs.wrap(key, model))
            models.append(model)
        trainable: dict[str, dict[str, torch.Tensor]] = {}
        own: dict[str, dict[str, torch.Tensor]] = {}
        for name in [ROUTER, *(head_adapter_name(i) for i in range(1, len(slots)))]:
            component = path.component(name)
            learn = train and component.is_trainable()
            own[name] = device_tensors(component, device, learn)
            if learn:
                trainable[name] = own[name]
        model = MultipathVit(
            models,
            own[ROUTER],
            [own[head_adapter_name(i)] for i in range(1, len(slots))],
            float(path.hparams["router_lr_mult"]),
        )
        return BuiltModel(model, trainable)

    # Sampling -------------------------------------------------------------------------------
    def sample_path(
        self,
        population: Population,
        ds_hparams: dict[str, Any],
        rng: random.Random,
        seed_parts: tuple = (),
    ) -> Path:
        """Samples one multipath child (see the module docstring for the rules and the order
        of the random draws); the decisions are logged and kept in its ``mutations`` metric."""
        lines: list[str] = []
        selected: dict[str, Path] = {}
        selected[MAIN_PATH] = rng.choice(canonical(population.paths[self.main_agent_id]))
        lines.append(f"{MAIN_PATH} drawn from {self.main_agent_id}: {selected[MAIN_PATH].full_id}")

        parent, decay_log = decay_selection(
            population.own_paths,
            lambda p: self.score(population, p),
            lambda p: p.metrics.get("offsprings", 0),
            rng,
            label=lambda p: p.full_id,
        )
        for line in decay_log:
            log.debug("%s: %s", self.agent_id, line)
        if parent is not None:
            parent.metrics["offsprings"] = parent.metrics.get("offsprings", 0) + 1
            hparams = copy.deepcopy(parent.hparams)
            lines.append(f"parent {parent.full_id} selected")
        else:
            parent = selected[MAIN_PATH]
            best = population.get_best_path()
            source = best.hparams if best is not None else self.config.hparams_defaults
            hparams = copy.deepcopy(source)
            origin = f"the best path {best.full_id}" if best is not None else "the defaults"
            lines.append(f"parent is {MAIN_PATH} {parent.full_id}; hparams from {origin}")
        hparams["paths"] = {}
        hparams, decisions = mutate_hparams(hparams, self.policy, rng)
        # The generation's shared dataset hparams (and num_classes) win.
        hparams.update(ds_hparams)

        lines += self.subpaths.select(population, hparams, parent, selected, rng)
        hparams["num_paths"] = len(selected)
        hparams["paths"] = {
            slot: {
                "agent_id": sub.agent_id,
                "id": sub.id,
                "hparams": copy.deepcopy(sub.hparams),
            }
            for slot, sub in selected.items()
        }
        for slot, sub in selected.items():
            if sub.task_name != self.task_name:
                hparams["paths"][slot]["hparams"]["num_classes"] = 0  # Headless.
            elif slot != MAIN_PATH:
                raise AgentError(f"{slot} {sub.full_id} is a path of this agent's own task")
            model = self.agent_model(sub.agent_id)
            if model != self.config.model:  # Grown at another size (a hybrid, ...).
                hparams["paths"][slot]["model"] = model
        hparams["ds_image_size"] = sorted(
            {int(ref["hparams"]["ds_image_size"]) for ref in hparams["paths"].values()}
        )

        components, reuse = self._components(population, hparams, parent, selected)
        path = population.new_path(hparams, components, parent)
        for line in lines:
            log.info("path %s: %s", path.full_id, line)
        for decision in decisions:
            log.log(log_level(decision.changed), "path %s: %s", path.full_id, decision.describe())
        fired = [d.describe() for d in decisions if d.changed]
        path.metrics["mutations"] = [*lines, *fired]
        path.metrics["reuse"] = reuse
        return path

    def _components(
        self,
        population: Population,
        hparams: dict[str, Any],
        parent: Path,
        selected: dict[str, Path],
    ) -> tuple[list[Any], str]:
        """The child's components in model order (path_0, router, then each path and its
        connector) and a summary of where the router and connectors came from."""
        num_classes = int(hparams["num_classes"])
        parent_components = {c.name: c for c in parent.components}
        slots = list(selected)
        wanted: dict[str, dict[str, torch.Tensor]] = {
            ROUTER: init_router(
                len(slots), num_classes, float(hparams["router_init_main_path_weight"])
            )
        }
        for index in range(1, len(slots)):
            width = self.subpath_arch(hparams["paths"][slot_name(index)]).width
            wanted[head_adapter_name(index)] = init_head_adapter(width, num_classes)

        made: dict[str, Component] = {}
        cloned, fresh = [], []
        for name, init in wanted.items():
            source = parent_components.get(name)
            shapes = {n: tuple(t.shape) for n, t in init.items()}
            if isinstance(source, Component) and component_shapes_of(source) == shapes:
                made[name] = population.clone_component(source)
                cloned.append(name)
            else:
                made[name] = population.new_component(name, init)
                fresh.append(name)
        components: list[Any] = [PathComponent(MAIN_PATH, selected[MAIN_PATH]), made[ROUTER]]
        for index in range(1, len(slots)):
            slot = slot_name(index)
            components += [PathComponent(slot, selected[slot]), made[head_adapter_name(index)]]
        groups = [f"{slot}: {sub.full_id}" for slot, sub in selected.items()]
        if cloned:
            groups.append(f"cloned from {parent.full_id}: {', '.join(cloned)}")
        if fresh:
            groups.append(f"fresh: {', '.join(fresh)}")
        return components, "; ".join(groups)
