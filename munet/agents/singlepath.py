"""The singlepath agent (seed 000: class ``Vit``, ``run_cycles``, ``agent_cycle``,
``mutate_parent``, ``run_test_eval``).

An agent evolves paths for one task. A run is a sequence of cycles; each cycle runs
``ceil(num_samples_per_cycle / devices)`` generations, and each generation:

1. samples the dataset hparams (``ds_*``) shared by the generation from the agent's best path
   (mutated; defaults for a new task);
2. samples one child per device: a parent by decay selection (else a random path of the
   system), incremental hparam mutations with self-tuned probabilities, then components reused
   from the nearest ancestor (cloned when trainable or when ``clone:NAME`` fires, else shared
   frozen), a fresh head for a new task, a resized root position embedding for a new image size
   and fresh extra encoder blocks;
3. trains the children side by side with periodic validation, keeping each child's
   best-scoring parameters; a child joins the population only if it beats its parent's score;
4. prunes the population and commits the agent's state.

At the end of a cycle the best path is test-evaluated, becomes the agent's only path, its
components get the agent's train lock, and the end-of-cycle state is committed (and published
to other agents). Killing the process loses at most the generation in flight: a rerun resumes
from the last committed state, mid-cycle too, and a rerun with more cycles continues.

Every random decision uses a generator seeded from (config seed, agent, cycle, generation), so
on CPU a run is reproducible, and a resumed generation replays the decisions of the interrupted
one.
"""

from __future__ import annotations

import json
import logging
import math
import random
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from munet.agents.devices import local_devices
from munet.agents.mutation import MutationDecision, MutationPolicy, do_mutate, mutate_hparams
from munet.agents.reuse import ComponentChoice, choose_component
from munet.agents.selection import select_parent
from munet.config import DATASET_HPARAMS_PREFIX, AgentConfig
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
from munet.system import (
    Component,
    Path,
    Population,
    ScorerDecay,
    SystemStore,
    format_agent_id,
)
from munet.training.loop import (
    TrainCandidate,
    TrainStats,
    evaluate_accuracy,
    rebatch,
    train_candidates,
)
from munet.training.optim import make_optimizer
from munet.training.threads import apply_thread_policy

log = logging.getLogger("munet.agents")

ROOT_TASK_PREFIX = "root_model/"


class AgentError(ValueError):
    """An agent cannot run as asked (no root model, bad task, ...)."""


class ImmutabilityError(RuntimeError):
    """A published path's test quality changed beyond the configured tolerance."""


def model_arch(config: AgentConfig, hparams: dict[str, Any]) -> VitArch:
    """The ViT architecture of a path from its hparams (``num_layers``, ``num_classes``)."""
    return VitArch.from_size(
        config.model,
        num_layers=int(hparams["num_layers"]),
        num_classes=int(hparams.get("num_classes", 0)),
    )


def _stable_seed(*parts: Any) -> int:
    return zlib.crc32(":".join(str(p) for p in parts).encode())


@dataclass
class GenerationReport:
    """What one generation did and how long each part took (seconds).

    Attributes:
        cycle / generation: 0-based cycle and generation indices.
        paths: the sampled children (admitted or not).
        sample: parent selection, mutation and component assembly (tensor copies included).
        train: the training and validation steps (from :class:`TrainStats`).
        wall: the whole generation, saving included.
        save: committing the state.
    """

    cycle: int
    generation: int
    paths: list[Path]
    sample: float = 0.0
    train: TrainStats = field(default_factory=TrainStats)
    save: float = 0.0
    wall: float = 0.0

    @property
    def steps_time(self) -> float:
        """Time inside train and validation steps."""
        return self.train.first_step + self.train.train + self.train.eval

    @property
    def overhead(self) -> float:
        """Time outside train and validation steps."""
        return self.wall - self.steps_time


@dataclass
class RunReport:
    """The outcome of :meth:`SinglepathAgent.run`.

    Attributes:
        agent_id: the agent.
        cycle: completed cycles after the run.
        generations: reports of the generations run by this call.
        best: the agent's best path after the run (None if no cycle ever ran).
    """

    agent_id: str
    cycle: int
    generations: list[GenerationReport]
    best: Path | None


