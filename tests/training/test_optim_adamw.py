"""munet's AdamW option (``opt_optimizer``/``opt_weight_decay``) beside the seed's SGD."""

import random

import pytest
import torch

from munet.training.optim import (
    DEFAULT_OPTIMIZER,
    DEFAULT_WEIGHT_DECAY,
    OPTIMIZERS,
    AdamW,
    PathOptimizer,
    decays,
    make_lr_schedule,
    make_optimizer,
)

HPARAMS = {
    "opt_lr": 0.02,
    "opt_lr_schedule": "constant",  # 0.5 * opt_lr at every step
    "opt_lr_warmup_ratio": 0.0,
    "opt_momentum": 0.8,
    "opt_nesterov": True,
}
LR = 0.5 * HPARAMS["opt_lr"]


def named_params(seed=0):
    """A matrix, a bias, a norm scale and the ViT's tokens, by flat name."""
    g = torch.Generator().manual_seed(seed)
    shapes = {
        "encoderblock_0.mlp.fc1.weight": (5, 3),
        "encoderblock_0.mlp.fc1.bias": (5,),
        "encoder_norm.weight": (3,),
        "cls.token": (1, 1, 3),
        "posembed_input.pos_embedding": (1, 4, 3),
        "head.weight": (2, 3),
    }
    return {
        name: torch.randn(shape, generator=g).requires_grad_(True) for name, shape in shapes.items()
    }


def grads_for(params, step, scale):
    """Gradients of step ``step``, with global norm ``scale`` (exactly, before rounding)."""
    g = torch.Generator().manual_seed(1000 + step)
    grads = [torch.randn(p.shape, generator=g) for p in params]
    norm = torch.linalg.vector_norm(torch.stack([x.norm() for x in grads]))
    return [x * (scale / norm) for x in grads]


def reference(named, weight_decay, lrs, scale, clip=False):
    """torch.optim.AdamW (and torch's clipping) on copies of ``named``, leaving the same
    tensors undecayed; the lr of each step from ``lrs``."""
    copies = {n: p.detach().clone().requires_grad_(True) for n, p in named.items()}
    decayed = [p for n, p in copies.items() if decays(n, p)]
    others = [p for n, p in copies.items() if not decays(n, p)]
    torch_opt = torch.optim.AdamW(
        [
            {"params": decayed, "weight_decay": weight_decay},
            {"params": others, "weight_decay": 0.0},
        ],
        lr=lrs[0],
        betas=(0.9, 0.999),
        eps=1e-8,
    )
    params = list(copies.values())
    for step, lr in enumerate(lrs):
        for group in torch_opt.param_groups:
            group["lr"] = lr
        for p, g in zip(params, grads_for(params, step, scale), strict=True):
            p.grad = g
        if clip:
            torch.nn.utils.clip_grad_norm_(params, 1.0)
        torch_opt.step()
    return copies


def run_munet(named, hparams, steps, scale, between=5):
    opt = make_optimizer(named, hparams, between, 1)
    params = list(named.values())
    norms = []
    for step in range(steps):
        opt.zero_grad()
        for p, g in zip(params, grads_for(params, step, scale), strict=True):
            p.grad = g
        norms.append(float(opt.step()))
    return opt, norms


@pytest.mark.parametrize("weight_decay", [0.0, 0.1])
@pytest.mark.parametrize("steps", [1, 6])
def test_adamw_equals_torch_adamw_when_clipping_is_inactive(weight_decay, steps):
    named = named_params()
    expected = reference(named, weight_decay, [LR] * steps, scale=0.5)
    hparams = {**HPARAMS, "opt_optimizer": "adamw", "opt_weight_decay": weight_decay}
    opt, norms = run_munet(named, hparams, steps, scale=0.5)
    assert isinstance(opt, AdamW)
    assert norms == pytest.approx([0.5] * steps)
    for name, param in named.items():
        torch.testing.assert_close(param.detach(), expected[name].detach(), rtol=0, atol=0)
    assert opt.step_count == steps


def test_adamw_clips_at_global_norm_one_before_the_update():
    named = named_params(1)
    expected = reference(named, 0.1, [LR] * 4, scale=7.0, clip=True)
    hparams = {**HPARAMS, "opt_optimizer": "adamw", "opt_weight_decay": 0.1}
    _, norms = run_munet(named, hparams, 4, scale=7.0)
    assert norms == pytest.approx([7.0] * 4)  # the norm before clipping
    for name, param in named.items():
        # torch divides by norm + 1e-6 (optax, and munet, by the norm): a relative 1e-7.
        torch.testing.assert_close(param.detach(), expected[name].detach())


