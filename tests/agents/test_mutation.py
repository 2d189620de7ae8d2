import random

import pytest

from munet.agents.mutation import (
    MutationPolicy,
    do_mutate,
    incremental_mutation,
    mutate_hparams,
)
from munet.config import get_preset

from .scripted_rng import ScriptedRng

MU_RANGE = [0.02, 0.04, 0.06, 0.08, 0.1, 0.12, 0.14, 0.16, 0.18, 0.2, 0.22, 0.24, 0.26, 0.28, 0.3]


def policy(ranges=None, force=()):
    ranges = {"_mu_": MU_RANGE, "opt_lr": [0.01, 0.02, 0.05]} if ranges is None else ranges
    return MutationPolicy(ranges, mu_default=0.2, force_mutations=frozenset(force))


@pytest.mark.parametrize(
    "value, draw, expected",
    [(2, 0.49, 3), (2, 0.5, 1), (3, 0.1, 3), (1, 0.9, 1)],
)
def test_incremental_mutation_moves_one_step_clamped(value, draw, expected):
    rng = ScriptedRng([draw])
    assert incremental_mutation(value, [1, 2, 3], rng) == expected
    assert rng.exhausted()


def test_incremental_mutation_rejects_value_outside_range():
    with pytest.raises(ValueError, match=r"value 4 is not in its mutation range \[1, 2, 3\]"):
        incremental_mutation(4, [1, 2, 3], random.Random(0))


def test_forced_mutation_fires_without_drawing():
    rng = ScriptedRng([])
    decision = do_mutate(
        {"_mu_": 0.2}, "clone:encoder_norm", policy(force=["clone:encoder_norm"]), rng
    )
    assert decision.fired and decision.forced and decision.updates == {}
    assert decision.describe() == "clone:encoder_norm : fired (forced)"


@pytest.mark.parametrize(
    "hparams, draws, probability, fired",
    [
        # Tune the probability (0.1 < mu 0.2), upwards (0.3 < 0.5): 0.22 > 0.21 fires.
        ({"_mu_": 0.2}, [0.1, 0.3, 0.21], 0.22, True),
        # No tuning (0.5 >= 0.2); 0.2 > 0.1 fires.
        ({"_mu_": 0.2}, [0.5, 0.1], 0.2, True),
        # Strict comparison: 0.2 > 0.2 is false.
        ({"_mu_": 0.2}, [0.5, 0.2], 0.2, False),
        # Stored per-mutation probability at the low end, tuned down: clamped at 0.02.
        ({"_mu_": 0.3, "_mu_|hp:opt_lr": 0.02}, [0.0, 0.9, 0.01], 0.02, True),
        # No `_mu_` in hparams (shared ds hparams): the config default 0.2 is used.
        ({}, [0.19, 0.7, 0.15], 0.18, True),
    ],
)
def test_do_mutate_self_tunes_then_draws(hparams, draws, probability, fired):
    rng = ScriptedRng(draws)
    before = dict(hparams)
    decision = do_mutate(hparams, "hp:opt_lr", policy(), rng)
    assert rng.exhausted()
    assert decision.fired is fired
    assert decision.probability == probability
    assert decision.updates == {"_mu_|hp:opt_lr": probability}
    assert hparams == before  # Pure: the input is untouched.


def test_do_mutate_without_mu_range_only_draws_once_and_stores_nothing():
    rng = ScriptedRng([0.1])
    decision = do_mutate({"_mu_": 0.2}, "hp:opt_lr", policy({"opt_lr": [0.01, 0.02]}), rng)
    assert decision.fired and decision.updates == {}
    assert rng.exhausted()


def test_mutate_hparams_in_sorted_key_order_with_updated_mu():
    ranges = {"b": [1, 2, 3], "a": ["x", "y"], "_mu_": MU_RANGE}
    hparams = {"_mu_": 0.2, "b": 2}  # `a` has no value: skipped.
    rng = ScriptedRng(
        [
            0.9, 0.1, 0.2,  # hp:_mu_: no tuning, fires (0.2 > 0.1), moves up to 0.22.
            0.9, 0.21, 0.7,  # hp:b: p falls back to the new _mu_ 0.22 > 0.21, moves down.
        ]
    )  # fmt: skip
    new, decisions = mutate_hparams(hparams, policy(ranges), rng)
    assert rng.exhausted()
    assert new == {"_mu_": 0.22, "_mu_|hp:_mu_": 0.2, "b": 1, "_mu_|hp:b": 0.22}
    assert hparams == {"_mu_": 0.2, "b": 2}
    assert [d.describe() for d in decisions] == [
        "_mu_ : 0.2 --- (incremental, p=0.2) --> 0.22",
        "b : 2 --- (incremental, p=0.22) --> 1",
    ]


def test_kept_and_self_tuned_decisions_read_clearly():
    ranges = {"_mu_": MU_RANGE, "opt_lr": [0.01, 0.02]}
    # hp:_mu_: no tuning, not fired; hp:opt_lr: tuned up to 0.22, not fired.
    rng = ScriptedRng([0.9, 0.9, 0.1, 0.3, 0.9])
    new, decisions = mutate_hparams({"_mu_": 0.2, "opt_lr": 0.02}, policy(ranges), rng)
    assert rng.exhausted()
    assert [d.describe() for d in decisions] == [
        "_mu_ : 0.2 (kept, p=0.2)",
        "opt_lr : 0.02 (kept, p=0.2->0.22)",
    ]
    assert new == {"_mu_": 0.2, "opt_lr": 0.02, "_mu_|hp:_mu_": 0.2, "_mu_|hp:opt_lr": 0.22}


def test_seeded_rng_replays_the_same_mutations_on_a_real_preset():
    config = get_preset("VitT3")
    mutation_policy = MutationPolicy.from_config(config)
    runs = [
        mutate_hparams(config.hparams_defaults, mutation_policy, random.Random(7)) for _ in range(2)
    ]
    assert runs[0][0] == runs[1][0]
    new = runs[0][0]
    for key, values in config.hparams_mutation_ranges.items():
        assert new[key] in values
        old_index = values.index(config.hparams_defaults[key])
        assert abs(values.index(new[key]) - old_index) <= 1  # Incremental: one step at most.
        assert f"_mu_|hp:{key}" in new


def test_a_mutation_clamped_at_the_end_of_its_range_is_not_a_change():
    # Issue 17, item 9: `opt_lr : 1.0 --> 1.0` was logged (and recorded) as a change.
    ranges = {"opt_lr": [0.5, 1.0]}
    # One draw to fire (0.1 < p=0.2), one for the direction (0.2 < 0.5: up): clamped at 1.0.
    rng = ScriptedRng([0.1, 0.2])
    new, (decision,) = mutate_hparams({"_mu_": 0.2, "opt_lr": 1.0}, policy(ranges), rng)
    assert rng.exhausted()
    assert decision.fired and not decision.changed
    assert new["opt_lr"] == 1.0
    assert "-->" not in decision.describe() and "clamped" in decision.describe()
    # The same draws from the low end do move the value: a change.
    rng = ScriptedRng([0.1, 0.2])
    _, (moved,) = mutate_hparams({"_mu_": 0.2, "opt_lr": 0.5}, policy(ranges), rng)
    assert moved.changed and moved.describe() == "opt_lr : 0.5 --- (incremental, p=0.2) --> 1.0"
