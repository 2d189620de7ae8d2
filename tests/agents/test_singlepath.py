import logging
import math

import pytest

from munet.agents import path_training, singlepath
from munet.agents.singlepath import AgentError, ImmutabilityError, SinglepathAgent
from munet.system import SystemStore


def quiet(*_):
    pass


def make_agent(config, task, state_dir):
    return SinglepathAgent(config, task, state_dir, progress=False, echo=quiet)


class SaveRecorder:
    """Wraps SystemStore.save_state to observe every commit as it happens."""

    def __init__(self, monkeypatch):
        self.commits = []
        original = SystemStore.save_state

        def save_state(store, population, cycle, generation, config=None, published=None):
            own = list(population.own_paths)
            self.commits.append(
                {
                    "agent": population.agent_id,
                    "cycle": cycle,
                    "generation": generation,
                    "own": own,
                    "locked": all(
                        population.agent_id in c.train_locks for p in own for c in p.components
                    ),
                }
            )
            return original(store, population, cycle, generation, config, published)

        monkeypatch.setattr(SystemStore, "save_state", save_state)


def test_two_agents_two_cycles_keep_the_seed_invariants(tiny_config, state_dir, monkeypatch):
    recorder = SaveRecorder(monkeypatch)
    reports = {}
    for task in ("digits", "synth/shape"):
        reports[task] = make_agent(tiny_config, task, state_dir).run(2)

    for report in reports.values():
        agent_id = report.agent_id
        commits = [c for c in recorder.commits if c["agent"] == agent_id]
        # A commit after every generation: (cycle, generation) in order, end of cycle as g=0.
        assert [(c["cycle"], c["generation"]) for c in commits] == [(0, 1), (1, 0), (1, 1), (2, 0)]
        for commit in commits:
            assert len(commit["own"]) <= tiny_config.max_task_population_size  # Pruned.
            if commit["generation"] == 0:
                # End of cycle: only the best path survives, its components locked.
                assert len(commit["own"]) == 1 and commit["locked"]
        assert len(report.generations) == 4
        for generation in report.generations:
            for path in generation.paths:
                improved = path.metrics["improved"]
                parent_score = path.metrics["parent_score"]
                if parent_score is not None:
                    # Admitted iff it beat its parent's score.
                    assert improved == (path.metrics["score"] > parent_score)
                assert ("failure" in path.metrics) is False
        best = report.best
        assert 0.0 <= best.metrics["test_quality"] <= 1.0
        assert best.metrics["num_cycles"] >= 1

    store = SystemStore(str(state_dir))
    for report in reports.values():
        # Intermediate states are gone once the cycle committed; end-of-cycle ones stay.
        assert [s.name for s in store.list_states(report.agent_id)] == ["state_1_0", "state_2_0"]
    # The later agent sees the earlier one's published path.
    loaded = store.load(reports["synth/shape"].agent_id, ["VitCpu"])
    assert reports["digits"].agent_id in loaded.population.paths


def test_rerun_with_more_cycles_continues(tiny_config, state_dir):
    first = make_agent(tiny_config, "digits", state_dir).run(1)
    assert first.cycle == 1 and len(first.generations) == 2
    again = make_agent(tiny_config, "digits", state_dir).run(1)
    assert again.generations == [] and again.best.full_id == first.best.full_id
    more = make_agent(tiny_config, "digits", state_dir).run(2)
    assert more.cycle == 2 and len(more.generations) == 2


