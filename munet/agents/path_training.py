"""Training and test-evaluating an agent's paths (the seed's ``train_loop`` and
``run_test_eval``): the part of the agent cycle (munet.agents.cycle) that turns a generation's
sampled paths into trained, scored ones.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import torch

from munet.agents.reports import ImmutabilityError
from munet.config import AgentConfig
from munet.system import Path, Population
from munet.training.loop import (
    TrainCandidate,
    TrainStats,
    evaluate_accuracy,
    rebatch,
    train_candidates,
)
from munet.training.optim import make_optimizer

Tensors = dict[str, torch.Tensor]


#: The policy's ``build_model(path, device, train)`` (a :class:`munet.agents.cycle.BuiltModel`).
ModelBuilder = Callable[[Path, torch.device, bool], Any]
#: ``score(population, path)``: the path's score, -inf for none.
Scorer = Callable[[Population, Path], float]
#: ``say(kind, line)``: the agent's lines (munet.agents.run_loop.AgentLines).
Say = Callable[[str, str], None]


class PathTrainer:
    """Trains and test-evaluates one agent's paths: held by :class:`munet.agents.cycle.Agent`,
    given what it needs by name, so it reads alone.

    Args:
        config: the agent's config (precision, batch sizes, validations, tolerances).
        task: its task (munet.tasks.Task): the batches of every split.
        agent_id: the agent's id (a parent of another agent is beaten from -inf).
        devices: one child is trained per device.
        build_model: the agent kind's ``build_model``.
        score: the population's score of a path.
        say: where the per-path lines go.
        progress: the training bars (None: when stderr is a terminal).
    """

    def __init__(
        self,
        config: AgentConfig,
        task: Any,
        agent_id: str,
        devices: Sequence[torch.device],
        build_model: ModelBuilder,
        score: Scorer,
        say: Say,
        progress: bool | None,
    ) -> None:
        self.config = config
        self.task = task
        self.agent_id = agent_id
        self.devices = devices
        self.build_model = build_model
        self.score = score
        self.say = say
        self.progress = progress

    # Training -------------------------------------------------------------------------------
    def train_paths(
        self,
        population: Population,
        paths: list[Path],
        data_seed: int,
        data_hparams: dict[str, Any] | None = None,
        num_validations: int | None = None,
    ) -> TrainStats:
        """Trains the generation's paths side by side (one per device) and records their
        metrics; improved paths get their best parameters back.

        Args:
            population: the agent's population (scores the paths).
            paths: the generation's children, one per device.
            data_seed: seed of the train batches' order and augmentation.
            data_hparams: the generation's dataset hparams (default: the first path's).
            num_validations: validations of the training, each after the task's train
                batches between validations (default: the config's
                ``num_validations_per_path_training``); the lr schedule spans them all.
        """
        if num_validations is None:
            num_validations = self.config.num_validations_per_path_training
        candidates = []
        trainables: list[dict[str, Tensors]] = []
        for path, device in zip(paths, self.devices, strict=False):
            built = self.build_model(path, device, train=True)
            # Named ("<component>.<tensor>"), so AdamW can leave the ViT's tokens undecayed.
            named = {
                f"{component}.{name}": t
                for component, tensors in built.trainable.items()
                for name, t in tensors.items()
            }
            flat = list(named.values())
            optimizer = make_optimizer(
                named,
                path.hparams,
                self.task.num_train_batches_between_validations,
                num_validations,
            )
            parent = path.parent
            same_agent = parent is not None and parent.agent_id == self.agent_id
            threshold = self.score(population, parent) if same_agent else float("-inf")
            # The score to beat, for the audit (None: first path of this agent in the lineage).
            path.metrics["parent_score"] = threshold if same_agent else None

            def score_of_quality(quality: float, path: Path = path) -> float:
                path.metrics["quality"] = quality
                return self.score(population, path)

            candidates.append(
                TrainCandidate(
                    label=path.full_id,
                    model=built.model,
                    trainable=flat,
                    optimizer=optimizer,
                    score_of_quality=score_of_quality,
                    threshold=threshold,
                    device=device,
                    precision=self.config.precision,
                )
            )
            trainables.append(built.trainable)
        hparams = data_hparams if data_hparams is not None else paths[0].hparams
        stats = train_candidates(
            candidates,
            _pairs(self.task.train_batches(hparams, seed=data_seed)),
            self._eval_batches(self.task.validation_batches(hparams)),
            self.task.num_train_batches_between_validations,
            num_validations,
            progress=self.progress,
        )
        for path, candidate, trainable in zip(paths, candidates, trainables, strict=True):
            self._record_training(population, path, candidate, trainable, stats)
        return stats

    def _record_training(
        self,
        population: Population,
        path: Path,
        candidate: TrainCandidate,
        trainable: dict[str, Tensors],
        stats: TrainStats,
    ) -> None:
        metrics = path.metrics
        metrics["time_train_first_step"] = stats.first_step
        metrics["time_train"] = stats.train
        metrics["time_eval"] = stats.eval
        metrics["num_params"] = path.num_params()
        metrics["num_trainable_params"] = sum(
            t.numel() for tensors in trainable.values() for t in tensors.values()
        )
        metrics["evals"] = json.dumps([float(q) for q in candidate.evals])
        # Aligned one-to-one with evals: the learning curve of the path.
        metrics["eval_steps"] = json.dumps([int(s) for s in candidate.eval_steps])
        metrics["train_losses"] = json.dumps([float(v) for v in candidate.train_losses])
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

    def _eval_batches(self, batches: Iterable[Any]) -> list[tuple[Any, torch.Tensor]]:
        size = self.config.eval_batch_size or self.config.batch_size
        return rebatch(((b.images, b.labels) for b in batches), size)

    def full_validation_quality(self, path: Path) -> float:
        """The path's accuracy on the whole validation split (uncapped; for re-scoring the
        finalists, munet.agents.rescoring)."""
        device = self.devices[0]
        model = self.build_model(path, device, train=False).model
        batches = self.task.full_validation_batches(path.hparams)
        return evaluate_accuracy(model, self._eval_batches(batches), device, self.config.precision)

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
        model = self.build_model(path, device, train=False).model
        quality = evaluate_accuracy(
            model,
            self._eval_batches(self.task.test_batches(path.hparams)),
            device,
            self.config.precision,
        )
        if has_known:
            delta = quality - float(known)
            self.say(
                "detail", f"immutability of {path.full_id}: {float(known):.6f} ~= {quality:.6f}"
            )
            if not math.isclose(quality, float(known), rel_tol=self.config.immutability_rtol):
                raise ImmutabilityError(
                    f"path {path.full_id}: test quality {quality:.6f} differs from the published "
                    f"{float(known):.6f} by {delta:+.6f} (relative tolerance "
                    f"{self.config.immutability_rtol})"
                )
        path.metrics["test_quality"] = quality
        self.say(
            "detail",
            f"{path.full_id}: test quality {quality:.4f} ({time.perf_counter() - start:.1f}s)",
        )
        return quality


def _pairs(batches: Iterator[Any]) -> Iterator[tuple[Any, torch.Tensor]]:
    for batch in batches:
        yield batch.images, batch.labels
