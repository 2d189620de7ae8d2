"""Hybrid ViT paths in agents: a frozen stem is shared between tasks like an encoder block."""

import pytest
import torch

from munet.agents.root import create_root_model
from munet.agents.runner import make_agent
from munet.config import apply_overrides, get_preset
from munet.models.arch import StemArch, VitSize, register_vit_size
from munet.system import SystemStore
from tests.agents.conftest import TINY_OVERRIDES
from tests.agents.multipath_helpers import quiet

# A 1-2 block ViT on a root conv + one bottleneck stage (stride 2 in all, as the 2 x 2 patches).
TINY_HYBRID = VitSize(16, 2, 2, 32, patch_size=2, stem=StemArch(4, (1,), 3, 1, False, 2))


@pytest.fixture
def hybrid_config():
    register_vit_size("test-hybrid", TINY_HYBRID, overwrite=True)
    # _mu_ 0: no clone mutation fires, so every frozen component of the root is shared.
    return apply_overrides(
        get_preset("VitCpu"),
        [*TINY_OVERRIDES, "model=test-hybrid", "_mu_=0.0", "hparams_mutation_ranges._mu_=[0.0]"],
    )


def test_two_tasks_share_the_roots_frozen_stem_tensor_for_tensor(hybrid_config, tmp_path):
    state = tmp_path / "state"
    create_root_model(hybrid_config, state, "random_init")
    store = SystemStore(str(state))
    root = store.load("VitCpu~probe").population.paths
    (root_path,) = [p for paths in root.values() for p in paths]
    root_stem = {c.key: c for c in root_path.components if c.name.startswith("stem_")}
    assert {c.name for c in root_stem.values()} == {"stem_root", "stem_block1"}
    originals = {key: {n: t.clone() for n, t in c.tensors.items()} for key, c in root_stem.items()}

    for task in ("digits", "synth/color"):
        make_agent(hybrid_config, task, state, progress=False, echo=quiet).run(1)

    loaded = store.load("VitCpu~synth~count", ["VitCpu"]).population
    bests = [loaded.paths[agent][0] for agent in ("VitCpu~digits", "VitCpu~synth~color")]
    stems = [{c.key: c for c in p.components if c.name.startswith("stem_")} for p in bests]
    # Both tasks' paths hold the root's stem components themselves (no clone fired) ...
    assert set(stems[0]) == set(stems[1]) == set(root_stem)
    for key, original in originals.items():
        # ... frozen: their tensors are the root's, bit for bit, after both agents trained ...
        for name, tensor in original.items():
            assert torch.equal(stems[0][key].tensors[name], tensor)
            assert torch.equal(stems[1][key].tensors[name], tensor)
        # ... and locked by each agent that published a path holding them.
        assert {"VitCpu~digits", "VitCpu~synth~color"} <= set(stems[0][key].train_locks)
    # The heads differ (each task trained its own).
    heads = [next(c for c in p.components if c.name == "head") for p in bests]
    assert heads[0].key != heads[1].key
