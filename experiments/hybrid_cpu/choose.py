"""Choose the CPU hybrid preset's model and optimizer on the own-data task's choice draw.

The task is benchmarks/own_data_vs_cnn.py's (5 drawn shape classes, 300 training PNGs per
class at 48 px) with its choice draw (100 per class, seed + 20,000) as the figure each
candidate is read on; the held-out draw (the test) is never written here. Each candidate runs
the README's own-data commands (root random_init, run 2 cycles, export, predict) through
munet_sizes.py, so candidate sizes need not ship.

Run: ``python experiments/hybrid_cpu/choose.py --out experiments/hybrid_cpu/results NAME ...``
(each candidate's JSON is written once; a rerun skips the done ones).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from own_data_vs_cnn import write_folder  # noqa: E402

# The candidates that were run: overrides on the preset (`--set` items).
CANDIDATES = {
    "preset": [],
    "plain_sgd": [],
    "plain_adamw": ["opt_optimizer=adamw", "opt_lr=0.002"],
    "h16x2_sgd": ["model=h16x2", "ds_image_size=32",
                  "hparams_mutation_ranges.ds_image_size=[16, 24, 32]"],
    "h16x2_adamw": ["model=h16x2", "ds_image_size=32", "opt_optimizer=adamw", "opt_lr=0.002",
                    "hparams_mutation_ranges.ds_image_size=[16, 24, 32]"],
    "h8x2_adamw": ["model=h8x2", "ds_image_size=32", "opt_optimizer=adamw", "opt_lr=0.002",
                   "hparams_mutation_ranges.ds_image_size=[16, 24, 32]"],
}  # fmt: skip


def root_tag(root: str | None) -> str:
    """How a result's file name says which root it started from."""
    return "default" if root is None else "random" if root == "random_init" else "file"


def munet(*argv: str) -> str:
    done = subprocess.run(
        [sys.executable, str(HERE / "munet_sizes.py"), *argv], capture_output=True, text=True
    )
    if done.returncode:
        raise SystemExit(f"munet {' '.join(argv)} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return done.stdout


def accuracy(export: Path, folder: Path) -> float:
    predictions = json.loads(munet("predict", str(export), str(folder), "--format", "json"))
    right = sum(Path(p["file"]).parent.name == p["predictions"][0]["class"] for p in predictions)
    return right / len(predictions)


def run(name: str, seed: int, work: Path, agent: str, root: str | None) -> dict:
    train = write_folder(work / "data" / f"train{seed}", 300, seed=seed)
    choice = write_folder(work / "data" / f"choice{seed}", 100, seed=seed + 20_000)
    tag = f"{agent}_{name}_{root_tag(root)}_s{seed}"
    state, export = work / tag / "state", work / tag / "export"
    overrides = [f"seed={seed}", *CANDIDATES[name]]
    sets = [a for item in overrides for a in ("--set", item)]
    # A root file (a munet pretrain run's root.safetensors) is the root checkpoint.
    root_args = ["--root", "checkpoint", "--set", f"checkpoint_path={root}"] if root else []
    if root == "random_init":
        root_args = ["--root", "random_init"]
    start = time.perf_counter()
    munet("root", "--agent", agent, "-d", str(state), *sets, *root_args, "-q")
    munet("run", "--agent", agent, "--task", "shapes", "--data", f"folder:{train}",
          "--cycles", "2", "-d", str(state), *sets, "-q")  # fmt: skip
    munet("export", "-d", str(state), "--task", "shapes", "--out", str(export))
    seconds = time.perf_counter() - start
    config = json.loads((export / "config.json").read_text())
    return {
        "candidate": name,
        "agent": agent,
        "root": root or "the preset's default",
        "overrides": CANDIDATES[name],
        "seed": seed,
        "choice": accuracy(export, choice),
        "validation": config["metrics"]["quality"],
        "seconds": seconds,
        "architecture": config.get("architecture"),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("names", nargs="+", choices=list(CANDIDATES))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--agent", default="VitCpu")
    parser.add_argument(
        "--root",
        default=None,
        help="random_init, or a root file (default: the preset's default root)",
    )
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument(
        "--work", type=Path, default=Path(tempfile.gettempdir()) / "munet-hybrid-choice"
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for seed in args.seeds:
        for name in args.names:
            tag = f"{args.agent}_{name}_{root_tag(args.root)}_s{seed}"
            target = args.out / f"{tag}.json"
            if target.exists():
                continue
            result = run(name, seed, args.work, args.agent, args.root)
            target.write_text(json.dumps(result, indent=1))
            print(
                f"{name} seed {seed}: choice {result['choice']:.4f} validation "
                f"{result['validation']:.4f} in {result['seconds']:.0f}s",
                flush=True,
            )


if __name__ == "__main__":
    main()
