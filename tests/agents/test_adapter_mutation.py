"""The adapter mutation (`adapter_mutation_probability`, munet's option beyond the seed)."""

import random

import pytest
import torch

from munet.agents import adapter_mutation
from munet.agents.published import PublishedSystem, export_published
from munet.agents.runner import make_agent
from munet.config import ConfigError, apply_overrides
from munet.models.adapted_vit import AdaptedVisionTransformer, adapter_block_index
from munet.models.adapters import BottleneckAdapter, adapter_params
from munet.models.export import load_exported
from munet.system import SystemStore

AGENT = "VitCpu~digits"


def _adapters(path):
    return [c for c in path.comps_only() if adapter_block_index(c.name) is not None]


def test_the_adapter_is_the_identity_at_first_and_counts_its_params():
    adapter = BottleneckAdapter(64, 8)
    x = torch.randn(2, 5, 64)
    assert torch.equal(adapter(x), x)  # up is zero-initialised
    assert sum(p.numel() for p in adapter.parameters()) == adapter_params(64, 8) == 1096
    adapter.up.weight.data.fill_(0.1)
    expected = x + adapter.up(torch.nn.functional.gelu(adapter.down(x)))
    assert torch.allclose(adapter(x), expected)


def test_off_by_default_draws_nothing_and_adds_nothing(state_dir, tiny_config, monkeypatch):
    assert tiny_config.adapter_mutation_probability == 0.0

    def refuse(*args, **kwargs):
        raise AssertionError("the adapter mutation ran with the option off")

    monkeypatch.setattr(adapter_mutation, "choose_adapters", refuse)
    monkeypatch.setattr("munet.agents.singlepath.choose_adapters", refuse)
    agent = make_agent(tiny_config, "digits", state_dir, progress=False, quiet=True)
    report = agent.run(1)
    assert _adapters(report.best) == []


def test_config_values_are_checked(tiny_config):
    for bad, message in [
        ("adapter_mutation_probability=1.5", r"adapter_mutation_probability=1\.5"),
        ("adapter_bottleneck=0", r"adapter_bottleneck=0"),
    ]:
        with pytest.raises(ConfigError, match=message):
            apply_overrides(tiny_config, [bad])


@pytest.fixture
def adapted(state_dir, tiny_config):
    """One cycle of digits with the adapter mutation always firing (p = 1)."""
    config = apply_overrides(
        tiny_config,
        ["adapter_mutation_probability=1.0", "adapter_bottleneck=4", "num_layers=2",
         "hparams_mutation_ranges.num_layers=[2]", "_mu_=0.02"],
    )  # fmt: skip
    agent = make_agent(config, "digits", state_dir, progress=False, quiet=True)
    report = agent.run(1)
    return agent, report.best, state_dir


def test_a_child_adapts_its_frozen_blocks_and_trains_only_its_own_parts(adapted):
    agent, best, _ = adapted
    blocks = {c.name: c for c in best.comps_only() if c.name.startswith("encoderblock_")}
    adapters = {c.name: c for c in _adapters(best)}
    frozen = sorted(int(n.split("_")[1]) for n, c in blocks.items() if not c.is_trainable())
    assert frozen, "the root's blocks are frozen and shared"
    assert sorted(adapter_block_index(n) for n in adapters) == frozen
    for component in adapters.values():
        assert component.agent_id == AGENT and component.is_trainable() is False  # locked now
        assert component.spec["down.weight"][0] == (4, 64)
    # Trainable parts of a child of this path: its adapters and unlocked components only.
    built = agent.build_model(best, torch.device("cpu"), train=False)
    assert isinstance(built.model.module, AdaptedVisionTransformer)
    child = agent.sample_path(agent.load_population(announce=False)[0], {"ds_image_size": 8,
                              "num_classes": 10}, random.Random(0), (9, 9, 9))  # fmt: skip
    trainable = agent.build_model(child, torch.device("cpu"), train=True).trainable
    owned = {c.name for c in child.comps_only() if c.is_trainable()}
    assert set(trainable) == owned
    assert all(not c.is_trainable() for n, c in blocks.items() if n not in trainable)
    # A trained adapter is no longer the identity (it learned), and scoring counts it.
    assert any(c.tensors["up.weight"].abs().sum() > 0 for c in adapters.values())
    counted = sum(adapter_params(64, 4) for _ in adapters)
    plain = [c for c in best.comps_only() if c.name not in adapters]
    assert best.num_params() == sum(c.num_params for c in plain) + counted
    # Accounted params: the adapters are this agent's alone (one holder), so all of theirs.
    assert best.accounted_params() == pytest.approx(
        sum(c.num_params / len(c.train_locks | {AGENT}) for c in plain) + counted
    )
    assert best.metrics["accounted_params"] == pytest.approx(best.accounted_params())


def test_adapters_round_trip_through_the_store_and_export(adapted, tmp_path):
    agent, best, state_dir = adapted
    store = SystemStore(state_dir)
    loaded = store.load(AGENT, ["VitCpu"]).population.get_best_path()
    assert loaded.full_id == best.full_id
    for before, after in zip(_adapters(best), _adapters(loaded), strict=True):
        assert before.key == after.key
        for name, tensor in before.tensors.items():
            assert torch.equal(tensor, after.tensors[name])
    # Scores agree: accounted params and FLOPs include the adapters after loading too.
    population = store.load(AGENT, ["VitCpu"], scorer=agent._scorer()).population
    assert population.score(population.get_best_path()) == pytest.approx(
        agent.score(agent.load_population(announce=False)[0], best)
    )
    assert agent.path_flops(best) > agent.path_flops(_without_adapters(best))
    # Export and load: the standalone module gives the agent's logits.
    folder, published = export_published(store, "digits", str(tmp_path / "export"))
    module, _ = load_exported(folder)
    images = torch.rand(3, 3, 8, 8) * 2 - 1
    expected = agent.build_model(loaded, torch.device("cpu"), train=False).model(images)
    assert isinstance(module, AdaptedVisionTransformer)
    assert torch.allclose(module(images), expected, atol=1e-5)
    assert PublishedSystem.load(store).find("digits").path.full_id == best.full_id


def _without_adapters(path):
    from munet.system import Path

    plain = [c for c in path.components if adapter_block_index(c.name) is None]
    return Path(path.id, path.agent_id, path.task_name, path.hparams, plain)
