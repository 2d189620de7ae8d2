"""Old root against new root: linear probe and fine-tuning on the evaluation tasks.

For two roots (files, or ``random_init``) of one preset, on every evaluation task
(``digits``, ``synth/*``, and the 1k suite's ``1k/...`` where munet.tasks.suite exists):
a linear probe of the frozen root and a fine-tune of the whole model from it for each budget
of ``--steps`` (128, 384, 1152), trained on the task's train split and scored on its
**validation** split (root_eval.py), each root at its own image size (the one it
was pretrained at: its card's, or ``--image-size``). Prints the table, the mean per column and

    probe: NEW - OLD = D (mean validation accuracy over tasks; goal +0.10)
    ratio: R (STEPS steps fine-tune: NEW / OLD, mean validation accuracy over tasks)

``--split test`` reads the test splits instead: do it once, for the final card, after every
choice is made (``--card CARD.json`` stores the NEW root's figures under the card's ``test``
key; with the validation split, under ``validation``); with ``--merge`` the run's budgets join
the comparison stored there instead (the same two roots and tasks, checked by sha256), as the
1,152-step column measured after a choice does. Jobs (root x task) run in ``--workers``
processes.

    python experiments/roots/root_compare.py --old munet/pretrain/roots/VitCpu.safetensors \
        --new runs/VitCpu/root.safetensors --workers 16
    python experiments/roots/root_compare.py --old random_init \
        --new runs/VitCpu/root.safetensors --quick
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import time
from pathlib import Path

# This folder (root_eval.py, comparison.py), then the repository (munet without an install).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from munet.training.threads import prepare_openmp_env  # noqa: E402

prepare_openmp_env()

import torch  # noqa: E402
from comparison import check_same_comparison, merge_comparisons, update_card  # noqa: E402
from root_eval import check_disjoint_tasks, evaluation_tasks, measure_root  # noqa: E402

from munet.config import get_preset  # noqa: E402
from munet.pretrain.card import card_beside  # noqa: E402
from munet.pretrain.roots import sha256_file  # noqa: E402

# The label of the measurement in a comparison's ``method`` (the script's path when the stored
# comparisons were measured, kept so that root_pairs.py reads new files beside them).
METHOD = "benchmarks/root_compare.py"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", required=True, help="root file or random_init")
    parser.add_argument("--new", required=True, help="root file or random_init")
    parser.add_argument("--agent", default="VitCpu")
    parser.add_argument("--image-size", type=int, help="default: each root's card, else preset")
    parser.add_argument("--steps", type=int, nargs="+", default=[128, 384, 1152])
    parser.add_argument("--tasks", nargs="+", default=None, help="default: embedded + 1k suite")
    parser.add_argument("--split", choices=["validation", "test"], default="validation")
    parser.add_argument("--max-train", type=int, default=2000)
    parser.add_argument("--max-eval", type=int, default=1000)
    parser.add_argument("--device", default="cpu")
    parser.add_argument(
        "--workers", type=int, default=1, help="processes (on a GPU too: they share it)"
    )
    parser.add_argument("--card", help="store the NEW root's figures in this card")
    parser.add_argument(
        "--merge", action="store_true",
        help="add these fine-tune budgets to the comparison stored in --card (same roots)",
    )  # fmt: skip
    parser.add_argument("--json", help="write all figures here")
    parser.add_argument("--quick", action="store_true", help="tiny smoke run")
    args = parser.parse_args(argv)
    if args.merge and not args.card:
        parser.error("--merge adds to the comparison stored in a card: give --card CARD.json")
    if args.merge and args.split == "test":
        parser.error("--merge with --split test: the test splits are read once, with every "
                     "budget at once; merge validation figures only")  # fmt: skip
    if args.quick:
        args.steps, args.max_train, args.max_eval = [2, 4], 32, 32
        args.tasks = args.tasks or ["synth/color"]
    args.tasks = args.tasks or evaluation_tasks()
    check_disjoint_tasks(args.tasks)
    return args


def shape_of(root: str, args: argparse.Namespace, default: tuple[int, int]) -> tuple[int, int]:
    """(image size, blocks) a root was pretrained with: its card next to it (a run's
    ``card.json`` or a shipped root's ``PRESET.json``), else the preset's; ``--image-size``
    overrides the size."""
    size, layers = default
    card = None if root == "random_init" else card_beside(root)
    if card is not None:
        recipe = json.loads(card.read_text())["recipe"]
        size, layers = int(recipe["image_size"]), int(recipe["num_layers"])
    return (args.image_size or size), layers


def digest(root: str) -> str | None:
    return sha256_file(root) if Path(root).is_file() else None


def stored_to_merge(args: argparse.Namespace) -> dict | None:
    """With ``--merge``: the comparison stored under the split in ``--card``, checked before
    any run to have compared these roots on these tasks and to lack these budgets (SystemExit
    naming what differs)."""
    if not args.merge:
        return None
    stored = json.loads(Path(args.card).read_text()).get(args.split)
    if not stored:
        sys.exit(f"--merge: nothing stored under {args.split!r} in {args.card} to add to")
    planned = {
        "old": args.old, "new": args.new,
        "old_sha256": digest(args.old), "new_sha256": digest(args.new),
        "max_train": args.max_train, "max_eval": args.max_eval, "tasks": args.tasks,
    }  # fmt: skip
    try:
        check_same_comparison(stored, planned)
    except ValueError as error:
        sys.exit(f"--merge into {args.card}: {error}")
    again = sorted({int(s) for f in stored["results"].values() for s in f["finetune"]}
                   & set(args.steps))  # fmt: skip
    if again:
        sys.exit(f"--merge into {args.card}: --steps {again} already stored; give only budgets "
                 f"the stored comparison lacks")  # fmt: skip
    return stored


def job(spec: dict) -> dict:
    torch.set_num_threads(spec["threads"])
    start = time.perf_counter()
    figures = measure_root(
        None if spec["root"] == "random_init" else spec["root"], spec["task"], spec["model"],
        spec["num_layers"], spec["size"], tuple(spec["steps"]), spec["split"], spec["device"],
        spec["max_train"], spec["max_eval"],
        precision="bf16" if spec["device"].startswith("cuda") else "fp32",
    )  # fmt: skip
    return {**spec, **figures, "seconds": time.perf_counter() - start}


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    stored = stored_to_merge(args)
    preset = get_preset(args.agent)
    default = (int(preset.hparams_defaults["ds_image_size"]),
               int(preset.hparams_defaults["num_layers"]))  # fmt: skip
    # On a GPU several processes share it: these small models leave it mostly idle alone.
    workers = max(1, args.workers)
    threads = max(1, (os.cpu_count() or 1) // workers)
    roles = {"old": args.old, "new": args.new}
    shapes = {role: shape_of(root, args, default) for role, root in roles.items()}
    jobs = [
        {"role": role, "root": root, "task": task, "model": preset.model,
         "num_layers": shapes[role][1], "size": shapes[role][0], "steps": args.steps,
         "split": args.split, "device": args.device, "max_train": args.max_train,
         "max_eval": args.max_eval, "threads": threads}
        for role, root in roles.items() for task in args.tasks
    ]  # fmt: skip
    results: dict[str, dict] = {"old": {}, "new": {}}
    start = time.perf_counter()
    if workers == 1:
        done_iter = map(job, jobs)
    else:
        pool = multiprocessing.get_context("spawn").Pool(min(workers, len(jobs)))
        done_iter = pool.imap_unordered(job, jobs)
    for done in done_iter:
        results[done["role"]][done["task"]] = {"probe": done["probe"], "finetune": done["finetune"]}
        tuned = " ".join(f"{s}:{a:.3f}" for s, a in done["finetune"].items())
        print(f"  {done['role']} {done['task']:<16} {done['size']} px probe {done['probe']:.3f} "
              f"fine-tune {tuned} ({done['seconds']:.0f} s)", flush=True)  # fmt: skip
    if workers > 1:
        pool.close()
        pool.join()
    print(f"\n{args.split} accuracy; old = {args.old}, new = {args.new}")
    columns = ["probe", *[f"ft{s}" for s in args.steps]]
    print(f"{'task':<18}" + "".join(f"{role + ' ' + c:>14}" for c in columns for role in roles))

    def cell(role: str, task: str, column: str) -> float:
        entry = results[role][task]
        return entry["probe"] if column == "probe" else entry["finetune"][column[2:]]

    for task in args.tasks:
        print(f"{task:<18}" + "".join(f"{cell(r, task, c):>14.3f}" for c in columns for r in roles))
    means = {
        (role, c): statistics.fmean(cell(role, t, c) for t in args.tasks)
        for role in roles for c in columns
    }  # fmt: skip
    print(f"{'mean':<18}" + "".join(f"{means[(r, c)]:>14.3f}" for c in columns for r in roles))
    delta = means[("new", "probe")] - means[("old", "probe")]
    print(f"probe: new - old = {delta:+.3f} (mean {args.split} accuracy over tasks; goal +0.10)")
    for steps in args.steps:
        ratio = means[("new", f"ft{steps}")] / max(1e-9, means[("old", f"ft{steps}")])
        print(f"ratio: {ratio:.3f} ({steps} steps fine-tune: new / old, mean {args.split} "
              f"accuracy over tasks)")  # fmt: skip
    summary = {
        "method": (f"{METHOD}: linear probe (L-BFGS logistic regression on "
                   f"frozen CLS features) and AdamW fine-tune at {args.steps} steps; train on "
                   f"<= {args.max_train} train examples, score <= {args.max_eval} {args.split} "
                   f"examples; {args.device}"),
        "tasks": args.tasks, "old": args.old, "new": args.new,
        # A path names whatever file is there now (the shipped root's path holds each new
        # root in turn); the digests say which roots were measured.
        "old_sha256": digest(args.old), "new_sha256": digest(args.new),
        "max_train": args.max_train, "max_eval": args.max_eval,
        "results": results["new"],
        "old_results": results["old"], "probe_delta": delta,
        "wall_s": round(time.perf_counter() - start, 1),
    }  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1) + "\n")
    if args.card:
        entry = merge_comparisons(stored, summary) if stored else summary
        update_card(args.card, args.split, entry)
        print(f"{'added to' if stored else 'stored under'} '{args.split}' in {args.card}")
    return summary


if __name__ == "__main__":
    main()
