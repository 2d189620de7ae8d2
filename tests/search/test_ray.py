"""Executors and searches on a real local Ray instance (127.0.0.1, 2 CPUs), shared by the module.

The instance is started once for all tests here (Ray takes seconds to start); the slow tests
train tiny ViTs and kill a real driver process.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from munet.search import make_strategy
from munet.search.driver import SearchRun
from munet.search.executors import RayExecutor, bind_local_ray_to_loopback, init_ray_quietly
from munet.search.objectives.nasbench import NASBenchObjective
from munet.search.objectives.vit import VitObjective
from munet.search.petridish_loop import PetridishSettings, run_petridish

from .conftest import tiny_vit_settings

os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
ray = pytest.importorskip(
    "ray", reason="the ray extra is not installed (pip install munet-evolve[ray])"
)


@pytest.fixture(scope="module")
def ray_address():
    bind_local_ray_to_loopback()
    before = signal.getsignal(signal.SIGTERM)
    init_ray_quietly(
        ray, num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
        log_to_driver=False,
    )  # fmt: skip
    try:
        # ray.init's own SIGTERM handler (sys.exit) would skip munet's stop and outlive it.
        assert signal.getsignal(signal.SIGTERM) is before
        address = ray.get_runtime_context().gcs_address
        assert address.startswith("127.0.0.1:"), address
        yield address
    finally:
        ray.shutdown()


def test_results_come_back_as_they_finish(ray_address):
    def sleepy(seconds):
        time.sleep(seconds)
        return seconds

    def broken(_):
        raise KeyError("no such thing")

    executor = RayExecutor(2)
    assert executor.num_workers == 2  # the instance's CPUs / 1 CPU per job
    executor.submit(0, sleepy, 3.0)
    executor.submit(1, sleepy, 0.0)
    first = executor.wait()
    assert [o.job_id for o in first] == [1] and first[0].result == 0.0
    executor.submit(2, broken, None)
    outcomes = []
    while executor.in_flight():
        outcomes += executor.wait()
    by_id = {o.job_id: o for o in outcomes}
    assert by_id[0].result == 3.0
    assert not by_id[2].ok and "no such thing" in by_id[2].error
    executor.close()
    assert ray.is_initialized()  # an instance it did not start stays up


def test_worker_killed_mid_trial_is_retried(ray_address, tmp_path):
    def dies_on_first_attempt(path):
        with open(path, "a") as handle:
            handle.write(f"{os.getpid()}\n")
        with open(path) as handle:
            attempts = len(handle.read().split())
        if attempts == 1:
            os.kill(os.getpid(), signal.SIGKILL)  # the worker process dies mid-job
        return attempts

    executor = RayExecutor(1, max_retries=2)
    executor.submit(0, dies_on_first_attempt, str(tmp_path / "attempts"))
    [outcome] = executor.wait()
    assert outcome.ok and outcome.result == 2
    pids = (tmp_path / "attempts").read_text().split()
    assert len(pids) == 2 and pids[0] != pids[1]
    # without retries the death is reported as the job's failure
    no_retry = RayExecutor(1, max_retries=0)
    no_retry.submit(0, dies_on_first_attempt, str(tmp_path / "again"))
    [outcome] = no_retry.wait()
    assert not outcome.ok and outcome.error


def _marks_start_and_stop(args):
    folder, name = args
    (Path(folder) / f"started-{name}").touch()
    try:
        for _ in range(60_000):  # short steps, like training
            time.sleep(0.01)
    except KeyboardInterrupt:
        (Path(folder) / f"stopped-{name}").touch()
        raise
    return name


def test_cancel_all_stops_running_jobs_and_queued_ones_never_start(ray_address, tmp_path):
    executor = RayExecutor(2)
    for job_id in range(3):  # two run on the instance's two CPUs; the third waits for one
        executor.submit(job_id, _marks_start_and_stop, (str(tmp_path), job_id))
    deadline = time.monotonic() + 60
    while len(list(tmp_path.glob("started-*"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sorted(executor.cancel_all()) == [0, 1, 2]
    assert executor.in_flight() == []
    while len(list(tmp_path.glob("stopped-*"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert {p.name for p in tmp_path.glob("stopped-*")} == {"stopped-0", "stopped-1"}
    # A job submitted after the cancel runs (a fresh flag); the queued one was dispatched
    # ahead of it and returned without running.
    executor.submit(3, len, "abc")
    [outcome] = executor.wait()
    assert outcome.ok and outcome.result == 3
    assert not (tmp_path / "started-2").exists()


def test_petridish_on_nasbench_finishes_and_writes_its_frontier(ray_address, nasbench_table,
                                                                tmp_path):
    objective = NASBenchObjective(nasbench_table)
    report = run_petridish(
        objective, RayExecutor(2), tmp_path, PetridishSettings(max_pool_size=12, seed=1)
    )
    assert report.stop_reason == "pool holds 13 models > max_pool_size 12"
    frontier = json.loads((tmp_path / "frontier.json").read_text())
    assert frontier["hull"] and frontier["best"]["error"] == min(p.error for p in report.pool)
    assert (tmp_path / "frontier.png").exists() and (tmp_path / "pool.json").exists()
    state = json.loads((tmp_path / "state.json").read_text())
    ids = [r["id"] for r in state["finished"]]
    assert len(ids) == len(set(ids)) and state["in_flight"] == []


def test_ask_tell_driver_keeps_two_trials_in_flight_on_ray(ray_address, nasbench_table,
                                                           tmp_path):
    objective = NASBenchObjective(nasbench_table)
    strategy = make_strategy(
        "regularized_evolution", objective.search_space(), 0, population_size=6, sample_size=2,
        mutation_prob=1.0,
    )
    report = SearchRun(strategy, objective, RayExecutor(2), tmp_path, max_trials=14).run()
    assert len(report.results) == 14 and strategy.num_told == 14
    assert sorted(r["trial"] for r in report.results) == list(range(14))


def _cli(objective, out, address, *extra):
    args = [
        sys.executable, "-m", "munet", "search", "--strategy", "petridish",
        "--objective", objective, "--out", str(out), "--ray-address", address,
        "--workers", "2", "--seed", "3", *extra,
    ]
    if objective.startswith("vit:"):
        for key, value in tiny_vit_settings().items():
            value = list(value) if isinstance(value, tuple) else value
            args += ["--set", f"{key}={json.dumps(value)}"]
    return args


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["nasbench", "vit"])
def test_driver_killed_then_resumed_does_not_rerun_finished_jobs(
    ray_address, nasbench_table, tmp_path, kind
):
    out = tmp_path / "run"
    if kind == "vit":
        objective, pool_size, kill_after = "vit:digits", 6, 5
    else:  # NAS-Bench jobs take milliseconds: a longer run, killed early
        objective, pool_size, kill_after = f"nasbench:{nasbench_table}", 40, 8
    limits = ["--max-pool-size", str(pool_size)]
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    driver = subprocess.Popen(
        _cli(objective, out, ray_address, *limits), env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    state_path = out / "state.json"
    deadline = time.monotonic() + 240
    finished = []
    try:
        while time.monotonic() < deadline and driver.poll() is None:
            if state_path.exists():
                finished = json.loads(state_path.read_text())["finished"]
                if len(finished) >= kill_after:
                    break
            time.sleep(0.05)
    finally:
        driver.send_signal(signal.SIGKILL)
        output = driver.communicate(timeout=60)[0].decode()
    assert driver.returncode == -signal.SIGKILL, output[-3000:]
    before = json.loads(state_path.read_text())
    assert len(before["finished"]) >= kill_after, output[-3000:]
    assert before["stop_reason"] is None and before["in_flight"]
    written = {}
    for record in before["finished"]:
        path = out / "models" / f"{record['id']:05d}-{record['stage']}.safetensors"
        if kind == "vit":
            written[path] = path.stat().st_mtime_ns

    resumed = subprocess.run(
        _cli(objective, out, ray_address, *limits, "--resume"), env=env, capture_output=True,
        text=True, timeout=400,
    )
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert "frontier (lower convex hull" in resumed.stdout
    after = json.loads(state_path.read_text())
    assert after["stop_reason"] == f"pool holds {pool_size + 1} models > max_pool_size {pool_size}"
    assert after["finished"][: len(before["finished"])] == before["finished"]
    ids = [r["id"] for r in after["finished"]]
    assert len(ids) == len(set(ids))
    for path, mtime in written.items():  # finished jobs' models were not trained again
        assert path.stat().st_mtime_ns == mtime, path
    for name in ("frontier.png", "frontier.json", "pool.json"):
        assert (out / name).exists()
    pool = {p["id"]: p for p in json.loads((out / "pool.json").read_text())}
    assert len(pool) == pool_size + 1
    grown = [p for p in pool.values() if p["stage"] == "train"]
    assert grown and {p["stage"] for p in pool.values()} == {"seed", "train"}
    if kind == "vit":  # grown ViTs: one more block than their parent, more FLOPs, weights
        check = VitObjective("digits", **tiny_vit_settings())
        for point in grown:
            parent = pool[point["parent_id"]]
            assert point["candidate"]["num_layers"] == parent["candidate"]["num_layers"] + 1
            assert point["cost"] == check.cost_of(point["candidate"]) > parent["cost"]
            assert (out / point["weights"]).exists()
