import shutil

import pytest

from munet.report.collect import (
    CLONED,
    OWNED,
    SHARED,
    candidate_from_row,
    collect_system,
    mutation_counts,
    mutation_name,
    store_signature,
)
from munet.system import SystemStore

DIGITS, SHAPE, MULTI = "VitCpu~digits", "VitCpu~synth~shape", "MultiVitCpu~synth~shape"
ROOT = "VitCpu~root_model~random_init"


def test_agents_history_and_cycle_results(synthetic_state):
    view = collect_system(str(synthetic_state))
    assert sorted(view.agents) == sorted([DIGITS, SHAPE, MULTI, ROOT])
    # Grouped by task, a task's singlepath agents before its multipath ones.
    assert [a.agent_id for a in view.tasks] == [DIGITS, SHAPE, MULTI]
    digits = view.agents[DIGITS]
    # 2 cycles x 2 generations x (1 admitted + 1 rejected); each row once.
    assert len(digits.history) == 8
    assert sum(c.admitted for c in digits.history) == 4
    assert [(c.cycle, c.generation) for c in digits.history if c.admitted] == [
        (0, 0), (0, 1), (1, 0), (1, 1)
    ]  # fmt: skip
    assert [r.cycle for r in digits.cycles] == [1, 2]
    assert digits.cycles[1].test_quality == pytest.approx(digits.best.metrics["quality"] - 0.01)
    assert (digits.cycle, digits.generation) == (2, 0)
    assert view.warnings == []


def test_component_status_follows_the_lineage(synthetic_state):
    view = collect_system(str(synthetic_state))
    shape = {u.slot: u for u in view.agents[SHAPE].best.components}
    # Taken from digits' path at the first sample, then trained along shape's own lineage.
    assert (shape["embedding"].status, shape["embedding"].origin) == (CLONED, DIGITS)
    assert (shape["encoderblock_0"].status, shape["encoderblock_0"].origin) == (SHARED, ROOT)
    assert (shape["head"].status, shape["head"].owner) == (OWNED, SHAPE)
    assert shape["embedding"].owner == SHAPE and shape["embedding"].num_params == 12
    digits = {u.slot: u.status for u in view.agents[DIGITS].best.components}
    # Cloned from the root model counts as the task's own.
    assert digits == {"embedding": OWNED, "cls": OWNED, "encoderblock_0": SHARED,
                      "encoder_norm": OWNED, "head": OWNED}  # fmt: skip


def test_multipath_subpaths(synthetic_state):
    view = collect_system(str(synthetic_state))
    multi = view.agents[MULTI]
    assert multi.is_multipath and not view.agents[DIGITS].is_multipath
    best = multi.best
    assert [slot for slot, _ in best.subpaths] == ["path_0", "path_1"]
    assert [sub.rpartition(":")[0] for _, sub in best.subpaths] == [SHAPE, DIGITS]
    assert all(sub in view.paths for _, sub in best.subpaths)
    assert [u.slot for u in best.components] == ["multipath_router", "head_adapter_path_1"]
    # The subpath of digits seen through the multipath agent is digits' own best path.
    assert best.subpaths[1][1] == view.agents[DIGITS].best.full_id


def test_mutation_counts_only_fired_mutations():
    assert mutation_name("opt_lr : 0.1 --- (incremental, p=0.2) --> 0.05") == "opt_lr"
    assert mutation_name("clone:cls : fired (p=0.2)") == "clone:cls"
    assert mutation_name("clone:cls : not fired (p=0.2)") is None
    assert mutation_name("num_layers : 1 (kept, p=0.2)") is None
    assert mutation_name("parent drawn at random from the system: A:1") is None


def test_mutation_counts_over_the_system(synthetic_state):
    view = collect_system(str(synthetic_state))
    counts = {name: (admitted, sampled) for name, admitted, sampled in mutation_counts(view.tasks)}
    # 12 singlepath candidates (8 digits + 4 shape), half admitted; cls cloned in admitted only.
    assert counts == {"opt_lr": (6, 12), "clone:cls": (6, 6), "clone:encoder_norm": (6, 12)}