class SinglepathAgent:
    """Evolves paths for one task in a system state dir (the seed's ``Vit`` agent family).

    Args:
        config: the agent config (a preset, possibly overridden); its ``name`` is the agent
            class in the agent id.
        task_name: the task (``digits``, ``synth/shape``, a TFDS name, ...).
        store: the system state (a ``SystemStore`` or a state dir).
        devices: devices to train on (default: every local GPU, else the CPU).
        progress: show training progress bars on stderr (None: when stderr is a terminal).
        echo: where the per-generation summaries go (default: the ``munet.agents`` logger).

    Raises:
        AgentError: a root-model pseudo task (use :func:`create_root_model`).
        ValueError: an unknown task (from munet.tasks, listing the known ones).
    """

    def __init__(
        self,
        config: AgentConfig,
        task_name: str,
        store: SystemStore | str,
        *,
        devices: Sequence[torch.device] | None = None,
        progress: bool | None = None,
        echo: Callable[[str], None] | None = None,
    ) -> None:
        from munet.tasks import get_task

        if task_name.startswith(ROOT_TASK_PREFIX):
            raise AgentError(
                f"{task_name!r} is a root model, not a task: create it with `munet root`"
            )
        self.config = config.validate()
        self.task_name = task_name
        self.agent_id = format_agent_id(config.name, task_name)
        self.store = store if isinstance(store, SystemStore) else SystemStore(str(store))
        self.task = get_task(
            task_name,
            batch_size=config.batch_size,
            num_train_examples_between_validations_max=(
                config.num_train_examples_between_validations_max
            ),
            num_validation_examples_max=config.num_validation_examples_max,
            seed=config.seed,
        )
        self.devices = list(devices) if devices else local_devices(config.max_devices)
        self.progress = progress
        self.echo = echo or log.info
        self.policy = MutationPolicy.from_config(config)
        self._posembed_cache: dict[int, dict[str, torch.Tensor]] = {}

    # Population -----------------------------------------------------------------------------
    def _scorer(self) -> ScorerDecay:
        scorer = self.config.scorer
        return ScorerDecay(
            scale_factor=scorer.scale_factor,
            base_accounted_params=scorer.base_accounted_params,
            base_flops=scorer.base_flops,
            flops_fn=self._path_flops,
        )

    def _path_flops(self, path: Path) -> float:
        return float(
            count_flops(model_arch(self.config, path.hparams), path.hparams["ds_image_size"])
        )

    def _load(self, announce: bool = True) -> tuple[Population, int, int]:
        loaded = self.store.load(
            self.agent_id,
            [self.config.name],
            scorer=self._scorer(),
            max_task_population_size=self.config.max_task_population_size,
        )
        population = loaded.population
        if not population.all_paths():
            raise AgentError(
                f"the system at {self.store.root} has no paths of agent class "
                f"{self.config.name!r}: create a root model first "
                f"(munet root --agent {self.config.name} --state-dir {self.store.root})"
            )
        if announce and loaded.state is not None:
            self.echo(
                f"{self.agent_id}: continuing from state {loaded.state.name} "
                f"(cycle {loaded.cycle}, generation {loaded.generation})"
            )
        return population, loaded.cycle, loaded.generation

    def _score(self, population: Population, path: Path) -> float:
        score = population.score(path)
        return float("-inf") if score is None else score

    # The run --------------------------------------------------------------------------------
    @property
    def num_generations(self) -> int:
        """Generations per cycle: ``ceil(num_samples_per_cycle / devices)``."""
        return math.ceil(self.config.num_samples_per_cycle / len(self.devices))

    def run(self, num_cycles: int, planned_cycles: int | None = None) -> RunReport:
        """Runs cycles until ``num_cycles`` are complete (resuming from the committed state).

        Other agents' published paths are re-read at the start of every cycle.

        Args:
            num_cycles: total completed cycles to reach.
            planned_cycles: the total shown in progress messages, when the caller runs the
                agent in several steps (default ``num_cycles``).

        Raises:
            AgentError: the system has no root model for this agent class.
            munet.system.AgentLockedError: another process runs this agent.
        """
        if num_cycles < 0:
            raise ValueError(f"num_cycles must be >= 0, got {num_cycles}")
        reports: list[GenerationReport] = []
        best: Path | None = None
        cycle = 0
        apply_thread_policy(self.config.num_threads)
        with self.store.lock(self.agent_id):
            first_load = True
            while True:
                population, cycle, generation = self._load(announce=first_load)
                first_load = False
                best = population.get_best_path()
                if cycle >= num_cycles:
                    break
                total = planned_cycles or num_cycles
                self.echo(f"==== {self.agent_id}: cycle [{cycle + 1}/{total}]")
                population.start_cycle()
                best = self._run_cycle(population, cycle, generation, reports)
                population.end_cycle()
                save_start = time.perf_counter()
                self.store.save_state(population, cycle + 1, 0, self.config.to_dict())
                if reports:
                    reports[-1].save += time.perf_counter() - save_start
                    reports[-1].wall += time.perf_counter() - save_start
                self.echo(
                    f"{self.agent_id}: cycle {cycle + 1} done; best path {best.full_id} "
                    f"test quality {best.metrics.get('test_quality', float('nan')):.4f}"
                )
        return RunReport(self.agent_id, cycle, reports, best)

    def _run_cycle(
        self,
        population: Population,
        cycle: int,
        first_generation: int,
        reports: list[GenerationReport],
    ) -> Path:
        best = population.get_best_path()
        if self.config.test_immutability and best is not None:
            self.run_test_eval(best, test_immutability=True)
        for generation in range(first_generation, self.num_generations):
            report = self._run_generation(population, cycle, generation)
            reports.append(report)
            current = population.get_best_path()
            if current is not best:
                if best is not None and self._score(population, current) < self._score(
                    population, best
                ):
                    raise RuntimeError("the best path got worse: pruning removed a better path")
                best = current
                best.metrics["new_best"] = True
                self.echo(self._best_summary(population, best))
            if generation + 1 < self.num_generations:
                save_start = time.perf_counter()
                self.store.save_state(population, cycle, generation + 1, self.config.to_dict())
                report.save = time.perf_counter() - save_start
                report.wall += report.save
        if best is None or best not in population.own_paths:
            raise AgentError(
                f"{self.agent_id}: no path of this cycle beat its parent and the agent has no "
                "path yet; train longer (num_validations_per_path_training) or sample more "
                "(num_samples_per_cycle)"
            )
        self.run_test_eval(best)
        return best

    def _run_generation(
        self, population: Population, cycle: int, generation: int
    ) -> GenerationReport:
        start = time.perf_counter()
        rng = random.Random(f"{self.config.seed}:{self.agent_id}:{cycle}:{generation}")
        self.echo(f"---- generation [{generation + 1}/{self.num_generations}]")
        ds_hparams, ds_decisions = self.sample_ds_hparams(population, rng)
        ds_hparams["num_classes"] = self.task.num_classes
        for decision in ds_decisions:
            log.log(_level(decision.fired), "generation ds hparams: %s", decision.describe())
        paths = []
        for device_index in range(len(self.devices)):
            path = self.sample_path(
                population, ds_hparams, rng, seed_parts=(cycle, generation, device_index)
            )
            path.metrics["cycle_id"] = cycle
            path.metrics["generation_id"] = generation
            paths.append(path)
        report = GenerationReport(cycle, generation, paths)
        report.sample = time.perf_counter() - start
        report.train = self.train_paths(
            population,
            paths,
            _stable_seed(self.config.seed, self.agent_id, cycle, generation, "data"),
        )
        for path in paths:
            if path.metrics["improved"]:
                population.add_path(path)
        population.prune_population()
        report.wall = time.perf_counter() - start
        for line in self._generation_summary(population, paths, report):
            self.echo(line)
        return report

    # Sampling -------------------------------------------------------------------------------
    def sample_ds_hparams(
        self, population: Population, rng: random.Random
    ) -> tuple[dict[str, Any], list[MutationDecision]]:
        """The generation's shared dataset hparams: defaults, overwritten by the best path's
        values (and their mutation probabilities), then mutated.

        Returns:
            The ds hparams and the mutation decisions taken.
        """
        prefix = DATASET_HPARAMS_PREFIX
        ds_hparams = {k: v for k, v in self.config.hparams_defaults.items() if k.startswith(prefix)}
        best = population.get_best_path()
        if best is None:
            return ds_hparams, []
        ds_hparams.update({k: best.hparams[k] for k in ds_hparams if k in best.hparams})
        ds_hparams.update(
            {k: v for k, v in best.hparams.items() if k.startswith(f"_mu_|hp:{prefix}")}
        )
        return mutate_hparams(ds_hparams, self.policy, rng)

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
            population.all_paths(),
            lambda p: self._score(population, p),
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
        arch = model_arch(self.config, hparams)
        image_size = int(hparams["ds_image_size"])
        shapes = component_shapes(arch, image_size)
        clone_decisions: list[MutationDecision] = []

        def decide_clone(name: str) -> bool:
            decision = do_mutate(hparams, f"clone:{name}", self.policy, rng)
            hparams.update(decision.updates)
            clone_decisions.append(decision)
            return decision.fired

        generator = torch.Generator().manual_seed(
            _stable_seed(self.config.seed, self.agent_id, *seed_parts, "init")
        )
        components = []
        choices: list[ComponentChoice] = []
        for name in component_names(arch):
            picked = choose_component(name, shapes[name], parent, self.agent_id, decide_clone)
            choices.append(picked)
            components.append(
                self._materialize(population, picked, arch, image_size, parent, generator)
            )
        path = population.new_path(hparams, components, parent)
        # One line per decision: those that change something at INFO, the others at DEBUG.
        for index, line in enumerate(choice.log):
            log.log(_level(index == len(choice.log) - 1), "path %s: %s", path.full_id, line)
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
            log.log(_level(decision.fired), "path %s: %s", path.full_id, decision.describe())
        for picked in choices:
            log.debug("path %s: %s", path.full_id, picked.describe())
        fired = [d.describe() for d in [*own, *clone_decisions] if d.fired]
        # The audit trail travels with the path (history CSV, manifests).
        path.metrics["mutations"] = [*choice.log[-1:], *fired]
        path.metrics["reuse"] = _reuse_summary(choices)
        return path

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
        else the lineage root's, resized to the new grid (cached per image size)."""
        if image_size not in self._posembed_cache:
            if self.config.checkpoint_path:
                headless = arch.replace(num_layers=0, num_classes=0)
                tensors = load_checkpoint(self.config.checkpoint_path, headless, image_size)[
                    "posembed_input"
                ]
            else:
                root = parent
                while root.parent is not None:
                    root = root.parent
                source = next(c for c in root.comps_only() if c.name == "posembed_input")
                pos = source.tensors["pos_embedding"]
                tensors = {"pos_embedding": resize_posembed(pos, arch.grid_size(image_size))}
            self._posembed_cache[image_size] = tensors
        return {k: v.clone() for k, v in self._posembed_cache[image_size].items()}

    # Training -------------------------------------------------------------------------------
    def train_paths(self, population: Population, paths: list[Path], data_seed: int) -> TrainStats:
        """Trains the generation's paths side by side (one per device) and records their
        metrics; improved paths get their best parameters back."""
        candidates = []
        trainable_tensors: list[dict[str, dict[str, torch.Tensor]]] = []
        for path, device in zip(paths, self.devices, strict=False):
            mapping: dict[str, dict[str, torch.Tensor]] = {}
            trainable: dict[str, dict[str, torch.Tensor]] = {}
            for component in path.components:
                if component.is_trainable():
                    tensors = {
                        n: t.detach().to(device, copy=True).requires_grad_(True)
                        for n, t in component.tensors.items()
                    }
                    trainable[component.name] = tensors
                else:
                    tensors = {n: t.to(device) for n, t in component.tensors.items()}
                mapping[component.name] = tensors
            arch = model_arch(self.config, path.hparams)
            model = AssembledVit(arch, int(path.hparams["ds_image_size"]), mapping)
            flat = [t for tensors in trainable.values() for t in tensors.values()]
            optimizer = make_optimizer(
                flat,
                path.hparams,
                self.task.num_train_batches_between_validations,
                self.config.num_validations_per_path_training,
            )
            parent = path.parent
            same_agent = parent is not None and parent.agent_id == self.agent_id
            threshold = self._score(population, parent) if same_agent else float("-inf")
            # The score to beat, for the audit (None: first path of this agent in the lineage).
            path.metrics["parent_score"] = threshold if same_agent else None

            def score_of_quality(quality: float, path: Path = path) -> float:
                path.metrics["quality"] = quality
                return self._score(population, path)

            candidates.append(
                TrainCandidate(
                    label=path.full_id,
                    model=model,
                    trainable=flat,
                    optimizer=optimizer,
                    score_of_quality=score_of_quality,
                    threshold=threshold,
                    device=device,
                    precision=self.config.precision,
                )
            )
            trainable_tensors.append(trainable)
        hparams = paths[0].hparams
        stats = train_candidates(
            candidates,
            _pairs(self.task.train_batches(hparams, seed=data_seed)),
            self._eval_batches(self.task.validation_batches(hparams)),
            self.task.num_train_batches_between_validations,
            self.config.num_validations_per_path_training,
            progress=self.progress,
        )
        for path, candidate, trainable in zip(paths, candidates, trainable_tensors, strict=True):
            metrics = path.metrics
            metrics["time_train_first_step"] = stats.first_step
            metrics["time_train"] = stats.train
            metrics["time_eval"] = stats.eval
            metrics["num_params"] = path.num_params()
            metrics["num_trainable_params"] = sum(
                t.numel() for tensors in trainable.values() for t in tensors.values()
            )
            metrics["evals"] = json.dumps([float(q) for q in candidate.evals])
            metrics["quality"] = candidate.quality
            metrics["improved"] = candidate.improved
            if candidate.failure is not None:
                metrics["failure"] = candidate.failure
            if candidate.improved:
                path.update_trainable(
                    {
                        name: {n: t.detach().to("cpu") for n, t in tensors.items()}
                        for name, tensors in trainable.items()
                    }
                )
                if candidate.best_quality != candidate.quality:
                    raise RuntimeError(
                        f"path {path.full_id}: best-scoring quality {candidate.best_quality} "
                        f"is not its best quality {candidate.quality}"
                    )
            population.score(path)
        return stats

    def _eval_batches(self, batches: Iterable[Any]) -> list[tuple[torch.Tensor, torch.Tensor]]:
        size = self.config.eval_batch_size or self.config.batch_size
        return rebatch(((b.images, b.labels) for b in batches), size)

    # Test evaluation ------------------------------------------------------------------------
    def run_test_eval(self, path: Path, test_immutability: bool = False) -> float:
        """Evaluates ``path`` on the test split and stores ``test_quality`` (skipped when it is
        already known, unless checking immutability).

        Raises:
            ImmutabilityError: with ``test_immutability``, the recomputed test quality differs
                from the stored one by more than ``immutability_rtol``.
        """
        known = path.metrics.get("test_quality")
        has_known = known is not None and not math.isnan(float(known))
        if has_known and not test_immutability:
            return float(known)
        start = time.perf_counter()
        device = self.devices[0]
        mapping = {c.name: {n: t.to(device) for n, t in c.tensors.items()} for c in path.components}
        model = AssembledVit(
            model_arch(self.config, path.hparams), int(path.hparams["ds_image_size"]), mapping
        )
        quality = evaluate_accuracy(
            model,
            self._eval_batches(self.task.test_batches(path.hparams)),
            device,
            self.config.precision,
        )
        if has_known:
            delta = quality - float(known)
            self.echo(f"immutability of {path.full_id}: {float(known):.6f} ~= {quality:.6f}")
            if not math.isclose(quality, float(known), rel_tol=self.config.immutability_rtol):
                raise ImmutabilityError(
                    f"path {path.full_id}: test quality {quality:.6f} differs from the published "
                    f"{float(known):.6f} by {delta:+.6f} (relative tolerance "
                    f"{self.config.immutability_rtol})"
                )
        path.metrics["test_quality"] = quality
        self.echo(
            f"{path.full_id}: test quality {quality:.4f} ({time.perf_counter() - start:.1f}s)"
        )
        return quality

    # Summaries ------------------------------------------------------------------------------
    def _best_summary(self, population: Population, best: Path) -> str:
        return (
            f"new best {best.full_id}: score {self._score(population, best):.4f} "
            f"quality {best.metrics['quality']:.4f} generation {best.metrics.get('generation_id')} "
            f"layers {best.hparams.get('num_layers')} image {best.hparams.get('ds_image_size')} "
            f"lr {best.hparams.get('opt_lr')}"
        )

    def _generation_summary(
        self, population: Population, paths: list[Path], report: GenerationReport
    ) -> list[str]:
        lines = []
        for path in paths:
            parent = path.parent
            if parent is not None and parent.task_name == path.task_name:
                tag = "" if parent.agent_id == self.agent_id else "A"
                parent_quality = f"{parent.metrics.get('quality', float('nan')):.4f}{tag}"
                parent_score = f"{self._score(population, parent):.4f}{tag}"
            else:
                parent_quality = parent_score = "NEW"
            verdict = "admitted" if path.metrics.get("improved") else "dropped"
            if "failure" in path.metrics:
                verdict = f"dropped ({path.metrics['failure']})"
            lines.append(
                f"  path {path.id} <- {parent.full_id if parent else '-'}  "
                f"quality {parent_quality} -> {path.metrics.get('quality', float('nan')):.4f}  "
                f"score {parent_score} -> {self._score(population, path):.4f}  {verdict}"
            )
            lines.append(f"    components: {path.metrics.get('reuse', '')}")
        stats = report.train
        lines.append(
            f"  time: sample {report.sample:.2f}s  first step {stats.first_step:.2f}s  "
            f"train {stats.train:.2f}s  eval {stats.eval:.2f}s  total {report.wall:.2f}s"
        )
        return lines


def _level(important: bool) -> int:
    return logging.INFO if important else logging.DEBUG


def _pairs(batches: Iterator[Any]) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    for batch in batches:
        yield batch.images, batch.labels


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
