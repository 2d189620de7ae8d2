import json

import pytest

from munet.nasbench.runner import strategy_settings
from munet.search import make_strategy
from munet.search.driver import SearchRun, best_so_far
from munet.search.executors import InProcessExecutor
from munet.search.objectives.nasbench import NASBenchObjective

STRATEGIES = ["random", "regularized_evolution", "evolution", "petridish"]
SMALL = {"population_size": 8, "sample_size": 3, "tournament_size": 3, "num_seeds": 4}


def _strategy(name, objective, seed=0):
    options = {k: v for k, v in SMALL.items() if k in _accepted(name)}
    return make_strategy(name, objective.search_space(), seed, **strategy_settings(name, options))


def _accepted(name):
    from munet.search import strategy_options

    return strategy_options(name)


def _run(table, out, name="regularized_evolution", workers=1, **kwargs):
    objective = NASBenchObjective(table)
    run = SearchRun(
        _strategy(name, objective), objective, InProcessExecutor(workers), out, **kwargs
    )
    return run


@pytest.mark.parametrize("name", STRATEGIES)
@pytest.mark.parametrize("workers", [1, 3])
def test_seeded_in_process_runs_replay_exactly(nasbench_table, tmp_path, name, workers):
    first = _run(nasbench_table, tmp_path / "a", name, workers, max_trials=25).run()
    second = _run(nasbench_table, tmp_path / "b", name, workers, max_trials=25).run()
    assert len(first.results) == 25
    assert first.results == second.results
    assert first.best == second.best


def test_keeps_workers_trials_in_flight_and_tells_each_result(nasbench_table, tmp_path):
    objective = NASBenchObjective(nasbench_table)
    strategy = _strategy("random", objective)
    executor = InProcessExecutor(4)
    in_flight_seen = []
    real_wait = executor.wait

    def wait():
        in_flight_seen.append(len(executor.in_flight()))
        return real_wait()

    executor.wait = wait
    report = SearchRun(strategy, objective, executor, tmp_path, max_trials=12).run()
    assert in_flight_seen[:9] == [4] * 9  # topped up after every result
    assert in_flight_seen[9:] == [3, 2, 1]  # then drained at the trial limit
    assert strategy.num_told == 12 == len(report.results)


def test_time_budget_and_best_so_far(nasbench_table, tmp_path):
    report = _run(nasbench_table, tmp_path, time_budget=30_000).run()
    assert report.simulated_seconds > 30_000
    assert report.stop_reason.endswith("budget 30000")
    curve = best_so_far(report.results)
    assert [c[0] for c in curve] == sorted(c[0] for c in curve)
    assert [c[1] for c in curve] == sorted(c[1] for c in curve)
    assert curve[-1][1] == report.best["objective"]
    assert curve[-1][2] == report.best["metrics"]["test_accuracy"]


@pytest.mark.parametrize("name", STRATEGIES)
def test_interrupted_then_resumed_equals_uninterrupted(nasbench_table, tmp_path, name):
    full = _run(nasbench_table, tmp_path / "full", name, 3, max_trials=20).run()
    cut = _run(nasbench_table, tmp_path / "cut", name, 3, max_trials=20)
    assert cut.run(max_results=9).stop_reason == "interrupted"
    state = json.loads((tmp_path / "cut" / "state.json").read_text())
    assert len(state["results"]) == 9 and state["strategy_state"]["pending"]
    resumed = _run(nasbench_table, tmp_path / "cut", name, 3, max_trials=20, resume=True).run()
    assert resumed.results == full.results


def test_resume_refusals(nasbench_table, tmp_path):
    with pytest.raises(ValueError, match="nothing to resume"):
        _run(nasbench_table, tmp_path, max_trials=5, resume=True)
    _run(nasbench_table, tmp_path, max_trials=5).run()
    with pytest.raises(ValueError, match="exists: resume that run"):
        _run(nasbench_table, tmp_path, max_trials=5)
    # Another trial seed is refused, naming it (a larger max_trials extends: test_resume_export).
    with pytest.raises(ValueError, match=r"1 setting\(s\) differ .*: seed \(saved 0, this run 1\)"):
        _run(nasbench_table, tmp_path, max_trials=5, seed=1, resume=True)
    with pytest.raises(ValueError, match="max_trials must be >= 1"):
        _run(nasbench_table, tmp_path / "x", max_trials=0)
