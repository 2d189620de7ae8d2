"""Benchmark a launch of many agents on a multi-node Ray cluster while readers poll the store.

N tiny VitCpu agents (one per task: the six built-in tasks, then the 1k suite's) run
`--cycles` cycles with `munet.cluster.launch` on a Ray cluster of a head and `--workers` worker
nodes of one logical CPU each, all on this machine and 127.0.0.1 (munet.cluster.local_cluster),
against one store on a local S3 server (moto, 127.0.0.1). Meanwhile `--readers` reader
processes each open the whole system as one agent after another sees it (`SystemStore.load`,
the agent's own latest state and every other agent's latest end-of-cycle state, checked as
agents check them), pausing `--reader-pause` seconds between loads.

Then the same agents run one at a time, each as a plain `munet run` process (what one machine
without Ray does), on a fresh bucket of the same server, with the same readers polling it.

Prints commits (committed states: one per generation and one per cycle) per minute and reader
loads per minute of both, the errors of both (failed agents, failed `munet run`s, failed
loads: expected 0), and `ratio:` commits per minute on the cluster / one at a time. The launch
is timed from its call to its return (Ray's start-up excluded: on a real cluster it is up
already); every agent task starts a fresh worker process, as every `munet run` starts Python.

Run: `python benchmarks/cluster_load.py --agents 6` (needs munet's ray and s3 extras and moto;
a few minutes on 2 cores). Internal: `--reader URL STOP_FILE RESULT_FILE PAUSE` runs one
reader.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

OVERRIDES = [
    "batch_size=8",
    "num_train_examples_between_validations_max=16",
    "num_validations_per_path_training=2",
    "num_validation_examples_max=16",
    "num_samples_per_cycle=2",
    "max_task_population_size=2",
    "num_layers=1",
    "hparams_mutation_ranges.num_layers=[0, 1, 2]",
    "ds_image_size=8",
    "hparams_mutation_ranges.ds_image_size=[8, 16]",
]
TASKS = [
    "digits", "synth/shape", "synth/color", "synth/count", "synth/position", "synth/size",
    "1k/digits", "1k/synth-conjunction", "1k/synth-clutter", "1k/synth-occlusion",
    "1k/dsprites-location", "1k/dsprites-orientation", "1k/clevr-count", "1k/clevr-distance",
    "1k/norb-azimuth", "1k/norb-elevation",
]  # fmt: skip
S3_ENV = {
    "AWS_ACCESS_KEY_ID": "bench",
    "AWS_SECRET_ACCESS_KEY": "bench",
    "AWS_DEFAULT_REGION": "us-east-1",
}


# The readers -------------------------------------------------------------------------------
def reader(url: str, stop_file: str, result_file: str, pause: float) -> None:
    """Load the system as each agent sees it, in turn, until `stop_file` exists."""
    from munet.system import SystemStore

    store = SystemStore(url)
    loads, errors = 0, []
    while not os.path.exists(stop_file):
        for agent_id in store.agent_ids():
            if "~root_model~" in agent_id:
                continue
            try:
                loaded = store.load(agent_id)
                if loaded.state is not None and not loaded.loaded_states:
                    raise AssertionError(f"loaded {loaded.state.name} without its states")
                loads += 1
            except Exception as e:  # noqa: BLE001 - every failed load is counted and named
                errors.append(f"{agent_id}: {type(e).__name__}: {e}")
            time.sleep(pause)
            if os.path.exists(stop_file):
                break
        else:
            time.sleep(pause)  # no agent yet
    Path(result_file).write_text(json.dumps({"loads": loads, "errors": errors}))


class Readers:
    """`count` reader processes on `url`, stopped (and their counts read) by `stop`."""

    def __init__(self, url: str, count: int, pause: float, workdir: str) -> None:
        self.stop_file = os.path.join(workdir, f"stop-{secrets.token_hex(3)}")
        self.results = [os.path.join(workdir, f"reader-{secrets.token_hex(3)}.json")
                        for _ in range(count)]
        self.processes = [
            subprocess.Popen([sys.executable, os.path.abspath(__file__), "--reader", url,
                              self.stop_file, result, str(pause)])
            for result in self.results
        ]
        self.started = time.perf_counter()

    def stop(self) -> tuple[int, list[str], float]:
        """Loads, errors, and the seconds the readers ran."""
        Path(self.stop_file).touch()
        seconds = time.perf_counter() - self.started
        loads, errors = 0, []
        for process, result in zip(self.processes, self.results, strict=True):
            if process.wait(120) != 0:
                errors.append(f"reader exited {process.returncode}")
                continue
            data = json.loads(Path(result).read_text())
            loads += data["loads"]
            errors += data["errors"]
        return loads, errors, seconds


# The S3 server -----------------------------------------------------------------------------
def start_s3() -> tuple[subprocess.Popen, str]:
    """A moto S3 server on 127.0.0.1 (the AWS_* variables set for it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                raise RuntimeError("the moto S3 server did not start") from None
            time.sleep(0.1)
    endpoint = f"http://127.0.0.1:{port}"
    os.environ.update(S3_ENV, AWS_ENDPOINT_URL=endpoint)
    return server, endpoint


def fresh_store() -> str:
    """`s3://<new bucket>/state` holding a random-init root of the tiny config."""
    import s3fs

    from munet.agents.root import create_root_model
    from munet.config import apply_overrides, get_preset

    bucket = f"munet-load-{secrets.token_hex(4)}"
    s3fs.S3FileSystem(skip_instance_cache=True).mkdir(bucket)
    url = f"s3://{bucket}/state"
    create_root_model(apply_overrides(get_preset("VitCpu"), OVERRIDES), url, "random_init")
    return url


# The two ways to run the agents ------------------------------------------------------------
def run_cluster(url: str, tasks: list[str], cycles: int, address: str) -> tuple[int, list, float]:
    """Commits, errors and seconds of one launch of the agents on the cluster."""
    from munet.cluster import AgentSpec, launch

    commits = 0

    def count(event: dict) -> None:
        nonlocal commits
        commits += event["kind"] in ("generation", "cycle")

    start = time.perf_counter()
    result = launch([AgentSpec("VitCpu", task) for task in tasks], url, cycles,
                    overrides=OVERRIDES, ray_address=address, lease_ttl=10,
                    echo=lambda _line: None, on_event=count)
    seconds = time.perf_counter() - start
    errors = [f"{agent}: {error}" for agent, error in result.failures.items()]
    return commits, errors, seconds


def commits_per_agent(task: str, cycles: int) -> int:
    """The states an agent commits in `cycles` cycles from scratch: one per generation (the
    last of a cycle is its end-of-cycle state)."""
    from munet.agents.runner import make_agent
    from munet.config import apply_overrides, get_preset

    config = apply_overrides(get_preset("VitCpu"), OVERRIDES)
    return cycles * make_agent(config, task, "memory://count", quiet=True).num_generations


def run_sequential(url: str, tasks: list[str], cycles: int) -> tuple[int, list, float]:
    """Commits, errors and seconds of the agents run one at a time as `munet run`."""
    from munet.system import SystemStore

    sets = [a for o in OVERRIDES for a in ("--set", o)]
    errors = []
    start = time.perf_counter()
    for task in tasks:
        done = subprocess.run(
            [sys.executable, "-m", "munet", "run", "--agent", "VitCpu", "--task", task,
             "--cycles", str(cycles), "-d", url, "-q", *sets],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=1800,
        )  # fmt: skip
        if done.returncode != 0:
            errors.append(f"{task}: munet run exited {done.returncode}: {done.stderr[-500:]}")
    seconds = time.perf_counter() - start
    store = SystemStore(url)
    commits, per_agent = 0, commits_per_agent(tasks[0], cycles)  # the same config for all
    for task in tasks:  # Counted for the agents that reached their last cycle.
        latest = store.latest_state("VitCpu~" + task.replace("/", "~"), end_of_cycle=True)
        if latest is not None and latest.cycle == cycles:
            commits += per_agent
        else:
            errors.append(f"{task}: ended at {latest}, not at cycle {cycles}")
    return commits, errors, seconds


def _per_minute(count: int, seconds: float) -> float:
    return 60.0 * count / seconds if seconds > 0 else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=6, help=f"1..{len(TASKS)} (default 6)")
    parser.add_argument("--cycles", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2, help="worker nodes besides the head")
    parser.add_argument("--readers", type=int, default=2)
    parser.add_argument("--reader-pause", type=float, default=0.5)
    args = parser.parse_args(argv)
    if not 1 <= args.agents <= len(TASKS):
        parser.error(f"--agents {args.agents}: expected 1..{len(TASKS)}")
    if args.cycles < 1 or args.workers < 0 or args.readers < 0 or args.reader_pause < 0:
        parser.error("--cycles >= 1, --workers >= 0, --readers >= 0, --reader-pause >= 0")
    tasks = TASKS[: args.agents]

    from munet.cluster.local_cluster import LocalCluster

    server, _endpoint = start_s3()
    try:
        with tempfile.TemporaryDirectory(prefix="munet-load-") as workdir:
            rows = {}
            with LocalCluster(workers=args.workers, cpus_per_node=1) as cluster:
                url = fresh_store()
                readers = Readers(url, args.readers, args.reader_pause, workdir)
                commits, errors, seconds = run_cluster(url, tasks, args.cycles, cluster.address)
                rows["cluster"] = (commits, errors, seconds, *readers.stop())
            url = fresh_store()
            readers = Readers(url, args.readers, args.reader_pause, workdir)
            commits, errors, seconds = run_sequential(url, tasks, args.cycles)
            rows["one at a time"] = (commits, errors, seconds, *readers.stop())
    finally:
        server.terminate()
        server.wait(30)

    nodes = f"{args.workers + 1} nodes of 1 CPU"
    total_errors = 0
    for name, (commits, errors, seconds, loads, load_errors, read_s) in rows.items():
        where = f"cluster ({nodes})" if name == "cluster" else "one at a time (munet run)"
        print(f"{where}: {args.agents} agents x {args.cycles} cycles, {commits} commits in "
              f"{seconds:.1f}s: {_per_minute(commits, seconds):.1f} commits/min; "
              f"{args.readers} readers: {loads} loads, {_per_minute(loads, read_s):.1f} "
              f"loads/min; errors: {len(errors) + len(load_errors)}")
        for error in [*errors, *load_errors][:5]:
            print(f"  error: {error}")
        total_errors += len(errors) + len(load_errors)
    cluster_rate = _per_minute(rows["cluster"][0], rows["cluster"][2])
    sequential_rate = _per_minute(rows["one at a time"][0], rows["one at a time"][2])
    ratio = cluster_rate / sequential_rate if sequential_rate else float("nan")
    print(f"errors: {total_errors}")
    print(f"ratio: commits/min, cluster ({nodes}) / one at a time: {ratio:.2f}")
    return 1 if total_errors else 0


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--reader":
        reader(sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]))
    else:
        sys.exit(main())
