"""How the multipath agent samples a child: path_0, the parent, inherited and drawn subpaths
(the seed's rules and munet's default root eligibility), pinned with scripted random draws; the
new router's and connectors' initial values."""

import math

import pytest
import torch

from munet.agents import multipath
from munet.agents.multipath import canonical
from munet.agents.reports import AgentError
from munet.config import get_preset
from munet.models.multipath import ROUTER, head_adapter_name
from munet.system import Path
from munet.system.component import PathComponent
from tests.agents.multipath_helpers import ROOT, SP, agent_for
from tests.agents.scripted_rng import ScriptedRng


class RecordingRng(ScriptedRng):
    """A ScriptedRng that keeps every sequence it chose from."""

    def __init__(self, uniforms, choices=()):
        super().__init__(uniforms, choices)
        self.seen = []

    def choice(self, seq):
        self.seen.append(list(seq))
        return super().choice(seq)


def hand_built(population, source, agent_id, task):
    """A path of another agent, copied from ``source`` (a hand-built population)."""
    path = Path(0, agent_id, task, dict(source.hparams), list(source.components))
    population.paths[agent_id].append(path)
    return path


class FixedMutation:
    """Stands in for mutate_hparams: records its input and sets the given values (no draws)."""

    def __init__(self, **values):
        self.values = values
        self.seen = []

    def __call__(self, hparams, policy, rng):
        self.seen.append(dict(hparams))
        return {**hparams, **self.values}, []


# Sampling --------------------------------------------------------------------------------------
def test_first_child_takes_path_0_as_parent_and_the_defaults(mp_config, state, monkeypatch):
    agent = agent_for(mp_config, state)
    population, *_ = agent.load_population(announce=False)
    mutation = FixedMutation(num_paths=3)
    monkeypatch.setattr(multipath, "mutate_hparams", mutation)
    main = canonical(population.paths[SP])
    others = canonical(
        population.paths["VitCpu~root_model~random_init"] + population.paths["VitCpu~synth~color"]
    )
    # Draws: path_0 (index 0 of the main agent's paths); no own path, so no decay draw;
    # path_1 = index 1 of [root, color] (color); path_2 = the only agent left (root).
    rng = ScriptedRng(uniforms=[], choices=[0, 1, 0])
    ds = {"ds_flip_left_right": True, "num_classes": 10}
    path = agent.sample_path(population, ds, rng)
    assert rng.exhausted()
    # Mutation saw the defaults with `paths` reset.
    assert mutation.seen[0]["paths"] == {} and mutation.seen[0]["router_lr_mult"] == 0.05
    assert path.parent is main[0]
    subpaths = path.hparams["paths"]
    assert list(subpaths) == ["path_0", "path_1", "path_2"]
    assert f"{subpaths['path_0']['agent_id']}:{subpaths['path_0']['id']}" == main[0].full_id
    assert subpaths["path_1"]["agent_id"] == others[1].agent_id == "VitCpu~synth~color"
    assert subpaths["path_2"]["agent_id"] == "VitCpu~root_model~random_init"
    # Other tasks' paths run headless; the model reads every subpath's image size.
    assert subpaths["path_0"]["hparams"]["num_classes"] == 10
    assert subpaths["path_1"]["hparams"]["num_classes"] == 0
    assert subpaths["path_2"]["hparams"]["num_classes"] == 0
    assert path.hparams["ds_image_size"] == [8, 16]
    assert path.hparams["ds_flip_left_right"] is True  # The generation's ds values win.
    assert [c.name for c in path.components] == [
        "path_0", ROUTER, "path_1", head_adapter_name(1), "path_2", head_adapter_name(2)
    ]  # fmt: skip
    assert all(isinstance(path.component(f"path_{i}"), PathComponent) for i in range(3))
    # The seed's init: zero kernels, main-path bias log(w / (1 - w) * (P - 1)), zero connectors.
    router = path.component(ROUTER).tensors
    assert torch.all(router["dense.weight"] == 0)
    expected_bias = math.log(0.8 / 0.2 * 2)
    assert router["dense.bias"].tolist() == pytest.approx([expected_bias, 0.0, 0.0])
    adapter = path.component(head_adapter_name(1)).tensors
    assert adapter["weight"].shape == (10, 64) and torch.all(adapter["weight"] == 0)
    assert path.component(ROUTER).is_trainable()
    assert not path.component("path_1").is_trainable()