def test_the_weight_decay_skips_vectors_and_the_vit_tokens():
    named = named_params()
    assert [n for n, p in named.items() if decays(n, p)] == [
        "encoderblock_0.mlp.fc1.weight",
        "head.weight",
    ]
    # Without names only the shape is known: every tensor of 2 or more dims decays.
    opt = make_optimizer(list(named.values()), {**HPARAMS, "opt_optimizer": "adamw"}, 5, 1)
    assert opt.decay == [True, False, False, True, True, True]
    # With zero gradients Adam moves nothing: what changes is the decay alone.
    named = named_params()
    before = {n: p.detach().clone() for n, p in named.items()}
    opt = make_optimizer(named, {**HPARAMS, "opt_optimizer": "adamw"}, 5, 1)
    assert opt.weight_decay == DEFAULT_WEIGHT_DECAY == 0.05
    for p in named.values():
        p.grad = torch.zeros_like(p)
    opt.step()
    for name, param in named.items():
        factor = 1 - LR * 0.05 if decays(name, param) else 1.0
        torch.testing.assert_close(param.detach(), before[name] * factor, rtol=0, atol=0)


def test_adamw_follows_the_lr_schedule():
    hparams = {
        **HPARAMS,
        "opt_lr_schedule": "cosine",
        "opt_lr_warmup_ratio": 0.2,
        "opt_optimizer": "adamw",
        "opt_weight_decay": 0.3,
    }
    schedule = make_lr_schedule(0.02, "cosine", 0.2, 5, 1)
    lrs = [schedule(step) for step in range(5)]
    assert len(set(lrs)) == 5  # warmup then decay: a different lr at each step
    named = named_params(2)
    expected = reference(named, 0.3, lrs, scale=0.5)
    run_munet(named, hparams, 5, scale=0.5, between=5)
    for name, param in named.items():
        torch.testing.assert_close(param.detach(), expected[name].detach(), rtol=0, atol=0)
    # The same steps at a constant lr end elsewhere.
    constant = reference(named_params(2), 0.3, [0.02] * 5, scale=0.5)
    assert not torch.equal(constant["head.weight"], named["head.weight"])


def test_adamw_state_is_float32_and_a_non_finite_gradient_is_reported():
    named = named_params()
    opt, _ = run_munet(named, {**HPARAMS, "opt_optimizer": "adamw"}, 2, scale=0.5)
    assert all(t.dtype == torch.float32 for t in opt._exp_avg + opt._exp_avg_sq)
    params = list(named.values())
    for p in params:
        p.grad = torch.zeros_like(p)
    params[0].grad[0, 0] = float("nan")
    assert not torch.isfinite(opt.step())


def sgd_trajectory(hparams, steps=3):
    named = named_params(3)
    opt, _ = run_munet(named, hparams, steps, scale=3.0)
    return opt, {n: p.detach() for n, p in named.items()}


def test_the_default_is_the_seeds_sgd_unchanged():
    default, expected = sgd_trajectory(HPARAMS)
    assert type(default) is PathOptimizer
    # Naming it, or giving a weight decay (AdamW's alone), changes nothing.
    for extra in ({"opt_optimizer": "sgd"}, {"opt_optimizer": "sgd", "opt_weight_decay": 0.5}):
        opt, trajectory = sgd_trajectory({**HPARAMS, **extra})
        assert type(opt) is PathOptimizer
        for name, param in trajectory.items():
            assert torch.equal(param, expected[name])
    # The seed's update by hand: Nesterov SGD on the clipped gradients at lr 0.01.
    named = named_params(3)
    params = list(named.values())
    start = [p.detach().clone() for p in params]
    trace = None
    for step in range(3):
        grads = [g / 3.0 for g in grads_for(params, step, 3.0)]  # clipped to norm 1
        trace = grads if trace is None else [g + 0.8 * t for g, t in zip(grads, trace, strict=True)]
        start = [p - LR * (g + 0.8 * t) for p, g, t in zip(start, grads, trace, strict=True)]
    for param, value in zip(expected.values(), start, strict=True):
        torch.testing.assert_close(param, value)


def test_an_unknown_optimizer_or_a_negative_decay_is_refused():
    with pytest.raises(ValueError, match=r"unknown optimizer 'adam'; known: sgd, adamw"):
        make_optimizer([], {**HPARAMS, "opt_optimizer": "adam"}, 5, 1)
    with pytest.raises(ValueError, match=r"weight decay -0.1: expected a finite number >= 0"):
        make_optimizer([], {**HPARAMS, "opt_optimizer": "adamw", "opt_weight_decay": -0.1}, 5, 1)


