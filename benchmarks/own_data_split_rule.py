"""Selection on your own data: does the split rule (or another setting) make validation
accuracy something to select on?

The own-data task of benchmarks/own_data_vs_cnn.py (5 drawn-shape classes at 48 px) is written
per seed as a class folder of ``--per-class`` images per class (the user's data: munet carves
validation and test from it) and ``--held-out`` new images per class from another seed, that
no run sees before scoring. Each arm (``LABEL=OVERRIDE;OVERRIDE``, ``--set`` style) runs the
README's commands at every seed of ``--seeds``: ``munet root`` (``--root``), ``munet run --task
shapes --data folder:TRAIN --cycles N``, ``munet export``, ``munet predict`` on the held-out
images. Per run it records the selected path's validation accuracy (what selection saw), its
held-out accuracy and the gap between them; per arm, mean and worst seed.

Default arms: the seed's split rule (``data_split=default``: 5% slices, 75 validation images
of 1,500) against munet's ``own-data`` rule (max(10%, 200) stratified: 200). Other settings
measured the same way, e.g. the ``VitCpu`` image size::

    --arm size16=data_split=own-data --arm "size24=data_split=own-data;ds_image_size=24"

Prints one line per run, a table per arm, and::

    ratio: R   (ARM / the first arm, mean held-out accuracy)

Run (each run is one single-threaded munet process; ``--workers`` runs that many at once)::

    OMP_NUM_THREADS=1 python benchmarks/own_data_split_rule.py --seeds 0 1 2 3 4 5 --cycles 4 \\
        --workers 12 --out split_rule.json

About 3 minutes per run and cycle on a busy core; ``--quick``: a tiny smoke test.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import own_data_vs_cnn  # noqa: E402
from root_source import resolve_root  # noqa: E402

DEFAULT_ARMS = ["seed-rule=data_split=default", "own-data=data_split=own-data"]
TASK = own_data_vs_cnn.TASK
# `munet run`'s last line: "... best path ID quality Q test quality T".
_BEST_LINE = re.compile(r"quality (?P<quality>[0-9.]+|nan) test quality (?P<test>[0-9.]+|nan)")


def parse_arm(text: str) -> tuple[str, list[str]]:
    """``LABEL=OVERRIDE;OVERRIDE`` -> (label, overrides).

    Raises:
        SystemExit: no label.
    """
    label, _, rest = text.partition("=")
    if not label:
        raise SystemExit(f"--arm {text!r}: expected LABEL=OVERRIDES (e.g. size32=ds_image_size=32)")
    return label, [item for item in rest.split(";") if item]


def run_one(job: dict) -> dict:
    """One arm at one seed: root, run, export, predict; the selected path's validation and
    test accuracy (as the run reports them) and its held-out accuracy."""
    work = Path(job["work"])
    state, export = str(work / "state"), str(work / "export")
    sets = [arg for item in job["overrides"] for arg in ("--set", item)]
    root_sets = [arg for item in job["root_overrides"] for arg in ("--set", item)]
    start = time.perf_counter()
    cli = own_data_vs_cnn.munet_cli
    cli("root", "--agent", "VitCpu", "-d", state, *job["root_args"], *sets, "-q")
    out = cli("run", "--agent", "VitCpu", "--task", TASK, "--data", f"folder:{job['train']}",
              "--cycles", str(job["cycles"]), "-d", state, *root_sets, *sets, "-q")  # fmt: skip
    cli("export", "-d", state, "--task", TASK, "--out", export)
    seconds = time.perf_counter() - start
    found = _BEST_LINE.search(out.strip().splitlines()[-1])
    if found is None:
        raise SystemExit(f"no 'quality ... test quality' in munet run's last line:\n{out}")
    predictions = json.loads(cli("predict", export, job["held_out"], "--format", "json"))
    correct = sum(Path(p["file"]).parent.name == p["predictions"][0]["class"] for p in predictions)
    config = json.loads((Path(export) / "config.json").read_text())
    held_out = correct / len(predictions)
    validation = float(found["quality"])
    return {
        "arm": job["arm"],
        "seed": job["seed"],
        "validation": validation,
        "test": float(found["test"]),
        "held_out": held_out,
        "gap": validation - held_out,
        "image_size": config.get("preprocessing", {}).get("image_size"),
        "seconds": seconds,
    }


def summarise(rows: list[dict]) -> dict:
    """Mean and worst held-out accuracy, mean and largest |gap| of one arm's runs."""
    held = [r["held_out"] for r in rows]
    gaps = [r["gap"] for r in rows]
    return {
        "runs": len(rows),
        "held_out_mean": statistics.fmean(held),
        "held_out_worst": min(held),
        "validation_mean": statistics.fmean(r["validation"] for r in rows),
        "gap_mean": statistics.fmean(gaps),
        "abs_gap_mean": statistics.fmean(abs(g) for g in gaps),
        "abs_gap_max": max(abs(g) for g in gaps),
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arm", action="append", default=None, help="LABEL=OVERRIDE;OVERRIDE")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--per-class", type=int, default=300, help="images per class (data)")
    parser.add_argument("--held-out", type=int, default=100, help="held-out images per class")
    parser.add_argument("--cycles", type=int, default=2)
    parser.add_argument("--root", default="pretrained", help="random_init, pretrained or FILE")
    parser.add_argument("--workers", type=int, default=1, help="runs at once (one core each)")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--work", default=None, help="keep the data and states here")
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    parser.add_argument("--quick", action="store_true", help="tiny smoke test")
    args = parser.parse_args(argv)
    arms = [parse_arm(text) for text in (args.arm or DEFAULT_ARMS)]
    if args.quick:
        args.per_class, args.held_out, args.cycles, args.seeds = 12, 4, 1, args.seeds[:1]
        args.overrides = [*own_data_vs_cnn.QUICK_OVERRIDES, *args.overrides]
    root = resolve_root(args.root, "VitCpu")
    print(root.describe(), flush=True)
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="munet-split-rule-") as tmp:
        work = Path(args.work or tmp)
        jobs = []
        for seed in args.seeds:
            train = own_data_vs_cnn.write_folder(work / f"s{seed}" / "train", args.per_class, seed)
            held_out = own_data_vs_cnn.write_folder(
                work / f"s{seed}" / "held_out", args.held_out, seed + 10_000
            )
            for label, overrides in arms:
                jobs.append({
                    "arm": label,
                    "seed": seed,
                    "work": str(work / f"s{seed}" / label),
                    "train": str(train),
                    "held_out": str(held_out),
                    "cycles": args.cycles,
                    "overrides": [f"seed={seed}", *args.overrides, *overrides],
                    "root_args": root.cli_args,
                    "root_overrides": root.overrides,
                })  # fmt: skip
        print(
            f"task: {len(own_data_vs_cnn.CLASSES)} classes, {args.per_class} images per class "
            f"(munet carves validation and test), {args.held_out} held-out per class; "
            f"{len(jobs)} runs on {args.workers} workers; load average {os.getloadavg()[0]:.1f}",
            flush=True,
        )
        with ProcessPoolExecutor(max_workers=args.workers) as pool:
            for row in pool.map(run_one, jobs):
                rows.append(row)
                print(
                    f"{row['arm']:>12} seed {row['seed']}: validation {row['validation']:.4f} "
                    f"held-out {row['held_out']:.4f} gap {row['gap']:+.4f} test "
                    f"{row['test']:.4f} image size {row['image_size']} ({row['seconds']:.0f}s)",
                    flush=True,
                )
    summary = {label: summarise([r for r in rows if r["arm"] == label]) for label, _ in arms}
    header = ("arm", "runs", "held-out", "worst", "val", "|gap|", "max")
    print(" ".join(f"{h:>{w}}" for h, w in zip(header, (12, 4, 9, 6, 6, 6, 6), strict=True)))
    for label, s in summary.items():
        print(
            f"{label:>12} {s['runs']:>4} {s['held_out_mean']:>9.4f} {s['held_out_worst']:>6.3f} "
            f"{s['validation_mean']:>6.3f} {s['abs_gap_mean']:>6.3f} {s['abs_gap_max']:>6.3f}"
        )
    first = arms[0][0]
    for label, s in summary.items():
        if label != first and summary[first]["held_out_mean"]:
            ratio = s["held_out_mean"] / summary[first]["held_out_mean"]
            print(f"ratio: {ratio:.3f} ({label} / {first}, mean held-out accuracy)")
    print(f"load average: {os.getloadavg()[0]:.1f}")
    results = {"runs": rows, "summary": summary, "settings": vars(args)}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)
    return results


if __name__ == "__main__":
    main()
