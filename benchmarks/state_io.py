"""Benchmark the system store: save cost vs system size, lazy vs eager opening.

Builds a synthetic system of `--agents` agents x `--paths` paths of ViT Ti/16 3-layer
components (width 192, MLP 768, 3 heads, patch 16, 32px images -> posembed (1, 5, 192)); the
tensors are built here, this package does not import munet.models. Each agent's paths freeze
the components of a root model or of an earlier agent's published path and clone (train) the
last block, the final norm and the head, as µNet agents do.

Prints:
  1. save time of one agent's end-of-cycle state against the bytes of new components it
     writes, by system size (it should stay flat), as a ratio to writing the same tensors
     with plain `safetensors.torch.save_file` + fsync in the same run;
  2. time and peak RSS of opening the whole system lazily (manifests only) vs eagerly (every
     tensor read and sha256-verified, `load_tensors` in threads), against plain safetensors
     `load_file` of every shard with every tensor copied once (`plain_read`) or hashed with
     sha256 (`plain_sha256`), each in a fresh interpreter, as ratios.

Run: `python benchmarks/state_io.py` (about a minute or two; ~450 MB in a temp dir).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

from munet.system import Component, Population, SystemStore  # noqa: E402

WIDTH, MLP, HEADS, PATCH, TOKENS, CLASSES = 192, 768, 3, 16, 5, 10
ROOT = "Bench~root_model~random_init"
CLONED = ("encoderblock_2", "encoder_norm", "head")


def vit_ti_components(generator: torch.Generator) -> dict[str, dict[str, torch.Tensor]]:
    """Tensors of a ViT Ti/16, 3 layers, 32px, split into µNet components."""

    def rand(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=generator) * 0.02

    head_dim = WIDTH // HEADS
    comps = {
        "embedding": {"kernel": rand(WIDTH, 3, PATCH, PATCH), "bias": rand(WIDTH)},
        "cls": {"cls": rand(1, 1, WIDTH)},
        "posembed_input": {"pos_embedding": rand(1, TOKENS, WIDTH)},
    }
    for i in range(3):
        block = {
            "LayerNorm_0.scale": torch.ones(WIDTH),
            "LayerNorm_0.bias": rand(WIDTH),
            "LayerNorm_2.scale": torch.ones(WIDTH),
            "LayerNorm_2.bias": rand(WIDTH),
            "MlpBlock_3.Dense_0.kernel": rand(WIDTH, MLP),
            "MlpBlock_3.Dense_0.bias": rand(MLP),
            "MlpBlock_3.Dense_1.kernel": rand(MLP, WIDTH),
            "MlpBlock_3.Dense_1.bias": rand(WIDTH),
            "MultiHeadDotProductAttention_1.out.kernel": rand(HEADS, head_dim, WIDTH),
            "MultiHeadDotProductAttention_1.out.bias": rand(WIDTH),
        }
        for proj in ("query", "key", "value"):
            block[f"MultiHeadDotProductAttention_1.{proj}.kernel"] = rand(WIDTH, HEADS, head_dim)
            block[f"MultiHeadDotProductAttention_1.{proj}.bias"] = rand(HEADS, head_dim)
        comps[f"encoderblock_{i}"] = block
    comps["encoder_norm"] = {"scale": torch.ones(WIDTH), "bias": rand(WIDTH)}
    comps["head"] = {"kernel": rand(WIDTH, CLASSES), "bias": rand(CLASSES)}
    return comps


def baseline_write(components: list[Component], folder: str) -> float:
    """Seconds to write the same tensors with plain safetensors + fsync."""
    tensors = {f"{c.key}/{n}": t.contiguous() for c in components for n, t in c.tensors.items()}
    path = os.path.join(folder, "baseline.safetensors")
    start = time.perf_counter()
    save_file(tensors, path)
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
    elapsed = time.perf_counter() - start
    os.remove(path)
    return elapsed


def build_system(root: str, agents: int, paths: int, seed: int) -> list[dict[str, float]]:
    """Create the system; return one record per agent save."""
    rng = random.Random(seed)
    generator = torch.Generator().manual_seed(seed)
    store = SystemStore(root)
    with store.lock(ROOT):
        pop = Population(ROOT)
        comps = [
            pop.new_component(name, tensors, train_locks=[ROOT])
            for name, tensors in vit_ti_components(generator).items()
        ]
        pop.add_path(pop.new_path({"num_layers": 3}, comps, None))
        store.save_state(pop, 0, 0)
    scratch = tempfile.mkdtemp(prefix="state_io_baseline_", dir=os.path.dirname(root))
    records = []
    for k in range(agents):
        agent = f"Bench~task{k:03d}"
        with store.lock(agent):
            loaded = store.load(agent)
            pop = loaded.population
            candidates = [p for ps in pop.paths.values() for p in ps]
            pop.start_cycle()
            for i in range(paths):
                parent = rng.choice(candidates)
                comps = []
                for c in parent.components:
                    if c.name in CLONED or c.is_trainable():
                        clone = pop.clone_component(c)
                        clone.set_tensors(
                            {
                                n: torch.randn(t.shape, generator=generator)
                                for n, t in c.tensors.items()
                            }
                        )
                        comps.append(clone)
                    else:
                        comps.append(c)
                path = pop.new_path({"num_layers": 3, "i": i}, comps, parent)
                path.metrics["quality"] = rng.random()
                # The audit metrics a singlepath agent records (read by `munet report`).
                path.metrics.update(
                    cycle_id=0,
                    generation_id=i,
                    improved=True,
                    test_quality=path.metrics["quality"] - 0.01,
                    mutations=["opt_lr : 0.1 --- (incremental, p=0.2) --> 0.05"],
                    reuse=f"shared from {parent.agent_id}: embedding",
                )
                pop.add_path(path)
            new = [c for p in pop.own_paths for c in p.comps_only() if c.agent_id == agent]
            new_bytes = sum(c.num_bytes for c in new)
            # All own paths published: end of cycle without pruning to one path, so each agent
            # publishes `paths` paths (the benchmark's system size).
            start = time.perf_counter()
            state = store.save_state(pop, 1, 0, {"agent": agent})
            save_s = time.perf_counter() - start
        manifest_bytes = os.path.getsize(os.path.join(root, agent, state.name, "manifest.json"))
        records.append(
            {
                "agents_before": k + 1,  # root + k agents already in the system
                "new_bytes": new_bytes,
                "save_s": save_s,
                "baseline_s": baseline_write(new, scratch),
                "manifest_bytes": manifest_bytes,
            }
        )
    shutil.rmtree(scratch, ignore_errors=True)
    return records


OPEN_SNIPPET = r"""
import hashlib, json, os, resource, sys, time
sys.path.insert(0, {repo!r})
import torch
from safetensors.torch import load_file
from munet.system import SystemStore, load_tensors
mode, root = {mode!r}, {root!r}
def rss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
before = rss_kb()
start = time.perf_counter()
torch.set_num_threads(1)
if mode.startswith("plain"):
    # Baselines: plain safetensors load_file of every shard (it maps the file lazily), then
    # every tensor copied once (plain_read) or hashed with sha256 as munet does (plain_sha256).
    count = 0
    for dirpath, _, files in os.walk(root):
        for name in files:
            if name.endswith(".safetensors"):
                tensors = load_file(os.path.join(dirpath, name))
                if mode == "plain_read":
                    tensors = {{k: t.clone() for k, t in tensors.items()}}
                else:
                    for t in tensors.values():
                        hashlib.sha256(t.reshape(-1).view(torch.uint8).numpy().data).digest()
                count += len(tensors)
                globals().setdefault("keep", []).append(tensors)
