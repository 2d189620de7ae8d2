"""Independent training: one task's model trained alone from the system's root model.

The alternative a user would pick instead of growing a system: one model per task, trained on
its own. It is the baseline of ``benchmarks/system_vs_independent.py`` (docs/results.md). To
compare like with like, the model is built and trained by the singlepath agent's own code: the
architecture of the agents' paths, every component cloned from the root (nothing shared,
nothing frozen; a fresh head; a resized position embedding for another image size), trained
with the agent's optimizer and schedule, validated periodically keeping the best-scoring
parameters, then evaluated on the test split. Nothing is committed to the store: an
independent model is not part of the system.

- :func:`default_hparams`: the preset's defaults (baseline "independent, default hparams").
- :func:`random_hparams`: one uniform draw from the mutation spaces the singlepath agent
  searches (baseline "independent, random search").
- :class:`IndependentAgent`: ``train_alone(hparams, steps)`` (``linear_probe=True``: the root
  shared frozen, only the head trains) and ``random_search(steps, num_trials)``.
"""

from __future__ import annotations

import math
import random
import time
from typing import Any

from munet.agents.cycle import stable_seed
from munet.agents.mutation import MU_KEY
from munet.agents.reports import AgentError, RunReport
from munet.agents.root import root_agent_id
from munet.agents.singlepath import SinglepathAgent
from munet.config import AgentConfig
from munet.system import Path, Population
from munet.training.threads import apply_thread_policy


def default_hparams(config: AgentConfig) -> dict[str, Any]:
    """The preset's default hparams (a copy): what a root path and a first generation use."""
    return dict(config.hparams_defaults)


def random_hparams(config: AgentConfig, rng: random.Random) -> dict[str, Any]:
    """Default hparams with every searched hparam drawn uniformly from its mutation range.

    The ranges are those the singlepath agent's mutations move along (learning rate and its
    schedule's warmup, momentum, Nesterov, depth, image size, augmentations); ``_mu_``, the
    search's own mutation probability, is not a training hparam and keeps its default.
    Keys are drawn in sorted order, so a seeded ``rng`` gives the same draw every time.
    """
    hparams = default_hparams(config)
    for key in sorted(config.hparams_mutation_ranges):
        if key != MU_KEY:
            hparams[key] = rng.choice(list(config.hparams_mutation_ranges[key]))
    return hparams


