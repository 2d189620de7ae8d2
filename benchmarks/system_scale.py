"""Benchmark how an agent's cycle start scales with the number of agents in the system.

At every cycle start an agent reads its own latest state and every other agent's latest
end-of-cycle manifest (`SystemStore.load`), so the work grows with the system. This script
builds synthetic systems of `--sizes` agents (default 50, 200, 1000) with the real store: one
root model, then two cycles per agent; in the second, every agent's population holds the
published path of every other agent (as in a system where all agents have run), and its path
shares components of a random other agent and trains its own head and last block.

Then, interleaving the sizes over `--rounds` rounds, it opens the system as one agent at its
next cycle start (manifests only, no tensors: tensors are read when used) through a counting
filesystem, and prints per size: load time, load time per agent in the system, bytes read and
requests per agent, and the manifest size. The target is a flat cost per agent: the ratio of
the per-agent load time at the largest size to that at the smallest (the baseline, measured in
the same run) within 2x, and the same for bytes read per agent.

An object store adds a round trip per request; a second measurement, at the smallest and largest
size, reads through the fsspec code path (as on S3) with `--latency-ms` added to every request.

Run: `python benchmarks/system_scale.py` (a few minutes on 2 busy cores; ~100 MB in a temp dir).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import fsspec  # noqa: E402
import torch  # noqa: E402

from munet.system import Population, SystemStore  # noqa: E402
from munet.system.fs import LocalFS  # noqa: E402
from munet.system.fsspec_fs import FsspecFS  # noqa: E402
from munet.system.instrumented_fs import InstrumentedFS  # noqa: E402

CLASS = "Bench"
ROOT = f"{CLASS}~root_model~random_init"
NAMES = ("embedding", "encoderblock_0", "encoderblock_1", "encoderblock_2", "head")
OWN = ("encoderblock_2", "head")  # trained (cloned) by each agent; the rest is shared
WIDTH = 16


def _tensors(generator: torch.Generator) -> dict[str, torch.Tensor]:
    return {"kernel": torch.randn(WIDTH, WIDTH, generator=generator)}


def _hparams(rng: random.Random) -> dict:
    return {"num_layers": 3, "ds_image_size": rng.choice([8, 16, 24]), "opt_lr": 0.1}


def build_system(root: str, num_agents: int, seed: int = 0) -> list[str]:
    """A system of `num_agents` agents of class `Bench` (two committed cycles each)."""
    rng = random.Random(seed)
    generator = torch.Generator().manual_seed(seed)
    store = SystemStore(root)
    root_pop = Population(ROOT)
    root_path = root_pop.new_path(
        _hparams(rng), [root_pop.new_component(n, _tensors(generator)) for n in NAMES], None
    )
    root_pop.add_path(root_path)
    with store.lock(ROOT):
        store.save_state(root_pop, 1, 0)
    agents = [f"{CLASS}~task{i:04d}" for i in range(num_agents)]
    published = {}
    populations = {}
    for cycle in (1, 2):
        for agent_id in agents:
            pop = populations.get(agent_id) or Population(agent_id)
            populations[agent_id] = pop
            # What the agent saw at this cycle start: the root and every other agent's path.
            pop.paths.clear()
            pop.add_path(root_path)
            for other, path in published.items():
                if other != agent_id:
                    pop.add_path(path)
            source = root_path
            if cycle == 2:
                source = published[rng.choice([a for a in agents if a != agent_id])]
            comps = [
                pop.new_component(c.name, _tensors(generator)) if c.name in OWN else c
                for c in source.components
            ]
            path = pop.new_path(_hparams(rng), comps, source)
            path.metrics.update(quality=rng.random(), accounted_params=1000.0, flops=1e6)
            pop.add_path(path)
            with store.lock(agent_id):
                store.save_state(pop, cycle, 0, {"name": CLASS}, published=[path])
            published[agent_id] = path
    return agents


def measure_load(
    root: str, agent_id: str, latency: float, object_store: bool = False
) -> dict[str, float]:
    """One cycle-start load of `agent_id` through a counting (and optionally slow) fs; with
    `object_store`, through the fsspec code path (no atomic renames: a state counts once its
    manifest exists), as on S3."""
    inner = FsspecFS(fsspec.filesystem("file")) if object_store else LocalFS()
    fs = InstrumentedFS(inner, latency=latency)
    store = SystemStore(root, fs=fs)
    start = time.perf_counter()
    loaded = store.load(agent_id, [CLASS])
    seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "bytes": fs.bytes_read,
        "requests": fs.total_requests,
        "states": len(loaded.loaded_states),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="50,200,1000", help="system sizes (agents)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved measurement rounds")
    parser.add_argument("--latency-ms", type=float, default=2.0, help="simulated round trip")
    parser.add_argument("--keep", default=None, help="build the systems here and keep them")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    base = args.keep or tempfile.mkdtemp(prefix="munet-scale-")
    try:
        roots = {}
        for n in sizes:
            roots[n] = os.path.join(base, f"system-{n}")
            if not os.path.isdir(roots[n]):
                start = time.perf_counter()
                build_system(roots[n], n)
                print(f"built a system of {n} agents in {time.perf_counter() - start:.0f}s")
        probe = f"{CLASS}~task0000"
        results: dict[int, list[dict]] = {n: [] for n in sizes}
        for _ in range(args.rounds):
            for n in sizes:
                results[n].append(measure_load(roots[n], probe, 0.0))
        print()
        print(f"{'agents':>7} {'load s':>8} {'ms/agent':>9} {'KB read':>9} {'B/agent':>8} "
              f"{'req/agent':>9} {'manifest B':>10}")
        per_agent = {}
        bytes_per_agent = {}
        for n in sizes:
            runs = results[n]
            seconds = statistics.median(r["seconds"] for r in runs)
            states = runs[0]["states"]
            per_agent[n] = seconds / states
            bytes_per_agent[n] = runs[0]["bytes"] / states
            store = SystemStore(roots[n])
            state = store.latest_state(probe)
            manifest = os.path.getsize(os.path.join(roots[n], probe, state.name, "manifest.json"))
            print(f"{n:>7} {seconds:>8.3f} {1000 * per_agent[n]:>9.3f} "
                  f"{runs[0]['bytes'] / 1024:>9.0f} {bytes_per_agent[n]:>8.0f} "
                  f"{runs[0]['requests'] / states:>9.2f} {manifest:>10}")
        small, large = sizes[0], sizes[-1]
        print()
        print(f"ratio: load time per agent, {large} vs {small} agents: "
              f"{per_agent[large] / per_agent[small]:.2f} (target <= 2)")
        print(f"ratio: bytes read per agent, {large} vs {small} agents: "
              f"{bytes_per_agent[large] / bytes_per_agent[small]:.2f} (target <= 2)")
        if args.latency_ms > 0:
            latency = args.latency_ms / 1000
            slow = {n: measure_load(roots[n], probe, latency, True) for n in (small, large)}
            slow_per_agent = {}
            for n in (small, large):
                r = slow[n]
                slow_per_agent[n] = r["seconds"] / r["states"]
                print(f"fsspec path, {args.latency_ms:g} ms per request, {n} agents: load "
                      f"{r['seconds']:.2f}s ({1000 * slow_per_agent[n]:.2f} ms per agent, "
                      f"{r['requests']} requests)")
            print(f"ratio: load time per agent with {args.latency_ms:g} ms requests, {large} vs "
                  f"{small} agents: {slow_per_agent[large] / slow_per_agent[small]:.2f} "
                  "(target <= 2)")
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
