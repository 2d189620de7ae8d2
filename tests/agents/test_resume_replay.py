"""A resumed run replays the interrupted generation, random parent draws included (issue 17,
item 7): the fallback draw from the whole system uses a canonical order, not the order in
which the population happened to meet the agents (own agent last when fresh, first when
loaded from its state)."""

import math

import pytest

from munet.agents import selection
from munet.agents.root import create_root_model
from munet.agents.singlepath import SinglepathAgent
from munet.system import SystemStore


def make_agent(config, state_dir):
    return SinglepathAgent(config, "digits", state_dir, progress=False, echo=lambda _: None)


def test_a_resumed_generation_draws_the_same_random_parent(tiny_config, tmp_path, monkeypatch):
    # Decay selection never picks: every parent comes from the random fallback, over the
    # root's path and the agent's own (admitted) paths.
    monkeypatch.setattr(selection, "decay_selection", lambda *args, **kwargs: (None, []))
    tiny_config.num_samples_per_cycle = 3
    reference_dir, resumed_dir = tmp_path / "reference", tmp_path / "resumed"
    for d in (reference_dir, resumed_dir):
        create_root_model(tiny_config, d, "random_init")
    reference = make_agent(tiny_config, reference_dir).run(1)

    calls = {"n": 0}
    original = SinglepathAgent.train_paths

    def killed_in_the_third_generation(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt("killed")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(SinglepathAgent, "train_paths", killed_in_the_third_generation)
    with pytest.raises(KeyboardInterrupt):
        make_agent(tiny_config, resumed_dir).run(1)
    store = SystemStore(str(resumed_dir))
    assert store.latest_state("VitCpu~digits").name == "state_0_2"
    # The resumed agent loads its own paths first; the fresh one met them last.
    assert store.load("VitCpu~digits").population.own_paths
    monkeypatch.setattr(SinglepathAgent, "train_paths", original)

    resumed = make_agent(tiny_config, resumed_dir).run(1)
    assert len(resumed.generations) == 1  # Only the interrupted generation ran again.
    replayed, first_run = resumed.generations[0].paths[0], reference.generations[2].paths[0]
    assert replayed.parent.full_id == first_run.parent.full_id
    assert replayed.hparams == first_run.hparams
    assert resumed.best.full_id == reference.best.full_id
    assert math.isclose(
        resumed.best.metrics["test_quality"], reference.best.metrics["test_quality"]
    )
