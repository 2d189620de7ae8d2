"""Statistical checks against a closed-form gradient: PES is unbiased, truncated ES is not, on
one device and through the multi-device estimators."""

import pytest
import torch

import munet.es.truncated as truncated_module  # where TruncatedPES looks pes_gradient up
from munet.es import (
    ESGradient,
    LinearQuadratic,
    MultiDeviceTruncatedES,
    MultiDeviceTruncatedPES,
    TruncatedBackprop,
    TruncatedES,
    TruncatedPES,
    pes_gradient,
    unroll,
)

EPISODE = 8
TRUNCATION = 2
PARTICLES = 4000


def _summed_estimates(estimator, theta, num_truncations, seed=0):
    """Each particle's estimates summed over ``num_truncations`` truncations, (P, D)."""
    state = estimator.init_state(theta, seed)
    total = torch.zeros(estimator.num_particles, theta.shape[0])
    for _ in range(num_truncations):
        output, state = estimator.estimate(theta, state)
        total += output.per_particle_grad
    return total


def _z_scores(samples, truth):
    mean = samples.mean(dim=0)
    standard_error = samples.std(dim=0) / samples.shape[0] ** 0.5
    return (mean - truth) / standard_error


def test_closed_form_gradient_matches_autograd():
    problem = LinearQuadratic(episode_length=EPISODE)
    theta = torch.tensor([0.3, -0.2])
    weights = torch.full((EPISODE,), 1.0 / TRUNCATION)
    rows = theta.clone().reshape(1, -1).requires_grad_(True)
    result = unroll(
        problem,
        [problem.init_state(1, torch.Generator())],
        [rows],
        torch.zeros(1, dtype=torch.int64),
        torch.Generator(),
        EPISODE,
    )
    (autograd,) = torch.autograd.grad(result.losses[0].sum() / TRUNCATION, rows)
    torch.testing.assert_close(
        problem.episode_gradient(theta, weights), autograd[0], rtol=1e-5, atol=1e-5
    )


