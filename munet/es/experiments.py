"""The two worked problems as runnable experiments (``munet es influence`` / ``munet es lr``).

Each function builds the problem and the estimators, runs the outer loop for each estimator
and returns a result object the CLI prints and ``munet.es.plots`` draws.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from munet.es.estimators import make_estimator
from munet.es.outer import MetaOptimizer, MetaTrainer
from munet.es.problems.digits_lr import DigitsLearningRate, EpisodeMetrics
from munet.es.problems.influence_balancing import InfluenceBalancing
from munet.es.sharded import MULTI_DEVICE_ESTIMATORS, make_multi_device_estimator
from munet.progress import bars_enabled, format_duration, progress_bar, write_line

Log = Callable[[str], None]


@dataclass(frozen=True)
class EstimatorRun:
    """One estimator's outer-loop run: its final theta and per-step history."""

    label: str
    estimator: str
    theta: list[float]
    history: list[dict[str, Any]]
    final_metric: float


@dataclass(frozen=True)
class InfluenceResult:
    true_optimum: float
    runs: list[EstimatorRun]


@dataclass(frozen=True)
class LearningRateResult:
    episode_length: int
    grid: list[tuple[float, EpisodeMetrics]]
    runs: list[EstimatorRun]
    run_metrics: list[EpisodeMetrics] = field(default_factory=list)


def _build(
    name: str,
    problem,
    options: dict[str, Any],
    devices: Sequence[str] | None,
    replicate_data: bool,
):
    """The estimator ``name``; ``pes`` and ``tes`` spread over ``devices`` when given (the
    others have no multi-device form and run on one device)."""
    if devices is None or name not in MULTI_DEVICE_ESTIMATORS:
        return make_estimator(name, problem, **options)
    options = dict(options)
    num_particles = options.pop("num_particles")
    return make_multi_device_estimator(
        name, problem, devices, num_particles, replicate_data=replicate_data, **options
    )


def _close(estimator) -> None:
    close = getattr(estimator, "close", None)
    if close is not None:
        close()  # a multi-device estimator's worker threads


class _Progress:
    """An overall bar of the outer steps of every estimator (ETA included), and one line per
    finished estimator, so a run without ``log_every`` still says how far it is."""

    def __init__(self, total_steps: int, desc: str, progress: bool | None, log: Log) -> None:
        self.bar = progress_bar(total_steps, desc, "step", bars_enabled(progress))
        self.log = lambda line: write_line(log, line)

    def run(self, trainer: MetaTrainer, steps: int, log_every: int, name: str) -> None:
        start = time.perf_counter()
        self.bar.set_postfix_str(name)
        trainer.run(steps, log_every=log_every, log=self.log, on_step=lambda _: self.bar.update(1))
        self.log(f"[{name}] {steps} outer steps in {format_duration(time.perf_counter() - start)}")

    def close(self) -> None:
        self.bar.close()


def _train(
    trainer: MetaTrainer,
    steps: int,
    progress: _Progress,
    log_every: int,
    checkpoint: Path | None,
) -> MetaTrainer:
    """Runs ``trainer`` up to ``steps`` total steps, saving to ``checkpoint`` at the end."""
    remaining = max(steps - trainer.step, 0)
    progress.run(trainer, remaining, log_every, trainer.estimator.name)
    if checkpoint is not None:
        trainer.save(checkpoint)
    return trainer


def _trainer(
    estimator,
    optimizer: MetaOptimizer,
    seed: int,
    checkpoint: Path | None,
    log: Log,
) -> MetaTrainer:
    if checkpoint is not None and (checkpoint / "meta.json").exists():
        trainer = MetaTrainer.restore(checkpoint, estimator, optimizer)
        log(f"[{estimator.name}] resumed from {checkpoint} at step {trainer.step}")
        return trainer
    return MetaTrainer(estimator, optimizer, seed=seed)


