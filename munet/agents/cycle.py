"""The agent cycle, once for every kind of agent (seed 000: ``run_cycles``, ``agent_cycle``;
training and test evaluation, ``train_loop`` and ``run_test_eval``, in munet.agents.path_training).

An agent evolves paths for one task. A run is a sequence of cycles; each cycle runs
``ceil(num_samples_per_cycle / devices)`` generations, and each generation:

1. samples the dataset hparams (``ds_*``) shared by the generation from the agent's best path
   (mutated; defaults for a new task);
2. samples one child per device (the policy of the agent kind: :class:`SinglepathAgent`,
   :class:`MultipathAgent`), then completes the generation's dataset hparams from the children
   (a multipath generation reads every image size its subpaths need);
3. trains the children side by side with periodic validation, keeping each child's
   best-scoring parameters; a child joins the population only if it beats its parent's score
   (-inf when the parent belongs to another agent);
4. prunes the population and commits the agent's state.

At the end of a cycle the best path is test-evaluated, becomes the agent's only path, its
components get the agent's train lock, and the end-of-cycle state is committed (and published
to other agents, with every path it wraps). Killing the process loses at most the generation in
flight: a rerun resumes from the last committed state, mid-cycle too, and a rerun with more
cycles continues.

Every random decision uses a generator seeded from (config seed, agent, cycle, generation), so
on CPU a run is reproducible, and a resumed generation replays the decisions of the interrupted
one.
"""

from __future__ import annotations

import functools
import logging
import math
import random
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from munet.agents.devices import local_devices
from munet.agents.mutation import MutationDecision, MutationPolicy, mutate_hparams
from munet.agents.options import RunOptions, takes_run_options
from munet.agents.path_training import PathTrainer, Tensors
from munet.agents.reports import (
    DECISIONS_LOGGER,
    AgentError,
    GenerationReport,
    ImmutabilityError,
    RunReport,
    SampledPath,
    best_summary,
    generation_line,
    generation_summary,
    log_level,
    start_block,
)
from munet.agents.rescoring import rescore_finalists
from munet.agents.run_loop import AgentLines, RunLoop, RunProgress
from munet.agents.tracked import track_generation
from munet.config import DATASET_HPARAMS_PREFIX, AgentConfig
from munet.system import Path, Population, ScorerDecay, SystemStore, format_agent_id
from munet.system.component import AnyComponent
from munet.tracking import Tracker
from munet.training.loop import TrainStats

# Mutation, selection and reuse decisions: shown by `munet run -v` (munet.cli.agents).
log = logging.getLogger(DECISIONS_LOGGER)

ROOT_TASK_PREFIX = "root_model/"


def stable_seed(*parts: Any) -> int:
    """A seed that depends only on ``parts`` (not on Python's hash randomisation)."""
    return zlib.crc32(":".join(str(p) for p in parts).encode())


@dataclass
class BuiltModel:
    """A path's model on one device.

    Attributes:
        model: images -> logits (B, C); images are a tensor, or {image size: tensor}.
        trainable: {component name: {tensor name: leaf tensor}} of the trainable components
            (empty when built for evaluation).
    """

    model: Callable[[Any], torch.Tensor]
    trainable: dict[str, Tensors]


def device_tensors(component: AnyComponent, device: torch.device, trainable: bool) -> Tensors:
    """The component's tensors on ``device``: fresh leaves that require grad when trainable
    (the path's own copy to train), else the stored tensors moved (never written)."""
    if trainable:
        return {
            n: t.detach().to(device, copy=True).requires_grad_(True)
            for n, t in component.tensors.items()
        }
    return {n: t.to(device) for n, t in component.tensors.items()}


