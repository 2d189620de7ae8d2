"""Two roots' `munet benchmark` runs, cell by cell: is the new root's system ahead of the old's?

`munet benchmark` summarises each run by ratios of means over 3 seeds, whose 95% intervals
(0.07-0.13 on the 1k suite) are wider than the gaps between the roots it is asked to choose
between. Two runs with the same settings but the root share every (method, task, seed) cell's
data and seed, so the cells pair: the difference of each pair removes what the task and seed
contribute and leaves the root's. This script reads two runs' cell files (nothing is measured
again) and prints, per method, the mean paired difference of **validation** quality (new - old)
with its standard error and how many cells are ahead, then the same for the system's quality
relative to fine-tuning's in the same run, and::

    ratio: R   (new / old: the system's mean validation quality over the paired cells)

Test figures (`test_quality`) are never read. Runs that differ in anything but the root (tasks,
seeds, steps, overrides, ...) are refused.

Run: ``python experiments/roots/benchmark_pairs.py OLD_BENCHMARK_DIR NEW_BENCHMARK_DIR``
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path

# Settings that name the root rather than the experiment: the one thing allowed to differ.
ROOT_KEYS = ("root", "root_sha256")


def load_run(directory: Path) -> tuple[dict, dict[tuple[str, str, int], float]]:
    """(settings, {(method, task, seed): validation quality}) of a `munet benchmark --out` dir."""
    settings_file = directory / "settings.json"
    if not settings_file.is_file():
        raise SystemExit(
            f"{directory}: no settings.json; expected a `munet benchmark --out` folder"
        )
    settings = json.loads(settings_file.read_text())
    cells = {}
    for file in sorted(directory.glob("cells/*/*/seed_*.json")):
        cell = json.loads(file.read_text())
        cells[(cell["method"], cell["task"], int(cell["seed"]))] = float(cell["quality"])
    return settings, cells


def check_comparable(old: dict, new: dict) -> None:
    """Refuses two runs that differ in more than the root."""
    for key in sorted(set(old) | set(new)):
        if key not in ROOT_KEYS and old.get(key) != new.get(key):
            raise SystemExit(
                f"the runs differ in {key!r} ({old.get(key)!r} vs {new.get(key)!r}); "
                "expected the same benchmark with another root"
            )


def paired(differences: list[float]) -> str:
    mean = statistics.mean(differences)
    error = (
        statistics.stdev(differences) / math.sqrt(len(differences)) if len(differences) > 1 else 0.0
    )
    ahead = sum(d > 0 for d in differences)
    return f"{mean:+.4f} (standard error {error:.4f}; ahead in {ahead} of {len(differences)} cells)"


def compare(old_dir: Path, new_dir: Path) -> dict:
    old_settings, old = load_run(old_dir)
    new_settings, new = load_run(new_dir)
    check_comparable(old_settings, new_settings)
    missing = sorted(set(old) ^ set(new))
    if missing:
        raise SystemExit(f"cells in one run only (an unfinished run?): {missing[:5]}")
    if not old:
        raise SystemExit(f"{old_dir}: no cell files under cells/; has the benchmark run?")
    print(f"old: {old_settings.get('root')} ({str(old_settings.get('root_sha256'))[:12]})")
    print(f"new: {new_settings.get('root')} ({str(new_settings.get('root_sha256'))[:12]})")
    result: dict = {"cells": len(old), "methods": {}}
    for method in sorted({m for m, _, _ in old}):
        keys = sorted(k for k in old if k[0] == method)
        differences = [new[k] - old[k] for k in keys]
        print(f"{method} validation quality, new - old: {paired(differences)}")
        result["methods"][method] = {
            "old": statistics.mean(old[k] for k in keys),
            "new": statistics.mean(new[k] for k in keys),
            "difference": statistics.mean(differences),
        }
    cells = sorted((t, s) for m, t, s in old if m == "system")
    if {"system", "finetune"} <= set(result["methods"]):

        def relative(run: dict, task: str, seed: int) -> float:
            return run[("system", task, seed)] / run[("finetune", task, seed)]

        differences = [relative(new, t, s) - relative(old, t, s) for t, s in cells]
        print(f"system / finetune validation quality, new - old: {paired(differences)}")
    if "system" in result["methods"]:
        system = result["methods"]["system"]
        result["ratio"] = system["new"] / system["old"]
        print(
            f"ratio: {result['ratio']:.3f} (new / old: the system's mean validation quality "
            f"over {len(cells)} paired cells)"
        )
    return result


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", type=Path, help="the old root's `munet benchmark --out` folder")
    parser.add_argument("new", type=Path, help="the new root's, same settings")
    args = parser.parse_args(argv)
    return compare(args.old, args.new)


if __name__ == "__main__":
    main()