def test_child_of_an_own_parent_keeps_its_subpaths_and_clones_router(
    mp_config, state, monkeypatch
):
    agent = agent_for(mp_config, state)
    population, *_ = agent.load_population(announce=False)
    monkeypatch.setattr(multipath, "mutate_hparams", FixedMutation(num_paths=2))
    ds = {"num_classes": 10}
    first = agent.sample_path(population, ds, ScriptedRng([], [0, 0]))  # path_1 = root.
    first.metrics["quality"] = 0.5
    population.add_path(first)
    # Second child: path_0 drawn again, then decay selection picks `first` (0.4 < 0.5^0).
    monkeypatch.setattr(multipath, "mutate_hparams", FixedMutation(num_paths=2))
    rng = ScriptedRng([0.4], [0])
    child = agent.sample_path(population, ds, rng)
    assert rng.exhausted()
    assert child.parent is first and first.metrics["offsprings"] == 1
    assert child.hparams["paths"]["path_1"]["agent_id"] == "VitCpu~root_model~random_init"
    # Router and connector cloned from the parent (new ids, same values, trainable).
    for name in (ROUTER, head_adapter_name(1)):
        new, old = child.component(name), first.component(name)
        assert new.agent_id == agent.agent_id and new.id != old.id
        assert all(torch.equal(new.tensors[k], old.tensors[k]) for k in old.tensors)
    # A third child with num_paths 3: the router's shape changes (initialised), the kept
    # connector is cloned, path_1 comes from the parent and path_2 is drawn (synth/color).
    monkeypatch.setattr(multipath, "mutate_hparams", FixedMutation(num_paths=3))
    rng = ScriptedRng([0.1], [0, 0])
    grown = agent.sample_path(population, ds, rng)
    assert grown.parent is first
    assert grown.hparams["paths"]["path_2"]["agent_id"] == "VitCpu~synth~color"
    assert "fresh: multipath_router, head_adapter_path_2" in grown.metrics["reuse"]
    assert "cloned from MultiVitCpu~digits:0: head_adapter_path_1" in grown.metrics["reuse"]
    assert grown.component(ROUTER).tensors["dense.weight"].shape == (3, 10)


def test_no_own_parent_selected_takes_path_0_with_the_best_own_paths_hparams(
    mp_config, state, monkeypatch
):
    agent = agent_for(mp_config, state)
    population, *_ = agent.load_population(announce=False)
    monkeypatch.setattr(multipath, "mutate_hparams", FixedMutation(num_paths=2))
    ds = {"num_classes": 10}
    own = agent.sample_path(population, ds, ScriptedRng([], [0, 0]))
    own.metrics["quality"] = 0.5
    own.metrics["offsprings"] = 1  # Selected with p = 0.5 only.
    own.hparams["router_lr_mult"] = 0.2  # Marks the best own path's hparams.
    population.add_path(own)
    mutation = FixedMutation(num_paths=2)
    monkeypatch.setattr(multipath, "mutate_hparams", mutation)
    main = canonical(population.paths[SP])
    # Draws: path_0 = index 0; decay draw 0.7 >= 0.5 skips the only own path; path_1 = index 1
    # of [root, color] (the parent path_0 has no subpaths to inherit).
    rng = ScriptedRng([0.7], [0, 1])
    child = agent.sample_path(population, ds, rng)
    assert rng.exhausted()
    assert child.parent is main[0] and own.metrics["offsprings"] == 1
    assert mutation.seen[0]["router_lr_mult"] == 0.2 and mutation.seen[0]["paths"] == {}
    assert child.hparams["paths"]["path_1"]["agent_id"] == "VitCpu~synth~color"
    assert any(f"hparams from the best path {own.full_id}" in line
               for line in child.metrics["mutations"])  # fmt: skip


