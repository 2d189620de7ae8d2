"""The CPU default's choice between two shipped roots, read from their cards' validation figures.

Each card's ``validation`` comparison (experiments/roots/root_compare.py) holds, per evaluation
task, the root's linear probe and its fine-tunes at 128, 384 and 1,152 steps, scored on the
task's validation split. This prints the mean of each column over the tasks both cards measured
and the rule's verdict:

    the candidate becomes the CPU default when its mean over the three fine-tuning budgets is at
    least the incumbent's (the probe is printed, not decided on: the agents fine-tune).

    python experiments/hybrid_cpu/compare_cards.py munet/pretrain/roots/VitCpu.json \
        munet/pretrain/roots/VitCpuHybrid.json
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

BUDGETS = ("128", "384", "1152")


def validation_results(card_file: str) -> dict[str, dict]:
    card = json.loads(Path(card_file).read_text())
    results = card.get("validation", {}).get("results")
    if not results:
        raise SystemExit(f"{card_file}: no validation comparison stored (run root_compare.py)")
    return results


def column_means(results: dict[str, dict], tasks: list[str]) -> dict[str, float]:
    means = {"probe": statistics.fmean(results[t]["probe"] for t in tasks)}
    for budget in BUDGETS:
        means[f"ft{budget}"] = statistics.fmean(results[t]["finetune"][budget] for t in tasks)
    means["ft mean"] = statistics.fmean(means[f"ft{b}"] for b in BUDGETS)
    return means


def main(argv: list[str] | None = None) -> bool:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("incumbent", help="the default preset's card")
    parser.add_argument("candidate", help="the candidate preset's card")
    args = parser.parse_args(argv)
    old, new = validation_results(args.incumbent), validation_results(args.candidate)
    tasks = [task for task in new if task in old]
    print(f"{len(tasks)} tasks both cards measured: {', '.join(tasks)}")
    print(f"{'task':<24}" + "".join(f"{c:>10}" for c in ("probe", *BUDGETS)) + "   (new - old)")
    for task in tasks:
        cells = [new[task]["probe"] - old[task]["probe"]]
        cells += [new[task]["finetune"][b] - old[task]["finetune"][b] for b in BUDGETS]
        print(f"{task:<24}" + "".join(f"{c:>+10.3f}" for c in cells))
    means = {role: column_means(r, tasks) for role, r in (("old", old), ("new", new))}
    for role, card in (("old", args.incumbent), ("new", args.candidate)):
        row = "".join(f" {c} {v:.3f}" for c, v in means[role].items())
        print(f"{role} ({Path(card).stem}):{row}")
    chosen = means["new"]["ft mean"] >= means["old"]["ft mean"]
    print(f"ratio: {means['new']['ft mean'] / means['old']['ft mean']:.3f} (fine-tune mean over "
          f"budgets, validation: new / old)")  # fmt: skip
    print(f"verdict: {'candidate' if chosen else 'incumbent'} becomes the CPU default")
    return chosen


if __name__ == "__main__":
    main()
