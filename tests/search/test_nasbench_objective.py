import random

import numpy as np
import pytest

from munet.nasbench.model_spec import CONV1X1, CONV3X3, INPUT, MAXPOOL3X3, OUTPUT, ModelSpec
from munet.search.objectives import GrowthError, objective_from_json, parse_objective
from munet.search.objectives.nasbench import NASBenchObjective, grow_cell, load_table

OPS = (CONV3X3, CONV1X1, MAXPOOL3X3)


def test_seed_grid_is_chains_per_length_and_op(nasbench_table):
    objective = NASBenchObjective(nasbench_table, seed_lengths=(1, 2))
    seeds = objective.seed_candidates()
    assert len(seeds) == 6
    chain = [[0, 1, 0], [0, 0, 1], [0, 0, 0]]
    assert seeds[0] == {"matrix": chain, "ops": [INPUT, CONV3X3, OUTPUT]}
    assert seeds[5]["ops"] == [INPUT, MAXPOOL3X3, MAXPOOL3X3, OUTPUT]
    assert [objective.describe(s) for s in seeds[:3]] == ["3v2e[c3]", "3v2e[c1]", "3v2e[mp]"]


def test_bad_settings_are_named(nasbench_table, tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.tfrecord"):
        NASBenchObjective(str(tmp_path / "missing.tfrecord"))
    with pytest.raises(ValueError, match="epochs 5 not in"):
        NASBenchObjective(nasbench_table, epochs=5)
    with pytest.raises(ValueError, match="seed chain of 3 interior vertices"):
        NASBenchObjective(nasbench_table, seed_lengths=(3,))
    with pytest.raises(ValueError, match="not KIND:ARG"):
        parse_objective("nasbench")
    with pytest.raises(ValueError, match="unknown objective kind 'resnet'"):
        parse_objective("resnet:x")


def test_growth_adds_exactly_one_vertex_or_one_edge():
    rng = random.Random(0)
    seen = set()
    for _ in range(200):
        spec = ModelSpec([[0, 1, 0], [0, 0, 1], [0, 0, 0]], [INPUT, CONV3X3, OUTPUT])
        for _ in range(3):
            child = grow_cell(spec, rng, OPS, max_vertices=5, max_edges=9)
            grew_vertex = child.num_vertices == spec.num_vertices + 1
            grew_edge = child.num_vertices == spec.num_vertices
            assert grew_vertex or grew_edge
            assert child.num_edges == spec.num_edges + (2 if grew_vertex else 1)
            # the parent's cell is a sub-cell: same ops, kept in order
            if grew_edge:
                assert child.ops == spec.ops
                assert (child.matrix >= spec.matrix).all()
            seen.add("vertex" if grew_vertex else "edge")
            spec = child
    assert seen == {"vertex", "edge"}


def test_growth_at_the_limits_raises():
    full = np.triu(np.ones((3, 3), dtype=int), 1)
    spec = ModelSpec(full, [INPUT, CONV1X1, OUTPUT])
    with pytest.raises(GrowthError, match="cannot grow"):
        grow_cell(spec, random.Random(0), OPS, max_vertices=3, max_edges=9)


def test_train_is_a_table_run_chosen_by_seed(nasbench_table):
    objective = NASBenchObjective(nasbench_table)
    seed = objective.seed_candidates()[0]
    first = objective.train(seed, None, None, seed=11)
    assert first == objective.train(seed, None, None, seed=11)
    table = load_table(nasbench_table)
    fixed, computed = table.get_metrics_from_spec(ModelSpec(seed["matrix"], seed["ops"]))
    runs = computed[108]
    accuracies = {r["final_validation_accuracy"] for r in runs}
    assert 1.0 - first["error"] in accuracies
    assert first["cost"] == fixed["trainable_parameters"] == objective.cost_of(seed)
    times = {r["final_training_time"] for r in runs}
    assert first["train_seconds"] in times
    picked = {objective.train(seed, None, None, seed=s)["train_seconds"] for s in range(30)}
    assert picked == times  # every repeat is reachable


def test_grow_job_is_seeded_and_charges_no_time(nasbench_table):
    objective = NASBenchObjective(nasbench_table)
    seed = objective.seed_candidates()[0]
    grown = objective.grow(seed, None, None, seed=5)
    assert grown == objective.grow(seed, None, None, seed=5)
    assert grown["error"] is None and grown["train_seconds"] == 0.0
    assert grown["cost"] == objective.cost_of(grown["candidate"])


def test_json_round_trip(nasbench_table):
    objective = NASBenchObjective(nasbench_table, epochs=36, seed_lengths=(2,))
    rebuilt = objective_from_json(objective.to_json())
    assert isinstance(rebuilt, NASBenchObjective) and rebuilt.to_json() == objective.to_json()
