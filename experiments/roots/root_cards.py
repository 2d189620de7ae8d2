"""Pretrained roots side by side, read from their cards: how far each learned its own task
(held-out accuracy on its pretraining classes) against what root_compare.py stored on the
evaluation tasks' validation splits (the linear probe's mean, the fine-tuning means), sorted
by held-out accuracy. Nothing is measured again; cards without stored validation figures are
counted and left out. Each card's comparison also measured an old root in the same run (the
shipped root of its day), so each row gives its probe against that baseline, and the last
line the highest probe's: ``ratio:`` its probe mean / its old root's, one comparison. Where
every root was measured on the same tasks, a line gives the mean over tasks of the highest
probe any of them reached on each.

    python experiments/roots/root_cards.py experiments/results/*/card*.json --image-size 24

A card's held-out accuracy is its own task's: comparable between roots of one class count
and loss, not across them (a multi-label root counts an image right when its top class is
one the image shows; such rows are marked).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
from pathlib import Path

from munet.pretrain.spec import REMOVED_FIELDS, PretrainSpec

# Set by the preset and the run, not options of the recipe: left out of the summary.
_NOT_OPTIONS = {"preset", "model", "num_layers", "image_size"}


def recipe_summary(recipe: dict) -> str:
    """The card's spec fields that differ from PretrainSpec's defaults, as ``field=value``
    (settings munet pretrain no longer has, against the value that turned them off)."""
    defaults = {f.name: f.default for f in dataclasses.fields(PretrainSpec)} | REMOVED_FIELDS
    return " ".join(
        f"{name}={value}"
        for name, value in recipe.items()
        if name not in _NOT_OPTIONS and name in defaults and value != defaults[name]
    )


def card_row(path: Path) -> dict | None:
    """One card's row, or None when it stores no validation figures."""
    try:
        card = json.loads(path.read_text())
        recipe, held_out = card["recipe"], card["val_accuracy"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise SystemExit(
            f"root_cards: {str(path)!r} is not a munet pretrain card (card.json with 'recipe' "
            f"and 'val_accuracy'): {err}"
        ) from None
    validation = card.get("validation") or {}
    results = validation.get("results")
    if not results:
        return None
    budgets = sorted({b for figures in results.values() for b in figures["finetune"]}, key=int)
    old_results = validation.get("old_results") or {}
    return {
        "card": str(path),
        "image_size": recipe["image_size"],
        "steps": card.get("steps"),
        "multi_label": bool(recipe.get("multi_label")),
        "held_out": held_out,
        "tasks": len(results),
        "probes": {task: figures["probe"] for task, figures in results.items()},
        "probe": statistics.mean(figures["probe"] for figures in results.values()),
        # The same run's baseline: the old root on the same tasks (None if not stored).
        "old_probe": (
            statistics.mean(old_results[task]["probe"] for task in results)
            if set(results) <= set(old_results)
            else None
        ),
        "finetune": {
            budget: statistics.mean(figures["finetune"][budget] for figures in results.values())
            for budget in budgets
        },
        "recipe": recipe_summary(recipe),
    }


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cards", nargs="+", help="card.json files of pretrained roots")
    parser.add_argument("--image-size", type=int, help="only roots of this image side")
    args = parser.parse_args(argv)

    rows, without = [], 0
    for name in args.cards:
        row = card_row(Path(name))
        if row is None:
            without += 1
        elif args.image_size is None or row["image_size"] == args.image_size:
            rows.append(row)
    rows.sort(key=lambda row: row["held_out"])
    budgets = sorted({b for row in rows for b in row["finetune"]}, key=int)
    header = ["held-out", "probe", "vs old", *(f"ft{b}" for b in budgets), "tasks", "steps"]
    print("  ".join(f"{h:>8}" for h in header) + "  card: recipe (non-default fields)")
    for row in rows:
        mark = "*" if row["multi_label"] else " "
        old = row["old_probe"]
        cells = [f"{row['held_out']:.3f}{mark}", f"{row['probe']:.3f}"]
        cells.append("-" if old is None else f"{row['probe'] - old:+.3f}")
        cells += [f"{row['finetune'][b]:.3f}" if b in row["finetune"] else "-" for b in budgets]
        cells += [str(row["tasks"]), str(row["steps"])]
        print("  ".join(f"{c:>8}" for c in cells) + f"  {row['card']}: {row['recipe']}")
    if any(row["multi_label"] for row in rows):
        print("* multi-label: held-out counts the top class among the ones an image shows")
    print(f"{len(rows)} roots; {without} card(s) without validation figures left out")
    tasks = {frozenset(row["probes"]) for row in rows}
    if len(tasks) == 1:
        # Optimistic (a maximum over noisy readings, from different roots), but above the
        # best root's mean it says the roots trade tasks rather than all stop at one limit.
        best_each = {task: max(row["probes"][task] for row in rows) for task in tasks.pop()}
        print(f"best per task: mean {statistics.mean(best_each.values()):.3f} over "
              f"{len(best_each)} tasks (the highest probe any of these roots reached on each)")
    best = max((row for row in rows if row["old_probe"]), key=lambda r: r["probe"], default=None)
    if best is not None:
        print(
            f"ratio: {best['probe'] / best['old_probe']:.3f} (the highest probe, {best['card']}, "
            "over the old root its comparison measured in the same run)"
        )
    return rows


if __name__ == "__main__":
    main()