def test_resume_after_interrupted_generation_reaches_the_same_end_state(
    tiny_config, tmp_path, monkeypatch
):
    from munet.agents.root import create_root_model

    reference_dir, resumed_dir = tmp_path / "reference", tmp_path / "resumed"
    for d in (reference_dir, resumed_dir):
        create_root_model(tiny_config, d, "random_init")
    reference = make_agent(tiny_config, "digits", reference_dir).run(1)

    calls = {"n": 0}
    original = SinglepathAgent.train_paths

    def crash_on_second_generation(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt("killed")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(SinglepathAgent, "train_paths", crash_on_second_generation)
    with pytest.raises(KeyboardInterrupt):
        make_agent(tiny_config, "digits", resumed_dir).run(1)
    store = SystemStore(str(resumed_dir))
    assert [s.name for s in store.list_states("VitCpu~digits")] == ["state_0_1"]
    monkeypatch.setattr(SinglepathAgent, "train_paths", original)

    resumed = make_agent(tiny_config, "digits", resumed_dir).run(1)
    assert len(resumed.generations) == 1  # Only the interrupted generation ran again.
    assert [s.name for s in store.list_states("VitCpu~digits")] == ["state_1_0"]
    # Seeded per generation: the resumed run replays the same decisions and training.
    assert resumed.best.full_id == reference.best.full_id
    assert resumed.best.hparams == reference.best.hparams
    assert math.isclose(
        resumed.best.metrics["test_quality"], reference.best.metrics["test_quality"]
    )


def test_nan_loss_drops_the_candidate_and_the_cycle_goes_on(
    tiny_config, state_dir, monkeypatch, caplog
):
    original = singlepath.AssembledVit
    built = {"n": 0}

    class FirstModelExplodes(original):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            built["n"] += 1
            self.explodes = built["n"] == 1

        def __call__(self, images):
            logits = super().__call__(images)
            return logits * float("nan") if self.explodes else logits

    monkeypatch.setattr(singlepath, "AssembledVit", FirstModelExplodes)
    with caplog.at_level(logging.WARNING):
        report = make_agent(tiny_config, "digits", state_dir).run(1)
    first, second = (g.paths[0] for g in report.generations)
    assert first.metrics["failure"] == "non-finite loss or gradient"
    assert first.metrics["improved"] is False
    assert f"{first.full_id}: non-finite loss" in caplog.text
    assert second.metrics["improved"] and report.best.full_id == second.full_id


def test_no_root_model_is_a_clear_error(tiny_config, tmp_path):
    with pytest.raises(AgentError, match="create a root model first"):
        make_agent(tiny_config, "digits", tmp_path / "empty").run(1)


def test_unknown_task_is_a_clear_error_before_any_work(tiny_config, tmp_path):
    with pytest.raises(ValueError, match="unknown task 'digts'.*digits"):
        make_agent(tiny_config, "digts", tmp_path / "state")
    assert not (tmp_path / "state").exists()


def test_root_pseudo_task_is_refused(tiny_config, tmp_path):
    with pytest.raises(AgentError, match="is a root model"):
        make_agent(tiny_config, "root_model/random_init", tmp_path)


def test_immutability_check_passes_then_catches_a_changed_result(
    tiny_config, state_dir, monkeypatch
):
    tiny_config.test_immutability = True
    make_agent(tiny_config, "digits", state_dir).run(1)
    # Same parameters, same data: the recomputed test quality matches.
    make_agent(tiny_config, "digits", state_dir).run(2)
    original = path_training.evaluate_accuracy
    monkeypatch.setattr(path_training, "evaluate_accuracy", lambda *a: original(*a) * 0.5 + 0.01)
    with pytest.raises(ImmutabilityError, match="differs from the published"):
        make_agent(tiny_config, "digits", state_dir).run(3)


def test_one_path_per_device_with_shared_dataset_hparams(tiny_config, state_dir):
    import torch

    agent = SinglepathAgent(
        tiny_config,
        "digits",
        state_dir,
        devices=[torch.device("cpu"), torch.device("cpu")],
        progress=False,
        echo=quiet,
    )
    assert agent.num_generations == 1  # ceil(2 samples / 2 devices)
    report = agent.run(1)
    (generation,) = report.generations
    assert len(generation.paths) == 2
    first, second = (p.hparams for p in generation.paths)
    assert {k: v for k, v in first.items() if k.startswith("ds_")} == {
        k: v for k, v in second.items() if k.startswith("ds_")
    }