def test_generation_batches_carry_each_image_size_once(mp_config, state):
    agent = agent_for(mp_config, state)
    children = [
        Path(i, agent.agent_id, "digits", {"ds_image_size": sizes}, [])
        for i, sizes in enumerate([[16, 8], [8], [16, 32]])
    ]
    ds = agent.finalize_ds_hparams({"ds_image_size": 8, "ds_flip_left_right": False}, children)
    assert ds == {"ds_image_size": [8, 16, 32], "ds_flip_left_right": False}


def test_too_few_agents_uses_the_paths_there_are_and_none_is_an_error(
    mp_config, state, monkeypatch
):
    agent = agent_for(mp_config, state)
    population, *_ = agent.load_population(announce=False)
    del population.paths["VitCpu~synth~color"]
    monkeypatch.setattr(multipath, "mutate_hparams", FixedMutation(num_paths=3))
    path = agent.sample_path(population, {"num_classes": 10}, ScriptedRng([], [0, 0]))
    assert path.hparams["num_paths"] == 2 and list(path.hparams["paths"]) == ["path_0", "path_1"]
    assert any("using 2 paths" in line for line in path.metrics["mutations"])
    # VTAB-1k tasks are never drawn; with nothing else left it is a clear error.
    root = population.paths.pop("VitCpu~root_model~random_init")[0]
    vtab = Path(0, "VitCpu~dtd~1k", "dtd/1k", root.hparams, list(root.components))
    population.paths["VitCpu~dtd~1k"].append(vtab)
    with pytest.raises(AgentError, match="needs paths of another VitCpu agent"):
        agent.sample_path(population, {"num_classes": 10}, ScriptedRng([], [0]))


def test_default_never_draws_the_random_init_root(default_config, state, monkeypatch):
    assert get_preset("MultiVitCpu").multipath_random_root is False
    agent = agent_for(default_config, state)
    population, *_ = agent.load_population(announce=False)
    assert population.paths[ROOT]  # Loaded, but not eligible.
    monkeypatch.setattr(multipath, "mutate_hparams", FixedMutation(num_paths=3))
    rng = RecordingRng([], [0, 0])
    path = agent.sample_path(population, {"num_classes": 10}, rng)
    assert rng.exhausted()
    assert all(p.agent_id == "VitCpu~synth~color" for p in rng.seen[1])
    assert [ref["agent_id"] for ref in path.hparams["paths"].values()] == [
        SP, "VitCpu~synth~color"
    ]  # fmt: skip
    assert path.hparams["num_paths"] == 2
    assert any("using 2 paths" in line for line in path.metrics["mutations"])


def test_default_redraws_an_inherited_random_init_root(
    mp_config, default_config, state, monkeypatch
):
    seed_agent = agent_for(mp_config, state)
    population, *_ = seed_agent.load_population(announce=False)
    monkeypatch.setattr(multipath, "mutate_hparams", FixedMutation(num_paths=2))
    parent = seed_agent.sample_path(population, {"num_classes": 10}, ScriptedRng([], [0, 0]))
    assert parent.hparams["paths"]["path_1"]["agent_id"] == ROOT  # The seed's rule.
    parent.metrics["quality"] = 0.5
    population.add_path(parent)
    # Draws: path_0, decay selection picks the parent, path_1 drawn again (not inherited).
    rng = ScriptedRng([0.4], [0, 0])
    child = agent_for(default_config, state).sample_path(population, {"num_classes": 10}, rng)
    assert rng.exhausted() and child.parent is parent
    assert child.hparams["paths"]["path_1"]["agent_id"] == "VitCpu~synth~color"
    assert any("untrained random_init root" in line for line in child.metrics["mutations"])