class IndependentAgent(SinglepathAgent):
    """Trains one task's model alone from the root model of ``config``'s agent class.

    Takes :class:`munet.agents.SinglepathAgent`'s arguments, plus ``root_kind``, the root
    model to start from (``random_init`` or ``checkpoint``; it must exist in the store:
    :func:`munet.agents.create_root_model`). It reads the store, never writes it, and does
    not run cycles (:meth:`run` raises).
    """

    def __init__(self, *args: Any, root_kind: str = "random_init", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.root_kind = root_kind
        self._root: Path | None = None

    @property
    def steps_between_validations(self) -> int:
        """Train steps between two validations; a training budget is a multiple of it."""
        return int(self.task.num_train_batches_between_validations)

    def root(self) -> Path:
        """The root path (read from the store once).

        Raises:
            AgentError: the store has no such root model.
        """
        if self._root is None:
            root_id = root_agent_id(self.config, self.root_kind)
            loaded = self.store.load(root_id, [])  # The root's own state only.
            if not loaded.population.own_paths:
                raise AgentError(
                    f"the system at {self.store.root} has no root model {root_id}: create it "
                    f"first (munet root --agent {self.config.name} --root {self.root_kind} "
                    f"--state-dir {self.store.root})"
                )
            self._root = loaded.population.own_paths[0]
        return self._root

    def run(self, num_cycles: int, planned_cycles: int | None = None) -> RunReport:
        raise AgentError(
            "an IndependentAgent trains one model with train_alone or random_search; run "
            "cycles with a SinglepathAgent"
        )

    def train_alone(
        self, hparams: dict[str, Any], steps: int, trial: int = 0, linear_probe: bool = False
    ) -> Path:
        """Trains one model from the root for ``steps`` steps and evaluates it on test.

        Args:
            hparams: the model's hparams (:func:`default_hparams`, :func:`random_hparams`);
                ``num_classes`` is set to the task's.
            steps: train steps, a positive multiple of :attr:`steps_between_validations`
                (the model is validated after each such interval, and the lr schedule spans
                the whole training).
            trial: which training this is (seeds the data order and fresh components, so
                two trials of one agent differ).
            linear_probe: share the root's components frozen, so only the fresh head (and
                a position embedding, for an image size other than the root's) trains;
                default: clone them all (finetuning).

        Returns:
            The trained path (parent: the root), with metrics ``quality`` (best validation
            accuracy; NaN when training diverged before any validation), ``test_quality``
            (of the parameters it holds), ``steps`` (train steps run), ``seconds``,
            ``num_params`` and ``params_trained`` (those of its own components).

        Raises:
            ValueError: ``steps`` is not a positive multiple of the validation interval.
            AgentError: no root model.
        """
        interval = self.steps_between_validations
        if steps <= 0 or steps % interval:
            raise ValueError(
                f"steps {steps!r}: expected a positive multiple of {interval} (the train steps "
                f"between validations of {self.task_name} with this config)"
            )
        apply_thread_policy(self.config.num_threads)
        start = time.perf_counter()
        root = self.root()
        population = Population(self.agent_id, self._scorer(), task_name=self.task_name)
        hparams = {**hparams, "num_classes": self.task.num_classes}
        # Clone every component of the root: the model is all its own and all trainable (a
        # linear probe shares them frozen instead).
        components, _ = self.build_components(
            population, root, hparams, lambda _name: not linear_probe, ("alone", trial)
        )
        path = population.new_path(hparams, components, root)
        path.metrics["trial"] = trial
        path.metrics["params_trained"] = sum(
            c.num_params for c in components if c.agent_id == self.agent_id
        )
        stats = self.train_paths(
            population,
            [path],
            stable_seed(self.config.seed, self.agent_id, "alone", trial, "data"),
            num_validations=steps // interval,
        )
        path.metrics["steps"] = stats.steps
        if not path.metrics["improved"]:
            path.metrics["quality"] = float("nan")
        self.run_test_eval(path)
        path.metrics["seconds"] = time.perf_counter() - start
        return path

    def random_search(
        self, steps: int, num_trials: int, seed: int | None = None
    ) -> tuple[Path, list[Path]]:
        """Random hparam search spending ``steps`` train steps in ``num_trials`` trainings.

        Args:
            steps: the search's whole budget; each trial trains ``steps // num_trials`` steps,
                which must be a positive multiple of :attr:`steps_between_validations`.
            num_trials: hparam draws (:func:`random_hparams`), one training each.
            seed: seeds the draws (default: the config's seed).

        Returns:
            The trial with the best validation accuracy (the first on ties; a diverged trial
            never wins unless all diverged) and every trial, in order.

        Raises:
            ValueError: ``num_trials`` < 1 or ``steps`` does not split into equal trials of
                whole validation intervals.
        """
        if num_trials < 1:
            raise ValueError(f"num_trials {num_trials!r}: expected at least 1")
        if steps % num_trials:
            raise ValueError(f"steps {steps!r} do not split into {num_trials} equal trials")
        seed = self.config.seed if seed is None else seed
        rng = random.Random(f"{seed}:{self.agent_id}:random_search")
        trials = []
        for trial in range(num_trials):
            hparams = random_hparams(self.config, rng)
            trials.append(self.train_alone(hparams, steps // num_trials, trial=trial))

        def validation(path: Path) -> float:
            quality = float(path.metrics["quality"])
            return quality if math.isfinite(quality) else float("-inf")

        best = max(trials, key=validation)  # max keeps the first of equal ones.
        return best, trials
