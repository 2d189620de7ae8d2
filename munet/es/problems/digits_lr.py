"""Learning a learning-rate schedule for a tiny MLP trained by SGD on scikit-learn's digits.

Each particle trains its own 64-H-10 tanh MLP with plain SGD for ``episode_length`` steps on
random minibatches of the bundled 8x8 digits (1797 images; a fixed 80/20 train/validation
split). theta holds log10 learning rates at ``num_knots`` evenly spaced points of the episode,
interpolated linearly in log space (one knot: a constant rate). The meta-loss is the training
loss averaged over the episode (learned_optimization's default: the inner loss of every step),
so it rewards fast progress and punishes rates that diverge.

All particles run as batched tensors: weights are (P, ...) and matmuls are batched, and the
gradient of the inner loss is written out by hand, which keeps the inner step an ordinary
differentiable function of theta for truncated backprop.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from munet.es.problem import InnerProblem, InnerState

NUM_FEATURES = 64
NUM_CLASSES = 10
# A diverging network is scored as this loss (about 4x a uniform guess) rather than NaN/inf,
# so one bad perturbation cannot poison an ES average.
LOSS_CAP = 4.0 * math.log(NUM_CLASSES)


def load_digits_split(
    seed: int = 0,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Digits scaled to [0, 1], split 80/20 by a fixed permutation: (x_train, y_train, x_val,
    y_val)."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    features = torch.tensor(digits.data, dtype=torch.float32) / 16.0  # (1797, 64)
    labels = torch.tensor(digits.target, dtype=torch.int64)
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(seed))
    num_train = int(0.8 * len(labels))
    train, val = order[:num_train], order[num_train:]
    return features[train], labels[train], features[val], labels[val]


@dataclass(frozen=True)
class EpisodeMetrics:
    """How a fixed theta does over whole episodes, averaged over independent runs."""

    mean_train_loss: float
    final_val_loss: float
    final_val_accuracy: float


class DigitsLearningRate(InnerProblem):
    """SGD on digits with a learned (log10) learning-rate schedule.

    Args:
        episode_length: SGD steps per episode.
        batch_size: examples per SGD step.
        hidden: hidden units of the MLP.
        num_knots: log10-lr values in theta (1: a constant rate).
        initial_log10_lr: every knot's starting value.
    """

    def __init__(
        self,
        episode_length: int = 100,
        batch_size: int = 32,
        hidden: int = 32,
        num_knots: int = 1,
        initial_log10_lr: float = -2.0,
    ) -> None:
        for name, value in (
            ("episode_length", episode_length),
            ("batch_size", batch_size),
            ("hidden", hidden),
            ("num_knots", num_knots),
        ):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        self.episode_length = episode_length
        self.batch_size = batch_size
        self.hidden = hidden
        self.num_knots = num_knots
        self.initial_log10_lr = float(initial_log10_lr)
        self.x_train, self.y_train, self.x_val, self.y_val = load_digits_split()

    def init_theta(self) -> torch.Tensor:
        return torch.full((self.num_knots,), self.initial_log10_lr)

    def init_state(self, num_particles: int, generator: torch.Generator) -> InnerState:
        # LeCun-normal weights, zero biases.
        w1 = torch.randn(num_particles, NUM_FEATURES, self.hidden, generator=generator)
        w2 = torch.randn(num_particles, self.hidden, NUM_CLASSES, generator=generator)
        return {
            "w1": w1 / math.sqrt(NUM_FEATURES),
            "b1": torch.zeros(num_particles, self.hidden),
            "w2": w2 / math.sqrt(self.hidden),
            "b2": torch.zeros(num_particles, NUM_CLASSES),
        }

    def sample_batch(self, num_particles: int, generator: torch.Generator):
        index = torch.randint(
            0, len(self.y_train), (num_particles, self.batch_size), generator=generator
        )
        return self.x_train[index], self.y_train[index]  # (P, B, 64), (P, B)

    def log10_lr(self, theta: torch.Tensor, inner_step: torch.Tensor) -> torch.Tensor:
        """Each particle's log10 learning rate at its step, shape (P,)."""
        if self.num_knots == 1:
            return theta[:, 0]
        progress = inner_step.to(theta.dtype) / max(self.episode_length - 1, 1)
        position = progress.clamp(0, 1) * (self.num_knots - 1)  # (P,)
        left = position.floor().long().clamp(max=self.num_knots - 2)
        weight = position - left.to(theta.dtype)
        rows = torch.arange(theta.shape[0], device=theta.device)
        return (1 - weight) * theta[rows, left] + weight * theta[rows, left + 1]

    def forward(self, state: InnerState, x: torch.Tensor):
        """Hidden activations (P, B, H) and logits (P, B, 10)."""
        hidden = torch.tanh(torch.baddbmm(state["b1"][:, None, :], x, state["w1"]))
        logits = torch.baddbmm(state["b2"][:, None, :], hidden, state["w2"])
        return hidden, logits

    def loss_and_grads(
        self, state: InnerState, x: torch.Tensor, y: torch.Tensor
    ) -> tuple[torch.Tensor, InnerState]:
        """Mean cross-entropy per particle (P,) and its gradient w.r.t. every weight."""
        hidden, logits = self.forward(state, x)
        log_probs = torch.log_softmax(logits, dim=-1)  # (P, B, 10)
        loss = -log_probs.gather(-1, y[..., None]).squeeze(-1).mean(dim=-1)  # (P,)
        one_hot = torch.nn.functional.one_hot(y, NUM_CLASSES).to(logits.dtype)
        d_logits = (log_probs.exp() - one_hot) / x.shape[1]  # (P, B, 10)
        d_hidden = torch.bmm(d_logits, state["w2"].transpose(1, 2)) * (1 - hidden * hidden)
        grads = {
            "w1": torch.bmm(x.transpose(1, 2), d_hidden),  # (P, 64, H)
            "b1": d_hidden.sum(dim=1),
            "w2": torch.bmm(hidden.transpose(1, 2), d_logits),  # (P, H, 10)
            "b2": d_logits.sum(dim=1),
        }
        return loss, grads

    def step(
        self,
        state: InnerState,
        theta: torch.Tensor,
        batch,
        inner_step: torch.Tensor,
    ) -> tuple[InnerState, torch.Tensor]:
        x, y = batch
        loss, grads = self.loss_and_grads(state, x, y)
        lr = 10.0 ** self.log10_lr(theta, inner_step)  # (P,)
        new_state = {}
        for name, value in state.items():
            scale = lr.reshape((-1,) + (1,) * (value.dim() - 1))
            new_state[name] = value - scale * grads[name]
        loss = torch.nan_to_num(loss, nan=LOSS_CAP, posinf=LOSS_CAP).clamp(max=LOSS_CAP)
        return new_state, loss

    def validation(self, state: InnerState) -> tuple[torch.Tensor, torch.Tensor]:
        """Validation loss and accuracy per particle, each (P,)."""
        num_particles = state["w1"].shape[0]
        x = self.x_val.expand(num_particles, -1, -1)
        _, logits = self.forward(state, x)
        loss = torch.nn.functional.cross_entropy(
            logits.transpose(1, 2), self.y_val.expand(num_particles, -1), reduction="none"
        ).mean(dim=1)
        accuracy = (logits.argmax(dim=-1) == self.y_val).to(torch.float32).mean(dim=1)
        loss = torch.nan_to_num(loss, nan=LOSS_CAP, posinf=LOSS_CAP).clamp(max=LOSS_CAP)
        return loss, accuracy

    def episode_metrics(
        self, theta: torch.Tensor, num_runs: int = 16, seed: int = 0
    ) -> EpisodeMetrics:
        """Trains ``num_runs`` fresh networks for one episode with ``theta`` (no perturbation).

        ``mean_train_loss`` is the meta-loss the estimators minimise; the validation figures
        are taken after the last step.
        """
        generator = torch.Generator().manual_seed(seed)
        state = self.init_state(num_runs, generator)
        rows = theta.detach().reshape(1, -1).expand(num_runs, -1)
        losses = []
        with torch.no_grad():
            for index in range(self.episode_length):
                batch = self.sample_batch(num_runs, generator)
                state, loss = self.step(state, rows, batch, torch.full((num_runs,), index))
                losses.append(loss)
            val_loss, val_accuracy = self.validation(state)
        return EpisodeMetrics(
            mean_train_loss=float(torch.stack(losses).mean()),
            final_val_loss=float(val_loss.mean()),
            final_val_accuracy=float(val_accuracy.mean()),
        )