def test_default_keeps_a_checkpoint_root_eligible(default_config, state, monkeypatch):
    agent = agent_for(default_config, state)
    population, *_ = agent.load_population(announce=False)
    del population.paths["VitCpu~synth~color"]
    root = population.paths[ROOT][0]
    pretrained = hand_built(
        population, root, "VitCpu~root_model~checkpoint", "root_model/checkpoint"
    )
    monkeypatch.setattr(multipath, "mutate_hparams", FixedMutation(num_paths=2))
    rng = RecordingRng([], [0, 0])
    path = agent.sample_path(population, {"num_classes": 10}, rng)
    assert rng.seen[1] == [pretrained]
    assert path.hparams["paths"]["path_1"]["agent_id"] == "VitCpu~root_model~checkpoint"


def test_default_with_only_a_random_init_root_names_the_option(default_config, state, monkeypatch):
    agent = agent_for(default_config, state)
    population, *_ = agent.load_population(announce=False)
    del population.paths["VitCpu~synth~color"]
    monkeypatch.setattr(multipath, "mutate_hparams", FixedMutation(num_paths=2))
    with pytest.raises(AgentError, match="multipath_random_root=true"):
        agent.sample_path(population, {"num_classes": 10}, ScriptedRng([], [0]))


def test_missing_inherited_subpath_is_redrawn_distinct_from_the_later_ones(
    default_config, state, monkeypatch
):
    agent = agent_for(default_config, state)
    population, *_ = agent.load_population(announce=False)
    color = population.paths["VitCpu~synth~color"][0]
    shape = hand_built(population, color, "VitCpu~synth~shape", "synth/shape")
    monkeypatch.setattr(multipath, "mutate_hparams", FixedMutation(num_paths=3))
    parent = agent.sample_path(population, {"num_classes": 10}, ScriptedRng([], [0, 0, 0]))
    # The parent's path_1 is gone from the population; its path_2 is synth/color's path.
    parent.hparams["paths"]["path_1"] = {"agent_id": "VitCpu~gone", "id": 7, "hparams": {}}
    parent.hparams["paths"]["path_2"] = {"agent_id": color.agent_id, "id": color.id,
                                         "hparams": dict(color.hparams)}  # fmt: skip
    parent.metrics["quality"] = 0.5
    population.add_path(parent)
    # Draws: path_0, decay selection picks the parent, path_1 redrawn (index 0 of what is
    # eligible: synth/color's path came first before the fix; only synth/shape's qualifies).
    rng = RecordingRng([0.4], [0, 0])
    child = agent.sample_path(population, {"num_classes": 10}, rng)
    assert rng.exhausted() and child.parent is parent
    refs = {slot: (ref["agent_id"], ref["id"]) for slot, ref in child.hparams["paths"].items()}
    assert refs["path_1"] == (shape.agent_id, shape.id)
    assert refs["path_2"] == (color.agent_id, color.id)
    assert len(set(refs.values())) == 3 and len({a for a, _ in refs.values()}) == 3
    assert any("VitCpu~gone:7 is not loaded" in line for line in child.metrics["mutations"])


def test_missing_inherited_subpath_with_nothing_left_to_draw_keeps_the_later_ones(
    default_config, state, monkeypatch
):
    agent = agent_for(default_config, state)
    population, *_ = agent.load_population(announce=False)
    color = population.paths["VitCpu~synth~color"][0]
    monkeypatch.setattr(multipath, "mutate_hparams", FixedMutation(num_paths=3))
    parent = agent.sample_path(population, {"num_classes": 10}, ScriptedRng([], [0, 0]))
    parent.hparams["paths"]["path_1"] = {"agent_id": "VitCpu~gone", "id": 7, "hparams": {}}
    parent.hparams["paths"]["path_2"] = {"agent_id": color.agent_id, "id": color.id,
                                         "hparams": dict(color.hparams)}  # fmt: skip
    parent.metrics["quality"] = 0.5
    population.add_path(parent)
    rng = ScriptedRng([0.4], [0])  # path_0 and the decay draw only: nothing to redraw from.
    child = agent.sample_path(population, {"num_classes": 10}, rng)
    assert rng.exhausted()
    # The slots stay numbered without a gap: synth/color moves to path_1.
    assert list(child.hparams["paths"]) == ["path_0", "path_1"]
    assert child.hparams["paths"]["path_1"]["agent_id"] == color.agent_id
    assert child.hparams["num_paths"] == 2