def run_influence_balancing(
    estimators: Sequence[str] = ("tbptt", "tes", "pes"),
    steps: int = 3000,
    truncation_length: int = 1,
    num_particles: int = 1000,
    std: float = 0.1,
    meta_lr: float = 1e-4,
    seed: int = 3,
    log: Log = print,
    log_every: int = 0,
    devices: Sequence[str] | None = None,
    replicate_data: bool = False,
    progress: bool | None = None,
) -> InfluenceResult:
    """The PES paper's influence-balancing experiment (defaults from its script: K=1,
    N=1000 particles, std 0.1, SGD with lr 1e-4, 3000 steps, theta from 0.5).

    ``final_metric`` of each run is the loss after a 500-step unroll from the initial state
    at the final theta (the paper's "long unroll loss"). With ``devices``, ``pes`` and ``tes``
    split their ``num_particles`` evenly over them (``MultiDeviceTruncatedPES``/``ES``).
    ``progress``: an overall bar of the outer steps (None: in a terminal or a notebook).
    """
    problem = InfluenceBalancing()
    runs = []
    bar = _Progress(steps * len(estimators), "es influence", progress, log)
    for name in estimators:
        options: dict[str, Any] = {"truncation_length": truncation_length}
        if name == "tbptt":
            options["num_particles"] = 1  # deterministic problem: one unroll is exact
        else:
            options.update(num_particles=num_particles, std=std)
        if name == "full_es":
            options = {"num_particles": num_particles, "std": std, "horizon": 100}
        estimator = _build(name, problem, options, devices, replicate_data)
        trainer = MetaTrainer(estimator, MetaOptimizer("sgd", lr=meta_lr), seed=seed)
        bar.run(trainer, steps, log_every, name)
        _close(estimator)
        label = name if name == "full_es" else f"{name} (K={truncation_length})"
        runs.append(
            EstimatorRun(
                label=label,
                estimator=name,
                theta=trainer.theta.tolist(),
                history=trainer.history,
                final_metric=problem.long_unroll_loss(trainer.theta),
            )
        )
    bar.close()
    return InfluenceResult(true_optimum=problem.true_optimum(), runs=runs)


def default_lr_grid() -> list[float]:
    """log10 learning rates from 1e-3 to 10^0.5 in quarter decades."""
    return [round(-3.0 + 0.25 * index, 2) for index in range(15)]


def run_learning_rate(
    estimators: Sequence[str] = ("pes", "tes"),
    steps: int = 300,
    episode_length: int = 100,
    truncation_length: int = 10,
    num_particles: int = 16,
    std: float = 0.1,
    meta_lr: float = 0.05,
    num_knots: int = 1,
    initial_log10_lr: float = -2.0,
    grid: Sequence[float] | None = None,
    eval_runs: int = 16,
    seed: int = 0,
    checkpoint_dir: str | Path | None = None,
    log: Log = print,
    log_every: int = 0,
    devices: Sequence[str] | None = None,
    replicate_data: bool = False,
    progress: bool | None = None,
) -> LearningRateResult:
    """Learns a log10 learning rate (schedule) for SGD on digits and compares it with a grid.

    Every fixed rate of ``grid`` and every estimator's final theta is scored by
    ``DigitsLearningRate.episode_metrics`` over ``eval_runs`` fresh networks (seed 12345, so all
    are scored on the same networks and batches). With ``checkpoint_dir`` each estimator's run
    is saved to ``checkpoint_dir/NAME`` and resumed from there when run again (on any device
    list: the saved state does not depend on it). With ``devices``, ``pes`` and ``tes`` split
    their particles evenly over them; ``replicate_data`` gives every device the same batches.
    """
    problem = DigitsLearningRate(
        episode_length=episode_length, num_knots=num_knots, initial_log10_lr=initial_log10_lr
    )
    grid = default_lr_grid() if grid is None else list(grid)
    scoring_seed = 12345
    grid_results = []
    for log10_lr in grid:
        theta = torch.full((num_knots,), float(log10_lr))
        grid_results.append((log10_lr, problem.episode_metrics(theta, eval_runs, scoring_seed)))
    runs, run_metrics = [], []
    def budget_of(name: str) -> int:
        # Equal inner-step budgets: a full-episode estimate costs episode/K truncations.
        return steps if name != "full_es" else max(1, steps * truncation_length // episode_length)

    bar = _Progress(sum(budget_of(n) for n in estimators), "es lr", progress, log)
    for name in estimators:
        options: dict[str, Any] = {"num_particles": num_particles}
        if name != "tbptt":
            options["std"] = std
        if name != "full_es":
            # Spread particles over the whole episode, as the reference's offsets do.
            options.update(
                truncation_length=truncation_length, random_initial_offset=episode_length
            )
        estimator = _build(name, problem, options, devices, replicate_data)
        checkpoint = None if checkpoint_dir is None else Path(checkpoint_dir) / name
        trainer = _trainer(estimator, MetaOptimizer("adam", lr=meta_lr), seed, checkpoint, log)
        _train(trainer, budget_of(name), bar, log_every, checkpoint)
        _close(estimator)
        metrics = problem.episode_metrics(trainer.theta, eval_runs, scoring_seed)
        run_metrics.append(metrics)
        label = name if name == "full_es" else f"{name} (K={truncation_length})"
        runs.append(
            EstimatorRun(
                label=label,
                estimator=name,
                theta=trainer.theta.tolist(),
                history=trainer.history,
                final_metric=metrics.mean_train_loss,
            )
        )
    bar.close()
    return LearningRateResult(
        episode_length=episode_length, grid=grid_results, runs=runs, run_metrics=run_metrics
    )
