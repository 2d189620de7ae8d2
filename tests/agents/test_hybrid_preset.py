"""The VitCpuHybrid preset: its model and optimizer, a cycle, and a multipath agent over it."""

import torch

from munet.agents.root import create_root_model
from munet.agents.runner import make_agent
from munet.config import apply_overrides, get_preset
from munet.models.arch import VitArch
from munet.system import SystemStore
from tests.agents.conftest import TINY_OVERRIDES
from tests.agents.multipath_helpers import COMMON, agent_for, quiet

# TINY_OVERRIDES at the hybrid's stride (8): 8 and 16 px images give 1 and 4 tokens.
HYBRID_TINY = [*TINY_OVERRIDES, "hparams_mutation_ranges.ds_image_size=[8, 16]",
               "ds_image_size=16"]  # fmt: skip


def test_the_preset_is_vitcpu_on_the_hybrid_with_adamw():
    hybrid, cpu = get_preset("VitCpuHybrid"), get_preset("VitCpu")
    arch = VitArch.from_size(hybrid.model)
    assert arch.is_hybrid and arch.stride == 8
    # The transformer is VitCpu's; only the stem and the patch embedding differ.
    plain = VitArch.from_size(cpu.model)
    assert arch.replace(stem=None, patch_size=plain.patch_size) == plain
    assert hybrid.hparams_defaults["opt_optimizer"] == "adamw"
    assert hybrid.hparams_defaults["ds_image_size"] == 32
    assert 48 in hybrid.hparams_mutation_ranges["ds_image_size"]
    # The path shape is VitCpu's.
    for key in ("batch_size", "num_samples_per_cycle", "num_validation_examples_max"):
        assert getattr(hybrid, key) == getattr(cpu, key)
    # VitCpu itself is unchanged: the seed's SGD.
    assert "opt_optimizer" not in cpu.hparams_defaults
    multi = get_preset("MultiVitCpuHybrid")
    assert multi.singlepath_agent == "VitCpuHybrid"
    assert multi.hparams_defaults["opt_optimizer"] == "sgd"


def test_a_cycle_trains_adamw_paths_and_a_multipath_agent_combines_them(tmp_path):
    config = apply_overrides(get_preset("VitCpuHybrid"), HYBRID_TINY)
    state = tmp_path / "state"
    create_root_model(config, state, "random_init")
    for task in ("digits", "synth/color"):
        make_agent(config, task, state, progress=False, echo=quiet).run(1)
    store = SystemStore(str(state))
    best = store.load("VitCpuHybrid~digits", ["VitCpuHybrid"]).population.get_best_path()
    assert best.hparams["opt_optimizer"] == "adamw"
    assert [c.name for c in best.components][:3] == ["stem_root", "stem_block1", "stem_block2"]
    assert 0.0 <= best.metrics["quality"] <= 1.0
    multi = apply_overrides(get_preset("MultiVitCpuHybrid"), COMMON)
    agent = agent_for(multi, state)
    agent.run(1)
    mp_best = store.load(agent.agent_id, ["VitCpuHybrid", "MultiVitCpuHybrid"]).population
    path = mp_best.get_best_path()
    assert path.agent_id == "MultiVitCpuHybrid~digits"
    assert torch.isfinite(torch.tensor(path.metrics["quality"]))