else:
    pop = SystemStore(root).load("Reader~all").population
    count = 0
    if mode == "eager":
        comps = {{c.key: c for p in pop.all_paths() for c in p.comps_only()}}
        load_tensors(comps.values())
        count = sum(len(c.tensors) for c in comps.values())
elapsed = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({{"mode": mode, "seconds": elapsed, "peak_kb": peak - before,
                   "rss_after_kb": rss_kb() - before, "tensors": count}}))
"""


def measure_open(root: str, mode: str) -> dict[str, float]:
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = OPEN_SNIPPET.format(repo=repo, mode=mode, root=root)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agents", type=int, default=50)
    parser.add_argument("--paths", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dir", default=None, help="where to build (default: a temp dir)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    base = args.dir or tempfile.mkdtemp(prefix="state_io_")
    root = os.path.join(base, "state")
    if os.path.exists(root):
        shutil.rmtree(root)
    try:
        start = time.perf_counter()
        records = build_system(root, args.agents, args.paths, args.seed)
        build_s = time.perf_counter() - start
        total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(root) for f in fs)
        print(
            f"system: {args.agents} agents x {args.paths} paths of ViT Ti/16 3-layer components, "
            f"{total / 1e6:.0f} MB on disk, built in {build_s:.1f} s"
        )
        print("\n1. save time of an end-of-cycle state vs bytes of new components, by system size")
        print(
            f"{'agents':>10} {'new MB':>7} {'save ms':>8} {'MB/s':>7} "
            f"{'vs plain safetensors':>21} {'manifest KB':>12}"
        )
        bucket = max(1, args.agents // 5)
        for lo in range(0, len(records), bucket):
            rows = records[lo : lo + bucket]
            new_mb = statistics.mean(r["new_bytes"] for r in rows) / 1e6
            save_s = statistics.median(r["save_s"] for r in rows)
            ratio = statistics.median(r["save_s"] / r["baseline_s"] for r in rows)
            manifest_kb = statistics.mean(r["manifest_bytes"] for r in rows) / 1e3
            span = f"{rows[0]['agents_before']}-{rows[-1]['agents_before']}"
            print(
                f"{span:>10} {new_mb:7.2f} {save_s * 1e3:8.1f} {new_mb / save_s:7.1f} "
                f"{ratio:20.2f}x {manifest_kb:12.1f}"
            )
        first = statistics.median(r["save_s"] for r in records[:bucket])
        last = statistics.median(r["save_s"] for r in records[-bucket:])
        print(f"   save time, last bucket / first bucket: {last / first:.2f}x")
        ratio_first = statistics.median(r["save_s"] / r["baseline_s"] for r in records[:bucket])
        ratio_last = statistics.median(r["save_s"] / r["baseline_s"] for r in records[-bucket:])
        print(
            f"   save / plain-safetensors ratio, last bucket / first bucket: "
            f"{ratio_last / ratio_first:.2f}x"
        )

        print("\n2. opening the whole system (fresh interpreter each)")
        modes = ("lazy", "eager", "plain_read", "plain_sha256")
        results = {mode: measure_open(root, mode) for mode in modes}
        for mode, r in results.items():
            peak_mb = r["peak_kb"] / 1024
            print(
                f"   {mode:>12}: {r['seconds'] * 1e3:8.1f} ms, peak RSS +{peak_mb:7.1f} MB"
                f" ({r['tensors']} tensors)"
            )
        lazy, eager = results["lazy"], results["eager"]
        print(
            f"   lazy / eager: time {lazy['seconds'] / eager['seconds']:.3f}x, "
            f"peak memory {max(lazy['peak_kb'], 1) / max(eager['peak_kb'], 1):.3f}x"
        )
        for base in ("plain_read", "plain_sha256"):
            plain = results[base]
            print(
                f"   eager / {base}: time {eager['seconds'] / plain['seconds']:.2f}x, "
                f"peak memory {max(eager['peak_kb'], 1) / max(plain['peak_kb'], 1):.2f}x"
            )
    finally:
        if args.dir is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
