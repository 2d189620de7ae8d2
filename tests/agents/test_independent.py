import json
import math
import random

import pytest
import torch

from munet.agents import (
    AgentError,
    IndependentAgent,
    SinglepathAgent,
    default_hparams,
    random_hparams,
)
from munet.agents.root import root_agent_id
from munet.system import SystemStore


def quiet(*_):
    pass


def make_agent(config, state_dir, task="digits"):
    return IndependentAgent(config, task, state_dir, progress=False, echo=quiet)


def root_tensors(state_dir, config):
    loaded = SystemStore(str(state_dir)).load(root_agent_id(config, "random_init"), [])
    root = loaded.population.own_paths[0]
    return {c.key: {n: t.clone() for n, t in c.tensors.items()} for c in root.components}


def test_default_hparams_are_a_copy_of_the_presets(tiny_config):
    hparams = default_hparams(tiny_config)
    assert hparams == tiny_config.hparams_defaults
    hparams["opt_lr"] = 123.0
    assert tiny_config.hparams_defaults["opt_lr"] != 123.0


def test_random_hparams_draw_every_searched_hparam_from_its_range(tiny_config):
    ranges = tiny_config.hparams_mutation_ranges
    draws = [random_hparams(tiny_config, random.Random(seed)) for seed in range(20)]
    for hparams in draws:
        assert set(hparams) == set(tiny_config.hparams_defaults)
        assert hparams["_mu_"] == tiny_config.hparams_defaults["_mu_"]  # Not a training hparam.
        for key, values in ranges.items():
            assert hparams[key] in values
    # Uniform draws: over 20 seeds every searched key takes more than one value.
    for key in ranges:
        if key != "_mu_":
            assert len({repr(h[key]) for h in draws}) > 1, key
    assert random_hparams(tiny_config, random.Random(7)) == random_hparams(
        tiny_config, random.Random(7)
    )


def test_train_alone_trains_its_own_copy_and_leaves_the_root_untouched(tiny_config, state_dir):
    before = root_tensors(state_dir, tiny_config)
    agent = make_agent(tiny_config, state_dir)
    steps = 2 * agent.steps_between_validations
    path = agent.train_alone(default_hparams(tiny_config), steps)

    assert path.metrics["steps"] == steps
    assert len(json_evals(path)) == 2  # Validated after each interval.
    assert 0.0 <= path.metrics["test_quality"] <= 1.0
    assert path.metrics["quality"] == max(json_evals(path))
    assert path.parent is agent.root()
    # Every component is the agent's own trainable clone: nothing shared, nothing frozen.
    assert all(c.agent_id == agent.agent_id and c.is_trainable() for c in path.components)
    assert path.hparams["num_classes"] == agent.task.num_classes
    # Training changed the cloned root components...
    root_by_name = {c.name: c for c in agent.root().components}
    changed = [
        c.name
        for c in path.components
        if c.name in root_by_name
        and any(not torch.equal(t, root_by_name[c.name].tensors[n]) for n, t in c.tensors.items())
    ]
    assert "embedding" in changed and "encoderblock_0" in changed
    # ...not the root's, in memory or in the store, and nothing was committed.
    reloaded = root_tensors(state_dir, tiny_config)
    assert reloaded.keys() == before.keys()
    for key, tensors in reloaded.items():
        assert all(torch.equal(t, before[key][n]) for n, t in tensors.items())
    for component in agent.root().components:
        for name, tensor in component.tensors.items():
            assert torch.equal(tensor, before[component.key][name])
    assert SystemStore(str(state_dir)).agent_ids() == [root_agent_id(tiny_config, "random_init")]


def json_evals(path):
    return json.loads(path.metrics["evals"])


def test_train_alone_is_reproducible_and_trials_differ(tiny_config, state_dir):
    hparams = default_hparams(tiny_config)
    agent = make_agent(tiny_config, state_dir)
    steps = agent.steps_between_validations
    first = agent.train_alone(hparams, steps)
    again = make_agent(tiny_config, state_dir).train_alone(hparams, steps)
    other = agent.train_alone(hparams, steps, trial=1)
    assert json_evals(first) == json_evals(again)
    first_head, again_head, other_head = (
        torch.cat([t.flatten() for t in p.component("head").tensors.values()])
        for p in (first, again, other)
    )
    assert torch.equal(first_head, again_head)
    assert not torch.equal(first_head, other_head)


@pytest.mark.parametrize("steps", [0, -2, 3])
def test_train_alone_rejects_a_budget_of_partial_intervals(tiny_config, state_dir, steps):
    agent = make_agent(tiny_config, state_dir)
    assert agent.steps_between_validations == 2
    with pytest.raises(ValueError, match=f"steps {steps}: expected a positive multiple of 2"):
        agent.train_alone(default_hparams(tiny_config), steps)


def test_random_search_spends_the_budget_and_keeps_the_best_validation(tiny_config, state_dir):
    agent = make_agent(tiny_config, state_dir, task="synth/shape")
    budget = 3 * 2 * agent.steps_between_validations
    best, trials = agent.random_search(budget, 3, seed=5)
    assert len(trials) == 3
    assert sum(t.metrics["steps"] for t in trials) == budget
    qualities = [t.metrics["quality"] for t in trials]
    finite = [q for q in qualities if math.isfinite(q)]
    assert best is trials[qualities.index(max(finite))]
    # The trials drew their hparams from the search space, seeded.
    rng = random.Random(f"5:{agent.agent_id}:random_search")
    expected = [random_hparams(tiny_config, rng) for _ in range(3)]
    for trial, hparams in zip(trials, expected, strict=True):
        assert trial.hparams == {**hparams, "num_classes": agent.task.num_classes}


def test_random_search_rejects_a_budget_that_does_not_split(tiny_config, state_dir):
    agent = make_agent(tiny_config, state_dir)
    with pytest.raises(ValueError, match="do not split into 4 equal trials"):
        agent.random_search(6, 4)
    with pytest.raises(ValueError, match="num_trials 0"):
        agent.random_search(6, 0)


def test_an_independent_agent_needs_a_root_and_runs_no_cycles(tiny_config, tmp_path):
    agent = make_agent(tiny_config, tmp_path / "empty")
    with pytest.raises(AgentError, match="no root model VitCpu~root_model~random_init"):
        agent.train_alone(default_hparams(tiny_config), 2)
    with pytest.raises(AgentError, match="train_alone or random_search"):
        agent.run(1)
    assert isinstance(agent, SinglepathAgent)
