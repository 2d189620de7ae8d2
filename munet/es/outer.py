"""The outer loop: a meta-optimizer stepping theta along an estimator's gradients, resumable.

``MetaOptimizer`` is SGD (optionally with momentum) or Adam written as pure functions on
tensors, so its state is a plain dict of tensors that saves to safetensors. ``MetaTrainer``
holds theta, the optimizer state, the estimator state and a history of per-step records, and
saves/restores all of them, so a stopped run continues exactly as an uninterrupted one.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from munet.es.estimators import GradientEstimator
from munet.es.problem import check_theta
from munet.es.state_io import load_state, save_state

META_OPTIMIZERS = ("sgd", "adam")


@dataclass(frozen=True)
class MetaOptimizer:
    """SGD/Adam over the meta-parameters.

    Attributes:
        name: ``"sgd"`` or ``"adam"``.
        lr: step size.
        momentum: SGD momentum (heavy ball); ignored by Adam.
        beta1, beta2, eps: Adam's constants (defaults as in Kingma & Ba).
    """

    name: str = "adam"
    lr: float = 1e-2
    momentum: float = 0.0
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8

    def __post_init__(self) -> None:
        if self.name not in META_OPTIMIZERS:
            raise ValueError(
                f"unknown meta-optimizer {self.name!r}; known: {', '.join(META_OPTIMIZERS)}"
            )
        if not self.lr > 0:
            raise ValueError(f"meta-optimizer lr must be > 0, got {self.lr!r}")
        if not 0 <= self.momentum < 1:
            raise ValueError(f"momentum must be in [0, 1), got {self.momentum!r}")

    def init(self, theta: torch.Tensor) -> dict[str, torch.Tensor]:
        """The optimizer state for ``theta``: tensors only, so it saves to safetensors."""
        zeros = torch.zeros_like(theta)
        if self.name == "sgd":
            return {"velocity": zeros}
        return {"m": zeros, "v": zeros.clone(), "count": torch.zeros((), dtype=torch.int64)}

    def update(
        self, theta: torch.Tensor, grad: torch.Tensor, state: dict[str, torch.Tensor]
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """One descent step; returns the new theta and state (inputs are not modified)."""
        if self.name == "sgd":
            velocity = self.momentum * state["velocity"] + grad
            return theta - self.lr * velocity, {"velocity": velocity}
        count = state["count"] + 1
        m = self.beta1 * state["m"] + (1 - self.beta1) * grad
        v = self.beta2 * state["v"] + (1 - self.beta2) * grad * grad
        m_hat = m / (1 - self.beta1 ** int(count))
        v_hat = v / (1 - self.beta2 ** int(count))
        new_theta = theta - self.lr * m_hat / (v_hat.sqrt() + self.eps)
        return new_theta, {"m": m, "v": v, "count": count}


@dataclass(frozen=True)
class MetaTrainState:
    """Everything of the outer loop besides the estimator state."""

    theta: torch.Tensor
    optimizer_state: dict[str, torch.Tensor]
    step: int
    history: list
    config: dict


class MetaTrainer:
    """Runs ``estimator`` + ``optimizer`` on theta, logging and saving as it goes.

    Args:
        estimator: any ``GradientEstimator``.
        optimizer: the meta-optimizer.
        theta: starting meta-parameters (default: the problem's ``init_theta``).
        seed: seeds the estimator's noise.
        evaluate: optional ``theta -> float`` (e.g. the loss of a full unroll), recorded every
            ``eval_every`` steps as ``eval`` in the history.
        eval_every: steps between evaluations (0: never).
    """

    def __init__(
        self,
        estimator: GradientEstimator,
        optimizer: MetaOptimizer,
        theta: torch.Tensor | None = None,
        seed: int = 0,
        evaluate: Callable[[torch.Tensor], float] | None = None,
        eval_every: int = 0,
    ) -> None:
        self.estimator = estimator
        self.optimizer = optimizer
        self.evaluate = evaluate
        self.eval_every = eval_every
        theta = estimator.problem.init_theta() if theta is None else theta
        theta = theta.detach().to(torch.float32).clone()
        check_theta(estimator.problem, theta)
        self.theta = theta
        self.optimizer_state = optimizer.init(theta)
        self.estimator_state = estimator.init_state(theta, seed)
        self.step = 0
        self.history: list[dict[str, Any]] = []
        self.config = {"estimator": estimator.name, "optimizer": asdict(optimizer), "seed": seed}

    def train_step(self) -> dict[str, Any]:
        """One estimate and one meta-update; returns (and records) this step's record."""
        output, self.estimator_state = self.estimator.estimate(self.theta, self.estimator_state)
        grad = output.grad.detach()
        record: dict[str, Any] = {
            "step": self.step + 1,
            "loss": float(output.loss),
            "grad_norm": float(grad.norm()),
        }
        if torch.isfinite(grad).all():
            self.theta, self.optimizer_state = self.optimizer.update(
                self.theta, grad, self.optimizer_state
            )
        else:
            # A diverged inner unroll must not poison theta; skip the update and say so.
            warnings.warn(
                f"non-finite gradient at step {self.step + 1}; update skipped", stacklevel=2
            )
            record["skipped"] = True
        self.step += 1
        record["theta"] = self.theta.tolist()
        if self.evaluate is not None and self.eval_every and self.step % self.eval_every == 0:
            record["eval"] = float(self.evaluate(self.theta))
        self.history.append(record)
        return record

    def run(
        self,
        num_steps: int,
        log_every: int = 0,
        log: Callable[[str], None] = print,
        on_step: Callable[[dict[str, Any]], None] | None = None,
    ) -> list[dict[str, Any]]:
        """Runs ``num_steps`` more steps; logs one line every ``log_every`` steps (0: silent)
        and calls ``on_step`` with each step's record (a progress bar).

        Returns:
            The records of the steps run by this call.
        """
        records = []
        for _ in range(num_steps):
            record = self.train_step()
            records.append(record)
            if log_every and record["step"] % log_every == 0:
                log(format_record(self.estimator.name, record))
            if on_step is not None:
                on_step(record)
        return records

    def save(self, directory: str | Path) -> None:
        """Writes the trainer to ``directory`` (meta.* and estimator.* files)."""
        directory = Path(directory)
        save_state(
            MetaTrainState(
                theta=self.theta,
                optimizer_state=self.optimizer_state,
                step=self.step,
                history=self.history,
                config=self.config,
            ),
            directory / "meta",
        )
        self.estimator.save_state(self.estimator_state, directory / "estimator")

    @classmethod
    def restore(
        cls,
        directory: str | Path,
        estimator: GradientEstimator,
        optimizer: MetaOptimizer,
        evaluate: Callable[[torch.Tensor], float] | None = None,
        eval_every: int = 0,
    ) -> MetaTrainer:
        """Loads a trainer saved by ``save``; estimator and optimizer must match the saved run.

        Raises:
            FileNotFoundError: when nothing was saved there.
            ValueError: when the saved run used another estimator or optimizer.
        """
        directory = Path(directory)
        meta = load_state(MetaTrainState, directory / "meta")
        if meta.config["estimator"] != estimator.name:
            raise ValueError(
                f"{directory} was saved with estimator {meta.config['estimator']!r}, "
                f"not {estimator.name!r}"
            )
        if meta.config["optimizer"] != asdict(optimizer):
            raise ValueError(
                f"{directory} was saved with optimizer {meta.config['optimizer']}, "
                f"not {asdict(optimizer)}"
            )
        trainer = cls.__new__(cls)
        trainer.estimator = estimator
        trainer.optimizer = optimizer
        trainer.evaluate = evaluate
        trainer.eval_every = eval_every
        trainer.theta = meta.theta
        trainer.optimizer_state = meta.optimizer_state
        trainer.estimator_state = estimator.load_state(directory / "estimator")
        trainer.step = meta.step
        trainer.history = list(meta.history)
        trainer.config = meta.config
        return trainer


def format_record(estimator_name: str, record: dict[str, Any]) -> str:
    """One readable log line for a history record."""
    theta = ", ".join(f"{value:+.4f}" for value in record["theta"])
    line = (
        f"[{estimator_name}] step {record['step']:5d}  loss {record['loss']:.5g}  "
        f"|grad| {record['grad_norm']:.3g}  theta [{theta}]"
    )
    if "eval" in record and math.isfinite(record["eval"]):
        line += f"  eval {record['eval']:.5g}"
    if record.get("skipped"):
        line += "  (update skipped: non-finite gradient)"
    return line
