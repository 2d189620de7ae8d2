"""Re-scoring the finalists on the whole validation split (`rescore_finalists`)."""

import pytest
import torch

from munet.agents.rescoring import rescore_finalists
from munet.agents.runner import make_agent
from munet.config import AgentConfig, ConfigError, apply_overrides, get_preset
from munet.system import Path, Population, SystemStore

AGENT = "VitCpu~digits"
ROOT = "VitCpu~root_model~random_init"


def _population(capped):
    """A population of the agent's own paths with the given (capped) validation qualities."""
    population = Population(AGENT, max_task_population_size=5)
    root_head = population.new_component("head", {"w": torch.zeros(2)}, train_locks=[ROOT])
    root_head.agent_id = ROOT
    root = Path(0, ROOT, "root_model/random_init", {}, [root_head])
    population.paths[ROOT].append(root)
    for quality in capped:
        path = population.new_path({}, [population.clone_component(root_head)], root)
        path.metrics["quality"] = quality
        population.add_path(path)
    return population


def test_the_finalist_best_on_the_whole_validation_split_wins():
    population = _population([0.90, 0.85, 0.80])
    first, second, third = population.own_paths
    assert population.get_best_path() is first  # best on the capped validation
    whole = {first.id: 0.81, second.id: 0.84, third.id: 0.79}
    evaluated = []

    def evaluate(path):
        evaluated.append(path.id)
        return whole[path.id]

    best = rescore_finalists(population, evaluate)
    assert best is second and population.get_best_path() is second
    assert sorted(evaluated) == sorted(whole)
    assert [p.metrics["quality"] for p in (first, second, third)] == [0.81, 0.84, 0.79]
    assert [p.metrics["capped_quality"] for p in (first, second, third)] == [0.90, 0.85, 0.80]
    # A path re-scored before (a survivor of an earlier cycle) is not evaluated again.
    evaluated.clear()
    rescore_finalists(population, evaluate)
    assert evaluated == []


def test_ties_keep_the_populations_rule_the_oldest_path():
    population = _population([0.7, 0.9])
    first, second = population.own_paths
    assert rescore_finalists(population, lambda path: 0.8) is first


def test_an_agent_publishes_the_finalist_it_rescored(state_dir, tiny_config):
    # digits' validation split (180) is larger than the tiny cap (16): re-scoring applies.
    config = apply_overrides(tiny_config, ["rescore_finalists=true", "num_samples_per_cycle=3"])
    agent = make_agent(config, "digits", state_dir, progress=False, quiet=True)
    assert agent.task.source.num_examples("validation") > agent.task.num_validation_examples
    report = agent.run(1)
    best = report.best
    full = agent.full_validation_quality(best)
    assert best.metrics["quality"] == pytest.approx(full)
    assert "capped_quality" in best.metrics
    loaded = SystemStore(state_dir).load(AGENT, ["VitCpu"]).population.get_best_path()
    assert loaded.full_id == best.full_id
    assert float(loaded.metrics["quality"]) == pytest.approx(full)


def test_off_for_the_seeds_presets_on_for_vitcpu_and_checked(tiny_config):
    assert AgentConfig.__dataclass_fields__["rescore_finalists"].default is False
    assert get_preset("VitT3").rescore_finalists is False  # the seed's presets: off
    assert tiny_config.rescore_finalists is True  # munet's VitCpu: on (measured)
    with pytest.raises(ConfigError, match=r"rescore_finalists=.3.: expected a bool"):
        apply_overrides(tiny_config, ["rescore_finalists=3"])
