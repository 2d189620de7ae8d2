import math

import pytest
import torch

from munet.training.optim import (
    clip_grad_global_norm_,
    make_lr_schedule,
    make_optimizer,
)


def schedule(name, lr=1.0, warmup=0.1, between=10, validations=2):
    return make_lr_schedule(lr, name, warmup, between, validations)


def test_constant_is_half_the_lr():
    s = schedule("constant", lr=0.02)
    assert [s(i) for i in (0, 7, 1000)] == [0.01, 0.01, 0.01]


def test_linear_warmup_then_decay_to_min_lr():
    s = schedule("linear")  # 20 steps, warmup int(0.1 * 20) = 2, min lr 0.001.
    assert s(0) == pytest.approx(0.001)
    assert s(1) == pytest.approx(0.5005)
    assert s(2) == pytest.approx(1.0)
    assert s(11) == pytest.approx(1.0 - 0.999 * 9 / 18)
    assert s(20) == pytest.approx(0.001)
    assert s(35) == pytest.approx(0.001)


def test_cosine_warmup_then_decay_to_zero():
    s = schedule("cosine")
    assert s(0) == pytest.approx(0.001)
    assert s(1) == pytest.approx(0.5005)
    assert s(2) == pytest.approx(1.0)
    assert s(5) == pytest.approx(0.5 * (1 + math.cos(math.pi * 3 / 18)))
    assert s(11) == pytest.approx(0.5)
    assert s(20) == pytest.approx(0.0, abs=1e-12)


def test_cosine_without_warmup_starts_at_peak():
    s = schedule("cosine", warmup=0.0, lr=0.02)
    assert s(0) == pytest.approx(0.02)
    assert s(10) == pytest.approx(0.01)


def test_restarts_repeat_the_cosine_per_validation_interval():
    s = schedule("restarts")  # Interval 10, warmup int(0.1 * 10) = 1.
    assert s(0) == pytest.approx(0.001)
    assert s(1) == pytest.approx(1.0)
    assert s(6) == pytest.approx(0.5 * (1 + math.cos(math.pi * 5 / 9)))
    assert s(10) == pytest.approx(0.001)
    assert s(11) == pytest.approx(1.0)
    assert s(19) == pytest.approx(0.5 * (1 + math.cos(math.pi * 8 / 9)))
    assert s(20) == pytest.approx(0.0, abs=1e-12)


def test_unknown_schedule_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown lr schedule 'cosin'; known: constant"):
        schedule("cosin")


def test_clip_to_global_norm_one():
    grads = [torch.tensor([3.0]), torch.tensor([4.0])]
    norm = clip_grad_global_norm_(grads)
    assert float(norm) == pytest.approx(5.0)
    assert [float(g) for g in grads] == pytest.approx([0.6, 0.8])
    small = [torch.tensor([0.3, 0.4])]
    assert float(clip_grad_global_norm_(small)) == pytest.approx(0.5)
    assert small[0].tolist() == pytest.approx([0.3, 0.4])


def run_two_steps(nesterov):
    param = torch.zeros(2, requires_grad=True)
    hparams = {
        "opt_lr": 0.2,
        "opt_lr_schedule": "constant",
        "opt_lr_warmup_ratio": 0.0,
        "opt_momentum": 0.5,
        "opt_nesterov": nesterov,
    }
    opt = make_optimizer([param], hparams, steps_between_validations=5, num_validations=1)
    trajectory = []
    for grad in ([3.0, 4.0], [0.3, 0.4]):
        opt.zero_grad()
        param.grad = torch.tensor(grad)
        opt.step()
        trajectory.append(param.detach().clone().tolist())
    return trajectory


def test_sgd_nesterov_matches_hand_computation():
    # Step 1: g clipped to (0.6, 0.8); trace = g; update = g + 0.5 * trace; lr 0.1.
    # Step 2: g = (0.3, 0.4); trace = g + 0.5 * (0.6, 0.8) = (0.6, 0.8); update = g + 0.5 * trace.
    first, second = run_two_steps(nesterov=True)
    assert first == pytest.approx([-0.09, -0.12])
    assert second == pytest.approx([-0.15, -0.20])


def test_sgd_momentum_matches_hand_computation():
    first, second = run_two_steps(nesterov=False)
    assert first == pytest.approx([-0.06, -0.08])
    assert second == pytest.approx([-0.12, -0.16])


def test_non_finite_gradient_is_reported_by_the_step():
    param = torch.ones(2, requires_grad=True)
    hparams = {
        "opt_lr": 0.1,
        "opt_lr_schedule": "cosine",
        "opt_lr_warmup_ratio": 0.0,
        "opt_momentum": 0.9,
        "opt_nesterov": True,
    }
    opt = make_optimizer([param], hparams, 4, 1)
    param.grad = torch.tensor([float("nan"), 1.0])
    assert not torch.isfinite(opt.step())


def test_the_pretrain_schedule_warms_up_from_peak_over_warmup_then_decays_to_zero():
    from munet.training.schedules import pretrain_schedule

    s = pretrain_schedule(1.0, 0.1, 20)  # warmup max(1, int(0.1 * 20)) = 2
    assert [s(0), s(1)] == [0.5, 1.0]
    assert s(2) == 1.0 and s(11) == pytest.approx(0.5) and s(20) == 0.0 and s(25) == 0.0
    assert pretrain_schedule(2.0, 0.0, 5)(0) == 2.0  # at least one warmup step