def test_the_config_rules_know_the_optimizers_and_refuse_bad_values():
    from munet.config import ConfigError, get_preset
    from munet.config.rules import OPTIMIZERS as RULE_OPTIMIZERS
    from munet.config.rules import OPTIONAL_HPARAMS

    # The torch-free copies stay in step with munet.training.optim.
    assert RULE_OPTIMIZERS == tuple(OPTIMIZERS)
    assert OPTIONAL_HPARAMS == {
        "opt_optimizer": DEFAULT_OPTIMIZER,
        "opt_weight_decay": DEFAULT_WEIGHT_DECAY,
    }
    cases = [
        ({"opt_optimizer": "adam"}, {}, r"hparams_defaults.opt_optimizer='adam': expected one of "
         r"'sgd', 'adamw'"),
        ({"opt_weight_decay": -0.01}, {},
         r"hparams_defaults.opt_weight_decay=-0.01: expected a finite number in \[0, inf\)"),
        ({"opt_optimizer": "sgd"}, {"opt_optimizer": ["sgd", "lion"]},
         r"hparams_mutation_ranges.opt_optimizer entry='lion': expected one of 'sgd', 'adamw'"),
        ({"opt_weight_decay": 0.0}, {"opt_weight_decay": [0.0, -1.0]},
         r"hparams_mutation_ranges.opt_weight_decay entry=-1.0"),
    ]  # fmt: skip
    for defaults, ranges, message in cases:
        config = get_preset("VitCpu")
        config.hparams_defaults.update(defaults)
        config.hparams_mutation_ranges.update(ranges)
        with pytest.raises(ConfigError, match=message):
            config.validate()


def test_the_seeds_presets_keep_sgd():
    from munet.config import get_preset

    for name in ("Vit", "VitB", "VitT3", "VitCpu"):
        config = get_preset(name)
        assert "opt_optimizer" not in config.hparams_defaults
        assert "opt_optimizer" not in config.hparams_mutation_ranges


def adamw_config():
    from munet.config import apply_overrides, get_preset

    return apply_overrides(
        get_preset("VitCpu"),
        [
            'hparams_mutation_ranges.opt_optimizer=["sgd", "adamw"]',
            "opt_optimizer=adamw",
            "hparams_mutation_ranges.opt_weight_decay=[0.0, 0.01, 0.05, 0.1]",
            "hparams_defaults.opt_weight_decay=0.05",
        ],
    )


def test_set_adds_the_optimizer_hparams_and_they_mutate():
    from munet.agents.mutation import MutationPolicy, mutate_hparams

    config = adamw_config()
    assert config.hparams_defaults["opt_optimizer"] == "adamw"
    assert config.hparams_defaults["opt_weight_decay"] == 0.05
    assert config.hparams_mutation_ranges["opt_optimizer"] == ["sgd", "adamw"]
    policy = MutationPolicy.from_config(config)
    seen = {"adamw": set(), "sgd": set()}
    for start in ("adamw", "sgd"):
        for seed in range(30):
            hparams = {**config.hparams_defaults, "_mu_": 0.3, "opt_optimizer": start}
            new, decisions = mutate_hparams(hparams, policy, random.Random(seed))
            seen[start].add(new["opt_optimizer"])
            (decision,) = [d for d in decisions if d.name == "hp:opt_optimizer"]
            assert decision.before == start and decision.after == new["opt_optimizer"]
    assert seen == {"adamw": {"sgd", "adamw"}, "sgd": {"sgd", "adamw"}}


def test_an_agent_trains_its_paths_with_adamw(tmp_path, monkeypatch):
    from munet.agents import path_training
    from munet.agents.root import create_root_model
    from munet.agents.singlepath import SinglepathAgent
    from munet.config import apply_overrides
    from tests.agents.conftest import TINY_OVERRIDES

    config = apply_overrides(adamw_config(), [*TINY_OVERRIDES, "_mu_=0.02"])
    config.hparams_mutation_ranges["_mu_"] = [0.02]
    config.validate()
    create_root_model(config, tmp_path / "state", "random_init")
    made = []
    original = path_training.make_optimizer

    def spy(params, hparams, *args):
        optimizer = original(params, hparams, *args)
        made.append((dict(params), optimizer))
        return optimizer

    monkeypatch.setattr(path_training, "make_optimizer", spy)
    agent = SinglepathAgent(
        config, "digits", tmp_path / "state", progress=False, echo=lambda *_: None
    )
    report = agent.run(1)
    assert report is not None and made
    adamw = [(params, opt) for params, opt in made if isinstance(opt, AdamW)]
    assert adamw  # at _mu_ 0.02 the children keep the root's adamw, mostly
    for params, optimizer in adamw:
        assert optimizer.step_count > 0
        flags = dict(zip(params, optimizer.decay, strict=True))
        for name, flag in flags.items():
            component = name.split(".")[0]
            if component in ("cls", "posembed_input") or params[name].ndim == 1:
                assert not flag, name
            else:
                assert flag, name
