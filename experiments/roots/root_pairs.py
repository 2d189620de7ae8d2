"""Paired differences between roots, read from root_compare.py's ``--json`` files.

One seed's run moved VitCpu's validation probe by 0.04 (experiments/pretrain_log.md), as much
as most differences between recipes, so "does option X help?" is asked of pairs that differ in X
alone, at several seeds: X off and on at seed 0, X off and on at seed 1, and so on. Each side
of a pair is one root in one comparison file: ``FILE.json`` is the comparison's new root,
``FILE.json:old`` its old root. Per pair it prints the candidate minus the base on the probe
mean and the ratio of the fine-tuning means at each budget, then the verdict:

    shown: candidate ahead of base in every column at every pair (N pairs)

or ``not shown`` with what was behind or level. Nothing is re-measured. Two files are read
against each other only where that is fair: the same tasks, budgets and method, and, where
both compared against the same old root (the same sha256), the same figures for it
(root_compare's data, seeds and init are fixed, so they agree when the evaluation did).

    python experiments/roots/root_pairs.py \\
        --pair runs/thumb4/compare.json:old runs/thumb4/compare.json \\
        --pair runs/seed1/compare.json runs/thumb4_seed1/compare.json
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path


def load_side(side: str) -> tuple[dict, dict]:
    """(the comparison file's contents, one root's per-task figures) for FILE or FILE:old."""
    role = "old" if side.endswith(":old") else "new"
    path = side.removesuffix(":old")
    if not Path(path).is_file():
        raise SystemExit(f"root_pairs: no comparison file {path!r} (from root_compare.py --json)")
    data = json.loads(Path(path).read_text())
    if "results" not in data or "old_results" not in data:
        raise SystemExit(
            f"root_pairs: {path!r} is not a root_compare.py --json file "
            f"(expected the keys 'results' and 'old_results')"
        )
    return data, data["old_results" if role == "old" else "results"]


def columns_of(figures: dict) -> list[str]:
    first = next(iter(figures.values()))
    return ["probe", *(f"ft{steps}" for steps in first["finetune"])]


def mean(figures: dict, column: str) -> float:
    if column == "probe":
        return statistics.fmean(entry["probe"] for entry in figures.values())
    return statistics.fmean(entry["finetune"][column[2:]] for entry in figures.values())


def check_comparable(
    base_side: str, base: tuple[dict, dict], cand_side: str, cand: tuple[dict, dict]
) -> None:
    (base_file, base_figures), (cand_file, cand_figures) = base, cand
    same_budgets = columns_of(base_figures) == columns_of(cand_figures)
    if set(base_figures) != set(cand_figures) or not same_budgets:
        raise SystemExit(
            f"root_pairs: {base_side!r} and {cand_side!r} measured different tasks "
            f"or budgets; pair comparisons of the same tasks and --steps"
        )
    if base_file.get("method") != cand_file.get("method"):
        raise SystemExit(
            f"root_pairs: {base_side!r} and {cand_side!r} were measured differently: "
            f"{base_file.get('method')!r} against {cand_file.get('method')!r}"
        )
    if base_file["old_results"] == cand_file["old_results"]:
        return
    digests = base_file.get("old_sha256"), cand_file.get("old_sha256")
    if None in digests:
        # Files from before root_compare recorded digests: a path names whatever file is
        # there now (the shipped root's path holds each new root in turn), so it cannot say
        # whether both measured the same old root.
        print(f"note: {base_side!r} and {cand_side!r} differ on their old root's figures and "
              f"do not both record its sha256: whether it is one root is not checked")  # fmt: skip
    elif digests[0] == digests[1]:
        raise SystemExit(
            f"root_pairs: {base_side!r} and {cand_side!r} both compared against the root "
            f"{digests[0][:12]} but measured it differently (another split, --max-train or "
            f"--max-eval?): they cannot be read together"
        )


def compare_pair(base_side: str, cand_side: str) -> dict[str, float]:
    """Candidate against base per column: probe difference, fine-tune ratio."""
    base, cand = load_side(base_side), load_side(cand_side)
    check_comparable(base_side, base, cand_side, cand)
    figures = {}
    for column in columns_of(base[1]):
        old, new = mean(base[1], column), mean(cand[1], column)
        figures[column] = new - old if column == "probe" else new / max(1e-9, old)
    return figures


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--pair",
        nargs=2,
        action="append",
        required=True,
        metavar=("BASE", "CANDIDATE"),
        help="FILE.json (its new root) or FILE.json:old (its old root)",
    )
    args = parser.parse_args(argv)
    pairs = [compare_pair(base, cand) for base, cand in args.pair]
    behind = []
    for index, ((base, cand), figures) in enumerate(zip(args.pair, pairs, strict=True), 1):
        cells = "  ".join(
            f"probe {value:+.3f}" if column == "probe" else f"{column} ratio {value:.3f}"
            for column, value in figures.items()
        )
        print(f"pair {index}: {cand} against {base}: {cells}")
        behind += [
            f"pair {index} {column}"
            for column, value in figures.items()
            if value <= (0.0 if column == "probe" else 1.0)
        ]
    columns = list(pairs[0])
    means = {column: statistics.fmean(figures[column] for figures in pairs) for column in columns}
    print(
        "mean over pairs: "
        + "  ".join(
            f"probe {means[c]:+.3f}" if c == "probe" else f"{c} ratio {means[c]:.3f}"
            for c in columns
        )
    )
    count = f"{len(pairs)} pair{'s' if len(pairs) != 1 else ''}"
    if behind:
        print(f"not shown: behind or level at {', '.join(behind)} ({count})")
    else:
        print(f"shown: candidate ahead of base in every column at every pair ({count})")
    return {"pairs": pairs, "means": means, "shown": not behind}


if __name__ == "__main__":
    main()