def test_pes_over_an_episode_matches_the_true_gradient():
    problem = LinearQuadratic(episode_length=EPISODE)
    theta = problem.init_theta()
    # The sum of one episode's truncation estimates targets sum_t L_t / K (losses are averaged
    # within a truncation).
    truth = problem.episode_gradient(theta, torch.full((EPISODE,), 1.0 / TRUNCATION))
    pes = TruncatedPES(problem, PARTICLES, truncation_length=TRUNCATION, std=0.05)
    samples = _summed_estimates(pes, theta, EPISODE // TRUNCATION)
    z = _z_scores(samples, truth)
    assert z.abs().max() < 4.5, f"PES mean {samples.mean(0)} vs truth {truth} (z={z})"


def test_truncated_es_and_backprop_are_biased_on_the_same_problem():
    problem = LinearQuadratic(episode_length=EPISODE)
    theta = problem.init_theta()
    truth = problem.episode_gradient(theta, torch.full((EPISODE,), 1.0 / TRUNCATION))
    tes = TruncatedES(problem, PARTICLES, truncation_length=TRUNCATION, std=0.05)
    samples = _summed_estimates(tes, theta, EPISODE // TRUNCATION)
    z = _z_scores(samples, truth)
    assert z.abs().min() > 20, f"truncated ES mean {samples.mean(0)} should miss {truth}"
    # Truncated backprop is deterministic here and equals truncated ES in expectation.
    tbptt = TruncatedBackprop(problem, 1, truncation_length=TRUNCATION)
    exact_truncated = _summed_estimates(tbptt, theta, EPISODE // TRUNCATION)[0]
    assert (exact_truncated - truth).abs().min() > 1.0
    assert _z_scores(samples, exact_truncated).abs().max() < 4.5


def _reference_window_gradient(problem, state, theta, num_steps, truncation_length):
    """d/dtheta of every observed step's loss / K over a window, by autograd through the
    whole window from the estimator's starting state (fresh states after resets carry no
    graph, exactly as an episode boundary should)."""
    rows = theta.detach().expand(state.inner_step.shape[0], -1).clone().requires_grad_(True)
    result = unroll(problem, [state.pos], [rows], state.inner_step, torch.Generator(), num_steps)
    (grad,) = torch.autograd.grad(result.losses[0].sum() / truncation_length, rows)
    return grad  # (P, D)


def test_pes_with_staggered_particles_and_episode_ends_inside_truncations():
    # Truncations of 3 steps over episodes of 7: most truncations straddle an episode end.
    problem = LinearQuadratic(episode_length=7)
    theta = torch.tensor([0.2, 0.1])
    for mode in ("counter", "burn_in"):
        pes = TruncatedPES(
            problem,
            PARTICLES,
            truncation_length=3,
            std=0.05,
            random_initial_offset=7,
            offset_mode=mode,
        )
        state = pes.init_state(theta, seed=1)
        num_truncations = 6
        truth = _reference_window_gradient(problem, state, theta, 3 * num_truncations, 3)
        samples = _summed_estimates(pes, theta, num_truncations, seed=1)
        z = _z_scores(samples - truth, torch.zeros(2))
        assert z.abs().max() < 4.5, f"{mode}: PES mean {samples.mean(0)} vs {truth.mean(0)}"


def _reference_blend_rule(pos, neg, done, eps, accumulator, std):
    """learned_optimization's boundary handling, restated: per step, the vector is eps once
    the episode has ended (at or before that step) and accumulator + eps before; the vectors
    are averaged over steps and scaled by the truncation-mean loss difference."""
    contrib = (pos - neg).mean(dim=0) / (2 * std**2)  # (P,)
    finished = torch.cumsum(done.to(torch.int64), dim=0) > 0  # (K, P)
    with_history = accumulator + eps
    vectors = torch.where(finished[:, :, None], eps[None], with_history[None]).mean(dim=0)
    per_particle = contrib[:, None] * vectors
    new_accumulator = torch.where(finished[-1][:, None], eps, with_history)
    return ESGradient(
        per_particle.mean(0), per_particle, new_accumulator, ((pos + neg) / 2).mean(), contrib
    )


def test_reference_blend_rule_is_biased_where_the_per_step_rule_is_not(monkeypatch):
    # Why pes_gradient weights losses per step at episode ends: the reference's blend
    # under-weights the history term when a truncation straddles an episode end.
    problem = LinearQuadratic(episode_length=7)
    theta = torch.tensor([0.2, 0.1])

    def worst_z(rule):
        monkeypatch.setattr(truncated_module, "pes_gradient", rule)
        pes = TruncatedPES(
            problem, 20000, 3, std=0.05, random_initial_offset=7, offset_mode="counter"
        )
        truth = _reference_window_gradient(problem, pes.init_state(theta, 1), theta, 18, 3)
        samples = _summed_estimates(pes, theta, 6, seed=1)
        return _z_scores(samples - truth, torch.zeros(2)).abs().max()

    assert worst_z(_reference_blend_rule) > 10
    assert worst_z(pes_gradient) < 4.5


class NoisyLinearQuadratic(LinearQuadratic):
    """The linear-quadratic bench with data: every step adds a noise batch to the state,
    s_{t+1} = decay * s_t + theta + n_t with n_t ~ N(0, 0.1^2 I) per particle. The loss stays
    quadratic and the noise enters linearly with mean zero, so the gradient of the expected
    episode loss is still ``episode_gradient``."""

    def sample_batch(self, num_particles, generator):
        return 0.1 * torch.randn(num_particles, self.target.shape[0], generator=generator)

    def step(self, state, theta, batch, inner_step):
        s = self.decay * state["s"] + theta + batch
        return {"s": s}, 0.5 * ((s - self.target) ** 2).sum(dim=1)


@pytest.mark.parametrize("replicate_data", [False, True], ids=["separate", "replicated"])
def test_multi_device_pes_with_data_matches_the_true_gradient(replicate_data):
    problem = NoisyLinearQuadratic(episode_length=EPISODE)
    theta = problem.init_theta()
    truth = problem.episode_gradient(theta, torch.full((EPISODE,), 1.0 / TRUNCATION))
    pes = MultiDeviceTruncatedPES(
        problem,
        ["cpu"] * 4,
        PARTICLES // 4,
        truncation_length=TRUNCATION,
        std=0.05,
        replicate_data=replicate_data,
    )
    samples = _summed_estimates(pes, theta, EPISODE // TRUNCATION)
    z = _z_scores(samples, truth)
    assert z.abs().max() < 4.5, f"PES mean {samples.mean(0)} vs truth {truth} (z={z})"
    # The same draws through truncated ES miss the truth, as on one device.
    tes = MultiDeviceTruncatedES(
        problem, ["cpu"] * 4, PARTICLES // 4, truncation_length=TRUNCATION, std=0.05
    )
    tes_z = _z_scores(_summed_estimates(tes, theta, EPISODE // TRUNCATION), truth)
    assert tes_z.abs().min() > 10


def test_multi_device_pes_with_staggered_particles_and_episode_ends():
    # The staggered single-device check above, with the particles on 4 shards.
    problem = LinearQuadratic(episode_length=7)
    theta = torch.tensor([0.2, 0.1])
    pes = MultiDeviceTruncatedPES(
        problem,
        ["cpu"] * 4,
        PARTICLES // 4,
        truncation_length=3,
        std=0.05,
        random_initial_offset=7,
        offset_mode="burn_in",
    )
    start = pes.gather(pes.init_state(theta, seed=1))
    truth = _reference_window_gradient(problem, start, theta, 18, 3)
    samples = _summed_estimates(pes, theta, 6, seed=1)
    z = _z_scores(samples - truth, torch.zeros(2))
    assert z.abs().max() < 4.5, f"PES mean {samples.mean(0)} vs {truth.mean(0)}"
