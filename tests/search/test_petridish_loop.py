import json
import os

import pytest

from munet.search.executors import InProcessExecutor
from munet.search.hull import eps_band
from munet.search.objectives.nasbench import NASBenchObjective
from munet.search.petridish_loop import PetridishLoop, PetridishSettings, run_petridish


def _run(table, out, settings, **kwargs):
    return run_petridish(NASBenchObjective(table), InProcessExecutor(), out, settings, **kwargs)


def _state(out):
    with open(os.path.join(out, "state.json")) as handle:
        return json.load(handle)


def test_loop_follows_the_seeds_job_stages_and_writes_its_outputs(nasbench_table, tmp_path):
    lines = []
    report = _run(
        nasbench_table, tmp_path, PetridishSettings(max_pool_size=12, seed=1), progress=lines.append
    )
    assert report.stop_reason == "pool holds 13 models > max_pool_size 12"
    assert len(report.pool) == 13
    state = _state(tmp_path)
    finished = state["finished"]
    # seed jobs first (one per grid point), each trained model spawns a search job, each
    # search job a train job of the grown model
    assert [r["stage"] for r in finished[:6]] == ["seed"] * 6
    by_id = {r["id"]: r for r in finished}
    searches = [r for r in finished if r["stage"] == "search"]
    trains = [r for r in finished if r["stage"] == "train"]
    assert searches and trains
    for train in trains:
        search = next(s for s in searches if s["candidate"] == train["candidate"]
                      and s["parent_id"] == train["parent_id"] and s["id"] < train["id"])
        assert by_id[search["id"]]["stage"] == "search"
    pool_ids = {p.id for p in report.pool}
    for point in report.pool:
        assert point.stage in ("seed", "train")
        assert point.parent_id is None or point.parent_id in pool_ids
    assert state["in_flight"] == [] and state["stop_reason"] == report.stop_reason
    frontier = json.loads((tmp_path / "frontier.json").read_text())
    costs = [p.cost for p in report.pool]
    errors = [p.error for p in report.pool]
    band_ids = [report.pool[i].id for i in eps_band(costs, errors, 0.025)]
    assert [p["id"] for p in frontier["band"]] == band_ids
    assert frontier["best"]["error"] == min(errors)
    assert len(json.loads((tmp_path / "pool.json").read_text())) == 13
    assert (tmp_path / "frontier.png").stat().st_size > 1000
    assert any(line.startswith("job") and " train " in line for line in lines)
    assert lines[-1].startswith("stopped: ")


def test_max_cost_stop_rule(nasbench_table, tmp_path):
    objective = NASBenchObjective(nasbench_table)
    cheapest = min(objective.cost_of(c) for c in objective.seed_candidates())
    report = _run(nasbench_table, tmp_path, PetridishSettings(max_cost=cheapest * 1.5))
    assert report.stop_reason.startswith("a model's cost")
    assert max(p.cost for p in report.pool) > cheapest * 1.5


def test_budgets_stop_the_loop(nasbench_table, tmp_path):
    report = _run(nasbench_table, tmp_path / "a", PetridishSettings(max_trained=9))
    assert len(report.pool) == 9 and "max_trained 9" in report.stop_reason
    report = _run(nasbench_table, tmp_path / "b", PetridishSettings(time_budget=20_000))
    assert report.simulated_seconds > 20_000
    assert report.simulated_seconds - max(p.train_seconds for p in report.pool) <= 20_000


def test_seeded_runs_replay_exactly(nasbench_table, tmp_path):
    settings = PetridishSettings(max_pool_size=20, seed=4)
    first = _run(nasbench_table, tmp_path / "a", settings)
    second = _run(nasbench_table, tmp_path / "b", settings)
    assert first.pool == second.pool
    assert _state(tmp_path / "a")["finished"] == _state(tmp_path / "b")["finished"]
    other = _run(nasbench_table, tmp_path / "c", PetridishSettings(max_pool_size=20, seed=5))
    assert other.pool != first.pool


