"""The multipath agent (seed 000 ``MultiVit``): its config (presets, validation, score) and
what it loads or refuses to run on."""

import pytest

from munet.agents.reports import AgentError
from munet.agents.root import create_root_model
from munet.config import (
    ConfigError,
    apply_overrides,
    get_preset,
    multipath_config,
)
from munet.system import Path, SystemStore
from tests.agents.multipath_helpers import agent_for


# Config ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "multi,single", [("MultiVit", "Vit"), ("MultiVitB", "VitB"), ("MultiVitT3", "VitT3"),
                     ("MultiVitCpu", "VitCpu")],
)  # fmt: skip
def test_multipath_presets_derive_from_their_singlepath_preset(multi, single):
    config, base = get_preset(multi), get_preset(single)
    assert config.name == multi and config.singlepath_agent == single and config.is_multipath
    assert config.force_mutations == []
    assert (config.scorer.base_accounted_params, config.scorer.base_flops) == (0, 0)
    for key in ("num_layers", "ds_image_size"):
        assert key not in config.hparams_defaults and key not in config.hparams_mutation_ranges
    assert config.hparams_defaults["router_init_main_path_weight"] == 0.8
    assert config.hparams_defaults["router_lr_mult"] == 0.05
    assert config.hparams_defaults["num_paths"] == 2
    assert config.hparams_mutation_ranges["router_lr_mult"] == [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1]
    assert config.hparams_mutation_ranges["num_paths"] == [2, 3]
    # Everything else is the singlepath preset's.
    same = (
        "model",
        "batch_size",
        "num_samples_per_cycle",
        "max_task_population_size",
        "num_train_examples_between_validations_max",
        "num_validations_per_path_training",
    )
    assert all(getattr(config, k) == getattr(base, k) for k in same)
    for key, value in base.hparams_defaults.items():
        if key not in ("num_layers", "ds_image_size"):
            assert config.hparams_defaults[key] == value


def test_multipath_config_rejects_fewer_than_two_paths():
    config = multipath_config(get_preset("VitCpu"))
    with pytest.raises(ConfigError, match="not in its mutation range"):
        apply_overrides(config, ["num_paths=1"])
    config.hparams_mutation_ranges["num_paths"] = [1, 2]
    config.hparams_defaults["num_paths"] = 1
    with pytest.raises(ConfigError, match="at least 2 paths"):
        config.validate()


def test_score_is_quality():
    from munet.system import ScorerDecay

    scorer = get_preset("MultiVitT3").scorer
    decay = ScorerDecay(scorer.scale_factor, scorer.base_accounted_params, scorer.base_flops)
    path = Path(0, "MultiVitT3~digits", "digits", {}, [])
    path.metrics["quality"] = 0.731
    assert decay.score(path) == 0.731


# Loading ---------------------------------------------------------------------------------------
def test_root_model_task_is_refused_naming_the_singlepath_agent(mp_config, state):
    with pytest.raises(AgentError, match="munet root --agent VitCpu"):
        agent_for(mp_config, state, "root_model/random_init")
    with pytest.raises(ValueError, match="munet root --agent VitCpu"):
        create_root_model(mp_config, state, "random_init")


def test_task_without_singlepath_state_is_an_error_before_any_work(mp_config, state):
    agent = agent_for(mp_config, state, "synth/shape")
    with pytest.raises(AgentError, match=r"munet run --agent VitCpu --task synth/shape"):
        agent.run(1)
    assert SystemStore(str(state)).list_states(agent.agent_id) == []


def test_loads_its_singlepath_class_only(mp_config, state):
    agent_for(mp_config, state, "synth/color").run(1)
    population, *_ = agent_for(mp_config, state).load_population(announce=False)
    # Not the other multipath agent's paths (its published subpaths are VitCpu paths anyway).
    assert sorted(population.paths) == [
        "VitCpu~digits", "VitCpu~root_model~random_init", "VitCpu~synth~color"
    ]  # fmt: skip