def test_candidate_from_csv_strings():
    row = {
        "id": "7",
        "metrics.cycle_id": "2",
        "metrics.generation_id": "1",
        "metrics.quality": "nan",
        "metrics.score": "",
        "metrics.improved": "False",
        "metrics.failure": "nan loss",
        "metrics.mutations": '["a : 1 --- (x) --> 2"]',
    }
    c = candidate_from_row(row)
    assert (c.path_id, c.cycle, c.generation) == (7, 2, 1)
    assert c.quality is None and c.score is None and not c.admitted
    assert c.failure == "nan loss" and c.mutations == ["a : 1 --- (x) --> 2"]


def test_damaged_state_is_skipped_with_a_warning(synthetic_state, tmp_path):
    root = tmp_path / "state"
    shutil.copytree(synthetic_state, root)
    (root / DIGITS / "state_2_0" / "manifest.json").write_text("{not json")
    view = collect_system(str(root))
    assert any(f"{DIGITS}/state_2_0" in w for w in view.warnings)
    # The previous end-of-cycle state stands in.
    digits = view.agents[DIGITS]
    assert [r.cycle for r in digits.cycles] == [1]
    assert digits.best is not None and digits.best.metrics["num_cycles"] == 1
    assert view.agents[SHAPE].best is not None


def test_missing_state_dir_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no state dir at"):
        collect_system(str(tmp_path / "nowhere"))


def test_signature_changes_when_an_agent_commits(synthetic_state, tmp_path):
    root = tmp_path / "state"
    shutil.copytree(synthetic_state, root)
    before = store_signature(str(root))
    assert store_signature(str(root)) == before
    from tests.report.systems import grow_agent

    grow_agent(SystemStore(str(root)), "VitCpu~synth~shape", 1, 0.5)
    assert store_signature(str(root)) != before


def test_cache_skips_older_states_once_read(synthetic_state, tmp_path):
    root = tmp_path / "state"
    shutil.copytree(synthetic_state, root)
    cache = {}
    first = collect_system(str(root), cache)
    # An older end-of-cycle state is not read again (committed states never change) ...
    (root / DIGITS / "state_1_0" / "manifest.json").write_text("{not json")
    again = collect_system(str(root), cache)
    assert again.warnings == [] and again.agents[DIGITS].cycles == first.agents[DIGITS].cycles
    # ... while without the cache its damage shows.
    fresh = collect_system(str(root))
    assert any(f"{DIGITS}/state_1_0" in w for w in fresh.warnings)
    assert [r.cycle for r in fresh.agents[DIGITS].cycles] == [2]


def test_reuse_summaries_of_both_agent_kinds():
    from munet.report.collect import ROOT_MODEL_MARK, _clone_origin, _reuse_sources

    assert ROOT_MODEL_MARK == "~root_model~"
    single = (
        "cloned from A~x: embedding, cls; shared from R~root_model~r: encoderblock_0; fresh: head"
    )
    assert _reuse_sources(single) == {
        "embedding": ("cloned", "A~x"), "cls": ("cloned", "A~x"),
        "encoderblock_0": ("shared", "R~root_model~r"), "head": ("fresh", ""),
    }  # fmt: skip
    # Multipath agents name the source path, and list their subpaths first.
    multi = "path_0: A~x:8; path_1: B~y:6; cloned from M~x:5: head_adapter_path_1; fresh: router"
    sources = _reuse_sources(multi)
    assert sources["head_adapter_path_1"] == ("cloned", "M~x") and sources["router"][0] == "fresh"
    # A multipath agent's connector cloned along its own lineage stays its own.
    rows = {5: {"metrics.reuse": "fresh: head_adapter_path_1", "parent_agent_id": "B~y"}}
    row = {"metrics.reuse": multi, "parent_agent_id": "M~x", "parent_id": "5"}
    assert _clone_origin("head_adapter_path_1", row, "M~x", rows) is None
    # Cloned from another task's component, then trained along this agent's own lineage.
    rows = {3: {"metrics.reuse": single, "parent_agent_id": "A~x", "parent_id": "1"}}
    row = {"metrics.reuse": "cloned from C~z: cls", "parent_agent_id": "C~z", "parent_id": "3"}
    assert _clone_origin("cls", row, "C~z", rows) == "A~x"
    assert _clone_origin("embedding", {"metrics.reuse": single}, "C~z", rows) == "A~x"
    row = {"metrics.reuse": "cloned from R~root_model~r: cls"}
    assert _clone_origin("cls", row, "C~z", rows) is None
