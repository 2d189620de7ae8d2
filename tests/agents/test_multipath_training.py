"""A multipath cycle: only the router and connectors train, the agent publishes its path and
every subpath it uses, which stay loadable after their agents moved on; frozen subpaths'
outputs are cached without changing what training computes."""

import shutil

import pytest
import torch

from munet.agents.runner import leaderboard_rows, make_agent
from munet.config import apply_overrides, get_preset
from munet.system import SystemStore
from munet.training import loop
from tests.agents.conftest import TINY_OVERRIDES
from tests.agents.multipath_helpers import SP, agent_for, quiet


# Training, publishing, loading -----------------------------------------------------------------
def test_cycle_trains_router_and_connectors_only_and_publishes_subpaths(mp_config, state):
    store = SystemStore(str(state))
    before = store.load("VitCpu~digits", ["VitCpu"]).population
    fingerprints = {p.full_id: [c.fingerprint() for c in p.leaf_components()]
                    for p in before.all_paths()}  # fmt: skip
    report = agent_for(mp_config, state).run(1)
    best = report.best
    for generation in report.generations:
        for path in generation.paths:
            # The parent is another agent's path (path_0): nothing to beat.
            if path.parent.agent_id != "MultiVitCpu~digits":
                assert path.metrics["parent_score"] is None
            trained = sum(
                c.num_params for c in path.components if not c.is_path
            )
            assert path.metrics["num_trainable_params"] == trained
            assert path.metrics["score"] == path.metrics["quality"]
    # Subpaths are frozen: their tensors are those of their own agents' states.
    for slot, ref in best.hparams["paths"].items():
        wrapped = best.component(slot).path
        assert wrapped.full_id == f"{ref['agent_id']}:{ref['id']}"
        assert [c.fingerprint() for c in wrapped.leaf_components()] == fingerprints[
            wrapped.full_id
        ]
    # Published: the agent's path, then every subpath it uses.
    state_ref = store.latest_state("MultiVitCpu~digits")
    manifest = store.read_manifest(state_ref)
    subs = [f"{r['agent_id']}:{r['id']}" for r in best.hparams["paths"].values()]
    assert manifest["published"] == [best.full_id, *subs]
    # The leaderboard names the subpaths.
    rows = [r for r in leaderboard_rows(store) if r["agent_id"] == "MultiVitCpu~digits"]
    assert rows[0]["paths"] == " ".join(subs)


def test_subpaths_stay_loadable_after_their_agent_moved_on(mp_config, state, monkeypatch):
    agent_for(mp_config, state).run(1)
    store = SystemStore(str(state))
    best = store.load("MultiVitCpu~digits", ["VitCpu"]).population.get_best_path()
    used = best.component("path_0").path.full_id
    # The digits agent moves on: every child beats its parent (validation accuracy rises
    # call by call), so its next state publishes another path.
    calls = iter(range(1, 1000))
    with monkeypatch.context() as patch:
        patch.setattr(loop, "evaluate_accuracy", lambda *a: 0.5 + next(calls) / 2000)
        sp = apply_overrides(get_preset("VitCpu"), TINY_OVERRIDES)
        make_agent(sp, "digits", state, progress=False, echo=quiet).run(2)
    assert used not in store.read_manifest(store.latest_state(SP))["published"]
    population = store.load("MultiVitCpu~digits", ["VitCpu"]).population
    reloaded = population.get_best_path()
    assert reloaded.component("path_0").path.full_id == used
    # And the model still evaluates to the same test quality.
    agent = agent_for(mp_config, state)
    before = reloaded.metrics["test_quality"]
    assert agent.run_test_eval(reloaded, test_immutability=True) == pytest.approx(before)


# Reusing frozen subpaths' outputs -------------------------------------------------------------
def test_path_output_cache_answers_like_the_model_within_its_budget():
    from munet.agents.path_cache import PathOutputCache

    calls = []
    weight = torch.randn(12, 5)

    def model(images):
        calls.append(len(images))
        return images.reshape(len(images), -1) @ weight

    images = torch.randn(6, 3, 2, 2)
    images[4] = images[1]  # The same image twice in a batch.
    cache = PathOutputCache(max_bytes=4 * 5 * 4)  # Room for four rows.
    cached = cache.wrap("path", model)
    first = cached(images)
    assert torch.allclose(first, model(images), atol=1e-6)
    calls.clear()
    again = cached(images)
    assert torch.equal(again, first)
    assert calls == [1] and cache.bytes == 4 * 5 * 4  # Only the row left out was recomputed.
    assert cache.hits == 0 + 5 and cache.misses == 6 + 1  # First call: all six computed.
    # Another key is another table; gradients or a zero budget bypass the cache.
    assert torch.allclose(cache.wrap("other", model)(images), first)
    assert PathOutputCache(0).wrap("p", model)(images).shape == (6, 5)


def test_cached_training_matches_recomputing(mp_config, state, tmp_path):
    from munet.agents.path_cache import augmentation_active

    other = tmp_path / "other"
    shutil.copytree(state, other)
    cached_agent = agent_for(mp_config, state)
    cached = cached_agent.run(1)
    plain_config = apply_overrides(mp_config, ["path_output_cache_mb=0"])
    plain = agent_for(plain_config, other).run(1)
    assert cached_agent.path_outputs.hits > 0
    assert not augmentation_active(cached.generations[0].paths[0].hparams)
    for a, b in zip(cached.generations, plain.generations, strict=True):
        assert [p.metrics["evals"] for p in a.paths] == [p.metrics["evals"] for p in b.paths]
    assert cached.best.metrics["test_quality"] == plain.best.metrics["test_quality"]
