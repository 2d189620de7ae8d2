"""The singlepath agent's policy (seed 000: class ``Vit``, ``mutate_parent``).

A child's parent comes from decay selection over the agent's own paths, else it is a random
path of the system; its hparams mutate incrementally with self-tuned probabilities; then for
each component of its architecture the nearest ancestor's is reused (cloned when trainable or
when ``clone:NAME`` fires, else shared frozen), with a fresh head for a new task, a resized
root position embedding for a new image size and fresh extra encoder blocks. The cycle around
it (generations, training, admission, publishing, test evaluation) is :class:`Agent`'s.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Sequence
from typing import Any

import torch

from munet.agents.adapter_mutation import (
    choose_adapters,
    materialize_adapters,
    path_adapter_flops,
)
from munet.agents.cycle import (
    Agent,
    BuiltModel,
    device_tensors,
    stable_seed,
)
from munet.agents.mutation import MutationDecision, do_mutate, mutate_hparams
from munet.agents.options import RunOptions, takes_run_options
from munet.agents.reports import (  # noqa: F401  (re-exported: the public home of the errors)
    DECISIONS_LOGGER,
    AgentError,
    GenerationReport,
    ImmutabilityError,
    RunReport,
    log_level,
)
from munet.agents.reuse import ComponentChoice, choose_component
from munet.agents.selection import select_parent
from munet.agents.shared_images import path_saw_test_images_of
from munet.config import AgentConfig
from munet.models import (
    AssembledVit,
    VitArch,
    component_names,
    component_shapes,
    count_flops,
    init_components,
    load_checkpoint,
    resize_posembed,
)
from munet.models.adapted_vit import AssembledAdaptedVit, adapter_block_index, adapter_name
from munet.system import Component, Path, Population, SystemStore

# Mutation, selection and reuse decisions: shown by `munet run -v` (munet.cli.agents).
log = logging.getLogger(DECISIONS_LOGGER)


def model_arch(config: AgentConfig, hparams: dict[str, Any]) -> VitArch:
    """The ViT architecture of a path from its hparams (``num_layers``, ``num_classes``)."""
    return VitArch.from_size(
        config.model,
        num_layers=int(hparams["num_layers"]),
        num_classes=int(hparams.get("num_classes", 0)),
    )


def assemble_vit(
    config: AgentConfig,
    path: Path,
    device: torch.device,
    train: bool,
    hparams: dict[str, Any] | None = None,
) -> tuple[AssembledVit, dict[str, dict[str, torch.Tensor]]]:
    """A singlepath path's ViT on ``device`` and its trainable tensors (with ``train``).

    Args:
        config: the config of the path's agent class (its model size).
        path: the path.
        device: where the model runs.
        train: make the trainable components fresh leaves that require grad.
        hparams: the hparams to build with (default the path's); a multipath model runs
            another task's path headless through a copy with ``num_classes`` 0.

    Components the architecture does not use (the head of a path run headless) are left out.
    """
    hparams = path.hparams if hparams is None else hparams
    arch = model_arch(config, hparams)
    used = set(component_names(arch))
    # Adapters after the blocks the architecture has (munet's adapter mutation).
    used |= {adapter_name(i) for i in range(arch.num_layers)}
    mapping: dict[str, dict[str, torch.Tensor]] = {}
    trainable: dict[str, dict[str, torch.Tensor]] = {}
    for component in path.components:
        if component.name not in used:
            continue
        learn = train and component.is_trainable()
        mapping[component.name] = device_tensors(component, device, learn)
        if learn:
            trainable[component.name] = mapping[component.name]
    image_size = int(hparams["ds_image_size"])
    if any(adapter_block_index(name) is not None for name in mapping):
        return AssembledAdaptedVit(arch, image_size, mapping), trainable
    return AssembledVit(arch, image_size, mapping), trainable


class SinglepathAgent(Agent):
    """Evolves ViT paths for one task from the system's components (the seed's ``Vit``
    agent family). See :class:`munet.agents.cycle.Agent` for the arguments and the cycle."""

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
        self._posembed_cache: dict[tuple[str, int], dict[str, torch.Tensor]] = {}

    # The policy -----------------------------------------------------------------------------
    def agent_classes_to_load(self) -> list[str]:
        """Agents of the same class (the seed's default)."""
        return [self.config.name]

    def check_population(self, population: Population) -> None:
        if not population.all_paths():
            raise AgentError(
                f"the system at {self.store.root} has no paths of agent class "
                f"{self.config.name!r}: create a root model first "
                f"(munet root --agent {self.config.name} --state-dir {self.store.root})"
            )

    def build_model(self, path: Path, device: torch.device, train: bool) -> BuiltModel:
        model, trainable = assemble_vit(self.config, path, device, train)
        return BuiltModel(model, trainable)

    def path_flops(self, path: Path) -> float:
        arch, image_size = model_arch(self.config, path.hparams), path.hparams["ds_image_size"]
        return float(count_flops(arch, image_size) + path_adapter_flops(path, arch, image_size))

    def describe_path(self, path: Path) -> str:
        return f"layers {path.hparams.get('num_layers')} image {path.hparams.get('ds_image_size')}"

    # Sampling -------------------------------------------------------------------------------
    def sample_path(
        self,
        population: Population,
        ds_hparams: dict[str, Any],
        rng: random.Random,
        seed_parts: tuple = (),
    ) -> Path:
        """Samples one child: parent selection, hparam mutation, component reuse.

        The decisions are logged (one line each) and kept in the child's ``mutations`` metric.
        """
        choice = select_parent(
            population.own_paths,
            # A canonical order (agent id, path id): a fresh agent and one loaded from its
            # state list the system's agents in different orders, and a resumed generation
            # must draw the same random parent as the interrupted one.
            # Never a path that trained on this task's test images (munet.tasks.overlap).
            sorted(
                (p for p in population.all_paths()
                 if not path_saw_test_images_of(p, self.task_name)),
                key=lambda p: (p.agent_id, p.id),
            ),  # fmt: skip
            lambda p: self.score(population, p),
            lambda p: p.metrics.get("offsprings", 0),
            rng,
            label=lambda p: p.full_id,
        )
        parent = choice.parent
        if choice.by_decay:
            parent.metrics["offsprings"] = parent.metrics.get("offsprings", 0) + 1
        hparams, decisions = mutate_hparams(parent.hparams, self.policy, rng)
        # The generation's shared dataset hparams (and num_classes) win.
        hparams.update(ds_hparams)
        clone_decisions: list[MutationDecision] = []

        def decide_clone(name: str) -> bool:
            decision = do_mutate(hparams, f"clone:{name}", self.policy, rng)
            hparams.update(decision.updates)
            clone_decisions.append(decision)
            return decision.fired

        components, choices = self.build_components(
            population, parent, hparams, decide_clone, seed_parts
        )
        if self.config.adapter_mutation_probability > 0 or any(
            adapter_block_index(c.name) is not None for c in parent.comps_only()
        ):
            components, choices = self._with_adapters(
                population, parent, hparams, components, choices, decide_clone, rng, seed_parts
            )
        path = population.new_path(hparams, components, parent)
        # One line per decision: those that change something at INFO, the others at DEBUG.
        for index, line in enumerate(choice.log):
            log.log(log_level(index == len(choice.log) - 1), "path %s: %s", path.full_id, line)
        # The seed mutates the parent's ds_* hparams too (same random draws), but the
        # generation's shared values replace them: say so rather than log a void change.
        own = [d for d in decisions if d.name[3:] not in ds_hparams]
        for decision in decisions:
            if decision not in own:
                log.debug(
                    "path %s: %s (replaced by the generation's %r)",
                    path.full_id,
                    decision.describe(),
                    ds_hparams[decision.name[3:]],
                )
        for decision in [*own, *clone_decisions]:
            log.log(log_level(decision.changed), "path %s: %s", path.full_id, decision.describe())
        for picked in choices:
            log.debug("path %s: %s", path.full_id, picked.describe())
        fired = [d.describe() for d in [*own, *clone_decisions] if d.changed]
        # The audit trail travels with the path (history CSV, manifests).
        path.metrics["mutations"] = [*choice.log[-1:], *fired]
        path.metrics["reuse"] = _reuse_summary(choices)
        return path

    def build_components(
        self,
        population: Population,
        parent: Path,
        hparams: dict[str, Any],
        decide_clone: Callable[[str], bool],
        seed_parts: tuple = (),
    ) -> tuple[list[Component], list[ComponentChoice]]:
        """The components of a child of ``parent`` with ``hparams``' architecture: for each
        slot the nearest ancestor's, shared or cloned (``decide_clone`` is asked for frozen
        ones), else a resized root position embedding or a fresh component.

        Args:
            population: the agent's population (owns the clones and new components).
            parent: the child's parent.
            hparams: the child's hparams (``num_layers``, ``num_classes``, ``ds_image_size``).
            decide_clone: whether to clone the frozen component of that name.
            seed_parts: what seeds fresh components' initialisation, with the agent's seed.

        Returns:
            The components, in the architecture's order, and the decision for each.
        """
        arch = model_arch(self.config, hparams)
        image_size = int(hparams["ds_image_size"])
        shapes = component_shapes(arch, image_size)
        generator = torch.Generator().manual_seed(
            stable_seed(self.config.seed, self.agent_id, *seed_parts, "init")
        )
        components = []
        choices: list[ComponentChoice] = []
        for name in component_names(arch):
            picked = choose_component(name, shapes[name], parent, self.agent_id, decide_clone)
            choices.append(picked)
            components.append(
                self._materialize(population, picked, arch, image_size, parent, generator)
            )
        return components, choices

    def _with_adapters(
        self,
        population: Population,
        parent: Path,
        hparams: dict[str, Any],
        components: list[Component],
        choices: list[ComponentChoice],
        decide_clone: Callable[[str], bool],
        rng: random.Random,
        seed_parts: tuple,
    ) -> tuple[list[Component], list[ComponentChoice]]:
        """The child's components and choices with its adapters appended (munet's adapter
        mutation: munet.agents.adapter_mutation)."""
        arch = model_arch(self.config, hparams)
        bottleneck = self.config.adapter_bottleneck
        picked = choose_adapters(
            parent, arch, choices, self.config.adapter_mutation_probability, bottleneck, rng,
            decide_clone,
        )  # fmt: skip
        generator = torch.Generator().manual_seed(
            stable_seed(self.config.seed, self.agent_id, *seed_parts, "adapters")
        )
        adapters = materialize_adapters(population, picked, arch.width, bottleneck, generator)
        return [*components, *adapters], [*choices, *picked]

    def _materialize(
        self,
        population: Population,
        choice: ComponentChoice,
        arch: VitArch,
        image_size: int,
        parent: Path,
        generator: torch.Generator,
    ) -> Component:
        if choice.action == "share":
            return choice.source
        if choice.action == "clone":
            return population.clone_component(choice.source)
        if choice.action == "posembed":
            return population.new_component(
                "posembed_input", self._root_posembed(arch, image_size, parent)
            )
        return population.new_component(
            choice.name, _fresh_component(choice.name, arch, image_size, generator)
        )

    def _root_posembed(
        self, arch: VitArch, image_size: int, parent: Path
    ) -> dict[str, torch.Tensor]:
        """Position embeddings for a new image size: the root checkpoint's (when configured),
        else the lineage root's, resized to the new grid (cached per source and image size:
        two roots of one class have different embeddings)."""
        root = parent
        while root.parent is not None:
            root = root.parent
        key = (self.config.checkpoint_path or root.full_id, image_size)
        if key not in self._posembed_cache:
            if self.config.checkpoint_path:
                headless = arch.replace(num_layers=0, num_classes=0)
                tensors = load_checkpoint(self.config.checkpoint_path, headless, image_size)[
                    "posembed_input"
                ]
            else:
                source = next(c for c in root.comps_only() if c.name == "posembed_input")
                pos = source.tensors["pos_embedding"]
                tensors = {"pos_embedding": resize_posembed(pos, arch.grid_size(image_size))}
            self._posembed_cache[key] = tensors
        return {k: v.clone() for k, v in self._posembed_cache[key].items()}



def _fresh_component(
    name: str, arch: VitArch, image_size: int, generator: torch.Generator
) -> dict[str, torch.Tensor]:
    """New initial tensors for one component, initialising only a minimal model around it."""
    if name.startswith("encoderblock_"):
        return init_components(arch.replace(num_layers=1, num_classes=0), image_size, generator)[
            "encoderblock_0"
        ]
    return init_components(arch.replace(num_layers=0), image_size, generator)[name]


def _reuse_summary(choices: Sequence[ComponentChoice]) -> str:
    """``shared from A: x, y; cloned from B: z; fresh: head`` (by action and source agent)."""
    groups: dict[str, list[str]] = {}
    for choice in choices:
        if choice.action in ("share", "clone"):
            verb = "shared" if choice.action == "share" else "cloned"
            key = f"{verb} from {choice.source.agent_id}"
        else:
            key = choice.action
        groups.setdefault(key, []).append(choice.name)
    return "; ".join(f"{key}: {', '.join(names)}" for key, names in groups.items())