@pytest.mark.parametrize("interrupt_after", [1, 7, 15])
def test_interrupted_then_resumed_equals_uninterrupted(nasbench_table, tmp_path, interrupt_after):
    settings = PetridishSettings(max_pool_size=15, seed=2)
    full = _run(nasbench_table, tmp_path / "full", settings)
    objective = NASBenchObjective(nasbench_table)
    partial = PetridishLoop(objective, InProcessExecutor(), tmp_path / "cut", settings)
    report = partial.run(max_results=interrupt_after)
    assert report.stop_reason == "interrupted" and report.num_jobs == interrupt_after
    saved = _state(tmp_path / "cut")
    assert len(saved["finished"]) == interrupt_after and saved["in_flight"]
    # a new process would build everything anew: a fresh executor, nothing in memory
    resumed = PetridishLoop(
        NASBenchObjective(nasbench_table), InProcessExecutor(), tmp_path / "cut", settings,
        resume=True,
    ).run()
    assert resumed.pool == full.pool
    assert _state(tmp_path / "cut")["finished"] == _state(tmp_path / "full")["finished"]


def test_resume_checks_and_refusals(nasbench_table, tmp_path):
    settings = PetridishSettings(max_pool_size=8)
    with pytest.raises(ValueError, match="nothing to resume"):
        _run(nasbench_table, tmp_path, settings, resume=True)
    _run(nasbench_table, tmp_path, settings)
    with pytest.raises(ValueError, match="state.json exists: resume that run"):
        _run(nasbench_table, tmp_path, settings)
    # Another eps is refused, naming it (larger stop limits extend: test_resume_export).
    with pytest.raises(ValueError, match=r"settings\.eps \(saved 0\.025, this run 0\.5\)"):
        _run(nasbench_table, tmp_path, PetridishSettings(max_pool_size=8, eps=0.5), resume=True)
    # resuming a finished run only rewrites its outputs
    before = _state(tmp_path)
    report = _run(nasbench_table, tmp_path, settings, resume=True)
    assert report.stop_reason == before["stop_reason"]
    assert _state(tmp_path)["finished"] == before["finished"]


def test_failed_jobs_are_replaced_by_new_samples(nasbench_table, tmp_path):
    # complete 4-vertex cells cannot grow in this table: their search jobs fail
    objective = NASBenchObjective(nasbench_table, seed_lengths=(2,))
    settings = PetridishSettings(max_pool_size=30, seed=0, eps=1.0)
    report = run_petridish(objective, InProcessExecutor(), tmp_path, settings)
    state = _state(tmp_path)
    failures = [r for r in state["finished"] if r["failure"] is not None]
    assert failures and all("cannot grow" in r["failure"] for r in failures)
    assert report.num_failed == len(failures)
    assert len(report.pool) == 31
    # each failure was replaced by a new search job, so the pool kept growing to its limit
    searches = [r for r in state["finished"] if r["stage"] == "search"]
    trains = [r for r in state["finished"] if r["stage"] == "train"]
    assert len(searches) >= len(trains) + len(failures)


def test_bad_settings_are_named():
    with pytest.raises(ValueError, match="eps must be"):
        PetridishSettings(eps=-1)
    with pytest.raises(ValueError, match="max_pool_size must be >= 1"):
        PetridishSettings(max_pool_size=0)
    with pytest.raises(ValueError, match="time_budget must be > 0"):
        PetridishSettings(time_budget=0)


def test_damaged_state_is_refused_by_name(nasbench_table, tmp_path):
    settings = PetridishSettings(max_pool_size=8)
    _run(nasbench_table, tmp_path, settings)
    state = tmp_path / "state.json"
    text = state.read_text()
    state.write_text(text[: len(text) // 2])
    with pytest.raises(ValueError, match=r"state.json is not valid JSON .*cannot resume"):
        _run(nasbench_table, tmp_path, settings, resume=True)
    state.write_text(json.dumps({**json.loads(text), "format_version": 99}))
    with pytest.raises(ValueError, match="format_version 99; expected 1"):
        _run(nasbench_table, tmp_path, settings, resume=True)