class Agent:
    """Evolves paths for one task in a system state dir; subclasses say how a path is sampled
    and how its model is built (the seed's ``Vit`` / ``MultiVit`` class hierarchy).

    Args:
        config: the agent config (a preset, possibly overridden); its ``name`` is the agent
            class in the agent id.
        task_name: the task (``digits``, ``synth/shape``, a TFDS name, ...).
        store: the system state (a ``SystemStore`` or a state dir).
        options: how it runs (devices, lines, bars, tracker, ...): a
            :class:`munet.agents.options.RunOptions`.
        **option_values: the same options as keywords (``quiet=True``, ``detail="full"``,
            ...), applied over ``options``.

    The task's data is read and checked here, before anything is written. The agent holds
    its parts: a :class:`munet.agents.path_training.PathTrainer` (``trainer``), the run loop
    (:class:`munet.agents.run_loop.RunLoop`) and its lines (``lines``).

    Raises:
        AgentError: a root-model pseudo task (use :func:`create_root_model`).
        ValueError: an unknown task (from munet.tasks, listing the known ones), or bad data
            (every unreadable file named, NaN pixels, labels out of range).
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
        from munet.tasks import get_task
        from munet.tasks.registry import warn_small_validation

        options = RunOptions.of(options, **option_values)
        self.options = options
        self.config = config.validate()
        if task_name.startswith(ROOT_TASK_PREFIX):
            raise AgentError(self._root_task_message(task_name))
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
            data=config.data or None,  # a named task's source (munet run --data)
            split_rule=config.data_split or None,
            skip_bad_files=options.skip_bad_files,
        )
        warn_small_validation(self.task)  # selection on under 200 examples is luck
        self.devices = (
            list(options.devices) if options.devices else local_devices(config.max_devices)
        )
        quiet = options.quiet
        self.progress = False if quiet and options.progress is None else options.progress
        self.lines = AgentLines(quiet, options.detail, options.echo or print)
        self.policy = MutationPolicy.from_config(config)
        self.tracking = options.tracker
        self.trainer = PathTrainer(
            self.config,
            self.task,
            self.agent_id,
            self.devices,
            build_model=self.build_model,
            score=self.score,
            say=self.lines.say,
            progress=self.progress,
        )

    # The run ------------------------------------------------------------------------------
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
            AgentError: the system cannot feed this agent (no root model; for a multipath
                agent, no state of its task's singlepath agent).
            munet.system.AgentLockedError: another process runs this agent.
        """
        loop = RunLoop(self, self.lines, self.progress, self.tracking)
        return loop.run(num_cycles, planned_cycles)

    # Training (the trainer's; methods here so that a caller or a test can wrap them) -----
    def train_paths(
        self,
        population: Population,
        paths: list[Path],
        data_seed: int,
        data_hparams: dict[str, Any] | None = None,
        num_validations: int | None = None,
    ) -> TrainStats:
        """See :meth:`munet.agents.path_training.PathTrainer.train_paths`."""
        return self.trainer.train_paths(population, paths, data_seed, data_hparams, num_validations)

    def run_test_eval(self, path: Path, test_immutability: bool = False) -> float:
        """See :meth:`munet.agents.path_training.PathTrainer.run_test_eval`."""
        return self.trainer.run_test_eval(path, test_immutability)

    def full_validation_quality(self, path: Path) -> float:
        """See :meth:`munet.agents.path_training.PathTrainer.full_validation_quality`."""
        return self.trainer.full_validation_quality(path)

    # The policy: what an agent kind defines ---------------------------------------------------
    def agent_classes_to_load(self) -> list[str]:
        """Agent classes whose published states this agent reads (its own state always)."""
        raise NotImplementedError

    def check_population(self, population: Population) -> None:
        """Raises AgentError when the loaded system cannot feed this agent (before any work)."""
        raise NotImplementedError

    def check_store(self) -> None:
        """Refuses, before the agent's lock (which creates its folder), a run the state dir
        cannot feed, so a refused run writes nothing: a new agent (no folder yet) needs a
        committed state of an agent it loads (the root model, for a singlepath agent)."""
        if self.store.fs.exists(self.store.agent_dir(self.agent_id)):
            return  # Not new: the lock creates nothing, and its holder is reported first.
        for agent_id in self.store.agent_ids(self.agent_classes_to_load()):
            if self.store.latest_state(agent_id) is not None:
                return
        self.check_population(Population(self.agent_id))

    def sample_path(
        self,
        population: Population,
        ds_hparams: dict[str, Any],
        rng: random.Random,
        seed_parts: tuple = (),
    ) -> Path:
        """Samples one child of the generation (registered in ``population``)."""
        raise NotImplementedError

    def finalize_ds_hparams(
        self, ds_hparams: dict[str, Any], paths: Sequence[Path]
    ) -> dict[str, Any]:
        """The dataset hparams the generation's batches are made with, once its paths are
        sampled (default: as sampled)."""
        return ds_hparams

    def build_model(self, path: Path, device: torch.device, train: bool) -> BuiltModel:
        """The path's model on ``device``; with ``train``, its trainable components are
        fresh leaves that require grad (frozen ones never do)."""
        raise NotImplementedError

    def path_flops(self, path: Path) -> float:
        """Forward FLOPs of one example through the path's model."""
        raise NotImplementedError

    def describe_path(self, path: Path) -> str:
        """A short description of a path's architecture for the summaries."""
        return ""

    def start_block(self) -> list[str]:
        """The lines a run starts with: the agent, its task and data, roots, model, devices."""
        from munet.agents.task_data import task_source_label

        roots = [
            agent_id
            for agent_id in self.store.agent_ids(self.agent_classes_to_load())
            if "~root_model~" in agent_id
        ]
        devices = sorted({str(device) for device in self.devices})
        return start_block(
            self.agent_id,
            self.task,
            task_source_label(self.task_name, self.config.data),
            roots,
            self.config.name,
            self.config.model,
            self.num_generations,
            f"{len(self.devices)} x {', '.join(devices)}" if len(self.devices) > 1 else devices[0],
        )

    def _root_task_message(self, task_name: str) -> str:
        return f"{task_name!r} is a root model, not a task: create it with `munet root`"

    def __repr__(self) -> str:
        devices = ", ".join(str(device) for device in self.devices)
        return (
            f"{type(self).__name__}(agent_id={self.agent_id!r}, task={self.task_name!r}, "
            f"preset={self.config.name!r}, state_dir={str(self.store.root)!r}, "
            f"devices=[{devices}], generations_per_cycle={self.num_generations})"
        )

    # Population -----------------------------------------------------------------------------
    def _scorer(self) -> ScorerDecay:
        scorer = self.config.scorer
        return ScorerDecay(
            scale_factor=scorer.scale_factor,
            base_accounted_params=scorer.base_accounted_params,
            base_flops=scorer.base_flops,
            flops_fn=self.path_flops,
        )

    def load_population(self, announce: bool = True) -> tuple[Population, int, int]:
        """The agent's population from its latest committed state (and the published paths
        of the agents it reads), with the cycle and generation to resume at."""
        loaded = self.store.load(
            self.agent_id,
            self.agent_classes_to_load(),
            scorer=self._scorer(),
            max_task_population_size=self.config.max_task_population_size,
        )
        population = loaded.population
        self.check_population(population)
        if announce and loaded.state is not None:
            self.lines.say(
                "start",
                f"{self.agent_id}: continuing from state {loaded.state.name} "
                f"(cycle {loaded.cycle}, generation {loaded.generation})",
            )
        return population, loaded.cycle, loaded.generation

    def score(self, population: Population, path: Path) -> float:
        """The path's score in ``population`` (-inf for none)."""
        score = population.score(path)
        return float("-inf") if score is None else score

    def run_cycle(
        self,
        population: Population,
        cycle: int,
        first_generation: int,
        reports: list[GenerationReport],
        total_cycles: int,
        progress: RunProgress,
    ) -> Path:
        """Runs the cycle's generations from ``first_generation`` (each committed but the
        last), then re-scores the finalists and test-evaluates the best path: returned."""
        best = population.get_best_path()
        if self.config.test_immutability and best is not None:
            self.run_test_eval(best, test_immutability=True)
        for generation in range(first_generation, self.num_generations):
            report = self._run_generation(population, cycle, generation, progress.tracker)
            reports.append(report)
            progress.pace.advance()
            progress.bar.update(1)
            current = population.get_best_path()
            if current is not best:
                if best is not None and self.score(population, current) < self.score(
                    population, best
                ):
                    raise RuntimeError("the best path got worse: pruning removed a better path")
                best = current
                best.metrics["new_best"] = True
                score = self.score(population, best)
                self.lines.say("detail", best_summary(best, score, self.describe_path(best)))
            if generation + 1 < self.num_generations:
                save_start = time.perf_counter()
                self.store.save_state(population, cycle, generation + 1, self.config.to_dict())
                report.save = time.perf_counter() - save_start
                report.wall += report.save
            self.lines.say(
                "generation",
                generation_line(
                    report,
                    self.agent_id,
                    (cycle + 1, total_cycles),
                    (generation + 1, self.num_generations),
                    best,
                    self.score(population, best) if best is not None else None,
                    progress.pace.eta_text(),
                ),
            )
        if best is None or best not in population.own_paths:
            raise AgentError(
                f"{self.agent_id}: no path of this cycle beat its parent and the agent has no "
                "path yet; train longer (num_validations_per_path_training) or sample more "
                "(num_samples_per_cycle)"
            )
        if self.config.rescore_finalists and self.task.source.num_examples("validation") > (
            self.task.num_validation_examples
        ):
            best = rescore_finalists(population, self.full_validation_quality) or best
        self.run_test_eval(best)
        return best

    def _run_generation(
        self, population: Population, cycle: int, generation: int, tracker: Tracker | None
    ) -> GenerationReport:
        start = time.perf_counter()
        rng = random.Random(f"{self.config.seed}:{self.agent_id}:{cycle}:{generation}")
        self.lines.say("detail", f"---- generation [{generation + 1}/{self.num_generations}]")
        ds_hparams, ds_decisions = self.sample_ds_hparams(population, rng)
        ds_hparams["num_classes"] = self.task.num_classes
        for decision in ds_decisions:
            log.log(log_level(decision.changed), "generation ds hparams: %s", decision.describe())
        paths = []
        for device_index in range(len(self.devices)):
            path = self.sample_path(
                population, ds_hparams, rng, seed_parts=(cycle, generation, device_index)
            )
            path.metrics["cycle_id"] = cycle
            path.metrics["generation_id"] = generation
            paths.append(path)
        data_hparams = self.finalize_ds_hparams(ds_hparams, paths)
        report = GenerationReport(cycle, generation, paths)
        report.sample = time.perf_counter() - start
        report.train = self.train_paths(
            population,
            paths,
            stable_seed(self.config.seed, self.agent_id, cycle, generation, "data"),
            data_hparams,
        )
        for path in paths:
            if path.metrics["improved"]:
                population.add_path(path)
        population.prune_population()
        report.wall = time.perf_counter() - start
        if tracker is not None:
            best = population.get_best_path()
            score = functools.partial(self.score, population)
            track_generation(tracker, paths, best, score, cycle, generation, self.num_generations)
        for line in generation_summary(
            paths, report, self.agent_id, lambda p: self.score(population, p)
        ):
            self.lines.say("detail", line)
        # Keep summaries only: the paths (and what they reference) go with the population.
        report.paths = [SampledPath.of(p) for p in paths]
        return report

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


__all__ = [
    "Agent",
    "AgentError",
    "BuiltModel",
    "GenerationReport",
    "ImmutabilityError",
    "RunReport",
    "device_tensors",
    "stable_seed",
]
