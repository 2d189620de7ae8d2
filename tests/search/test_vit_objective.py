import json

import pytest
import torch
from safetensors.torch import save_file

from munet.models.flops import count_flops
from munet.search.objectives import objective_from_json, parse_objective
from munet.search.objectives.vit import VitObjective, grow_model, load_weights, save_weights

from .conftest import tiny_vit_settings


@pytest.fixture(scope="module")
def objective():
    return VitObjective("digits", **tiny_vit_settings())


def test_seed_grid_and_cost(objective):
    seeds = objective.seed_candidates()
    assert seeds == [
        {"num_layers": 0, "width": 8, "image_size": 8},
        {"num_layers": 0, "width": 16, "image_size": 8},
        {"num_layers": 1, "width": 8, "image_size": 8},
        {"num_layers": 1, "width": 16, "image_size": 8},
    ]
    arch = objective.arch(seeds[3])
    assert (arch.width, arch.num_layers, arch.mlp_dim, arch.num_classes) == (16, 1, 32, 10)
    assert objective.cost_of(seeds[3]) == count_flops(arch, 8)
    assert objective_from_json(objective.to_json()).to_json() == objective.to_json()


def test_bad_settings_are_named():
    with pytest.raises(ValueError, match="width 10 is not divisible by num_heads 4"):
        VitObjective("digits", widths=(10,), num_heads=4)
    with pytest.raises(ValueError, match="image size 10 is not a multiple of patch 4"):
        VitObjective("digits", image_sizes=(10,))
    with pytest.raises(ValueError, match="seed_steps must be an int >= 1"):
        parse_objective("vit:digits", seed_steps=0)


def test_grown_model_computes_its_parents_function(objective):
    parent = objective.new_model({"num_layers": 2, "width": 16, "image_size": 8}, seed=3)
    with torch.no_grad():  # a trained head (vit_jax initialises it to zero)
        parent.head.weight.normal_(generator=torch.Generator().manual_seed(1))
    images = torch.randn(5, 3, 8, 8)
    child = grow_model(parent, torch.Generator().manual_seed(0))
    assert child.arch.num_layers == 3
    with torch.no_grad():
        assert torch.equal(child(images), parent(images))
    # and the new block is not a dead block: its projections get gradients
    child(images).sum().backward()
    assert float(child.encoderblock_2.attn.proj.weight.grad.abs().sum()) > 0
    assert float(child.encoderblock_2.mlp.fc2.weight.grad.abs().sum()) > 0


def test_search_trains_only_the_new_block_and_train_fine_tunes_all(objective, tmp_path):
    seed_model = {"num_layers": 1, "width": 8, "image_size": 8}
    trained = objective.train(seed_model, None, str(tmp_path / "seed.safetensors"), seed=1)
    assert 0.0 <= trained["error"] <= 1.0 and trained["metrics"]["steps"] == 8
    parent = load_weights(str(tmp_path / "seed.safetensors"))
    grown = objective.grow(
        seed_model, str(tmp_path / "seed.safetensors"), str(tmp_path / "grown.safetensors"), 2
    )
    assert grown["candidate"] == {**seed_model, "num_layers": 2}
    assert grown["cost"] == objective.cost_of(grown["candidate"])
    child = load_weights(str(tmp_path / "grown.safetensors"))
    parent_state, child_state = parent.state_dict(), child.state_dict()
    for name, tensor in parent_state.items():
        assert torch.equal(child_state[name], tensor), f"{name} changed in the search stage"
    assert float(child_state["encoderblock_1.attn.proj.weight"].abs().sum()) > 0  # it trained
    final = objective.train(
        grown["candidate"], str(tmp_path / "grown.safetensors"), str(tmp_path / "t.safetensors"), 3
    )
    assert final["metrics"]["steps"] == 4
    tuned = load_weights(str(tmp_path / "t.safetensors")).state_dict()
    assert not torch.equal(tuned["embedding.weight"], child_state["embedding.weight"])


def test_jobs_are_deterministic_given_their_seed(objective):
    candidate = {"num_layers": 1, "width": 8, "image_size": 8}
    first = objective.train(candidate, None, None, seed=4)
    second = objective.train(candidate, None, None, seed=4)
    assert first["error"] == second["error"]


def test_weights_round_trip_and_bad_files(objective, tmp_path):
    model = objective.new_model({"num_layers": 1, "width": 8, "image_size": 8}, seed=0)
    path = str(tmp_path / "m.safetensors")
    save_weights(model, path)
    loaded = load_weights(path, expected=model.arch)
    images = torch.randn(2, 3, 8, 8)
    assert torch.equal(loaded(images), model(images))
    with pytest.raises(ValueError, match="holds VitArch"):
        load_weights(path, expected=model.arch.replace(num_layers=2))
    bare = str(tmp_path / "bare.safetensors")
    save_file({"x": torch.zeros(1)}, bare, metadata={"note": json.dumps(1)})
    with pytest.raises(ValueError, match="no ViT metadata"):
        load_weights(bare)
    with pytest.raises(ValueError, match="needs its parent's trained weights"):
        objective.grow({"num_layers": 1, "width": 8, "image_size": 8}, None, None, 0)


def test_ask_tell_strategies_score_vits_trained_from_scratch(objective, tmp_path):
    from munet.search import make_strategy
    from munet.search.driver import SearchRun
    from munet.search.executors import InProcessExecutor

    strategy = make_strategy("random", objective.search_space(), seed=0)
    report = SearchRun(strategy, objective, InProcessExecutor(2), tmp_path, max_trials=3).run()
    assert len(report.results) == 3 and report.stop_reason == "3 trials (max_trials 3)"
    for record in report.results:
        assert record["failure"] is None
        assert record["cost"] == objective.cost_of(record["candidate"])
        assert record["objective"] == pytest.approx(record["metrics"]["validation_accuracy"])
        assert record["metrics"]["steps"] == objective.seed_steps
