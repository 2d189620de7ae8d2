"""Which pretraining recipe, class count and image size make the best root? Chosen on validation.

Each candidate ``RECIPE:CLASSES:SIZE[:INSTANCES]`` (e.g. ``fractal:1000:24``, ``fractal:100:24:3``
for up to 3 instances per image; the recipes it chose between when the log's runs were made,
``fractal_ex``, ``contours``, ``noise`` and their ``+`` mixes, left munet pretrain since) is
pretrained with ``munet pretrain``'s loop for the same short budget (``--steps``), then
scored on every evaluation task (``digits``, ``synth/*`` and the 1k suite's ``1k/...`` where
munet.tasks.suite exists) by a linear probe of the frozen root and a short fine-tune
(``--finetune-steps``), both trained on the task's train split and scored on its
**validation** split at the candidate's image size (root_eval.py). Test splits are
never read here. With ``--max-seconds`` a candidate stops at that pretraining time (the
table gives its steps): candidates then compete at one time budget, not one step count. The
score of a candidate is the mean over tasks of (probe + fine-tune) / 2;
the table lists every candidate, the random-init model of each size as a reference, and the
line ``chosen: ...`` names the best candidate with the exact ``munet pretrain`` command for it.
Everything goes to ``OUT/choice.json``; pretraining runs resume from ``OUT/<candidate>/``.

    python experiments/roots/root_recipe_choice.py --workers 16          # 16-core CPU
    python experiments/roots/root_recipe_choice.py --device cuda --steps 3000 --workers 1
    python experiments/roots/root_recipe_choice.py --quick               # tiny smoke run
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

# This folder (root_eval.py), then the repository (munet without an install).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from munet.training.threads import prepare_openmp_env  # noqa: E402

prepare_openmp_env()

import torch  # noqa: E402
from root_eval import check_disjoint_tasks, evaluation_tasks, measure_root  # noqa: E402

from munet.config import get_preset  # noqa: E402
from munet.pretrain.loop import PretrainSpec, pretrain  # noqa: E402

DEFAULT_CANDIDATES = [
    "fractal:100:24:3",  # the shipped VitCpu root's recipe, as a reference at the same budget
    "fractal:1000:24:3",
    "fractal:100:32:3",
    "fractal:100:24",
]


def parse_candidate(text: str) -> tuple[str, int, int, int]:
    """``RECIPE:CLASSES:SIZE[:INSTANCES]`` -> (recipe, classes, size, instances); raises
    SystemExit naming a bad one."""
    parts = text.split(":")
    if len(parts) not in (3, 4) or not all(part.isdigit() for part in parts[1:]):
        raise SystemExit(
            f"candidate {text!r}: expected RECIPE:CLASSES:SIZE[:INSTANCES], e.g. fractal:100:24:3"
        )
    instances = int(parts[3]) if len(parts) == 4 else 1
    return parts[0], int(parts[1]), int(parts[2]), instances


def label_of(candidate: str) -> str:
    return candidate.replace(":", "-").replace("+", "_")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agent", default="VitCpu", help="preset whose root is chosen")
    parser.add_argument("--candidates", nargs="+", default=DEFAULT_CANDIDATES)
    parser.add_argument("--steps", type=int, default=2000, help="pretraining steps each")
    parser.add_argument(
        "--minutes",
        type=float,
        help="pretraining time each instead of --steps (the schedule fits it)",
    )
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--finetune-steps", type=int, default=128)
    parser.add_argument("--tasks", nargs="+", default=None, help="default: embedded + 1k suite")
    parser.add_argument("--max-train", type=int, default=2000, help="train examples per task")
    parser.add_argument("--max-eval", type=int, default=1000, help="validation examples per task")
    parser.add_argument("--device", default="cpu")
    parser.add_argument(
        "--workers", type=int, default=1, help="processes (on a GPU too: they share it)"
    )
    parser.add_argument("--max-seconds", type=float, help="pretraining time limit per candidate")
    parser.add_argument("--out", default="out/root_recipe_choice")
    parser.add_argument("--quick", action="store_true", help="tiny smoke run (CPU, seconds)")
    args = parser.parse_args(argv)
    if args.quick:
        args.candidates = args.candidates if argv and "--candidates" in argv else [
            "fractal:4:8", "fractal:6:8:2"]  # fmt: skip
        args.steps, args.batch_size, args.finetune_steps = 4, 8, 2
        args.max_train, args.max_eval = 32, 32
        args.tasks = args.tasks or ["synth/color"]
    args.tasks = args.tasks or evaluation_tasks()
    check_disjoint_tasks(args.tasks)
    for candidate in args.candidates:
        parse_candidate(candidate)
    return args


def _threads(workers: int) -> int:
    return max(1, (os.cpu_count() or 1) // max(1, workers))


def pretrain_job(job: dict) -> dict:
    """Pretrains one candidate (resuming what OUT holds); its card's figures."""
    torch.set_num_threads(job["threads"])
    recipe, classes, size, instances = parse_candidate(job["candidate"])
    preset = get_preset(job["agent"])
    spec = PretrainSpec(
        preset=preset.name, model=preset.model,
        num_layers=int(preset.hparams_defaults["num_layers"]), image_size=size, recipe=recipe,
        num_classes=classes, batch_size=job["batch_size"], instances=instances,
    ).validate()  # fmt: skip
    precision = "bf16" if job["device"].startswith("cuda") else "fp32"
    budget = {"minutes": job["minutes"]} if job["minutes"] else {"steps": job["steps"]}
    result = pretrain(
        spec, job["work"], **budget, device=job["device"], precision=precision,
        progress=False, max_seconds=job["max_seconds"], command=job["command"],
        eval_examples=256,
    )  # fmt: skip
    card = result.card
    return {"candidate": job["candidate"], "root": str(result.root_file), "steps": card["steps"],
            "seconds": card["seconds"], "pretrain_accuracy": card["val_accuracy"]}  # fmt: skip


def measure_job(job: dict) -> dict:
    """Probe and fine-tune of one root on one task (validation split)."""
    torch.set_num_threads(job["threads"])
    figures = measure_root(
        job["root"], job["task"], job["model"], job["num_layers"], job["size"],
        (job["finetune_steps"],), "validation", job["device"], job["max_train"],
        job["max_eval"], precision="bf16" if job["device"].startswith("cuda") else "fp32",
    )  # fmt: skip
    return {
        **job,
        "probe": figures["probe"],
        "finetune": figures["finetune"][str(job["finetune_steps"])],
    }


def run_pool(function, jobs: list[dict], workers: int):
    """Results of ``function`` over ``jobs`` (in this process when one worker)."""
    if workers <= 1 or len(jobs) <= 1:
        yield from map(function, jobs)
        return
    context = multiprocessing.get_context("spawn")
    with context.Pool(min(workers, len(jobs))) as pool:
        yield from pool.imap_unordered(function, jobs)


def command_for(args: argparse.Namespace, candidate: str) -> str:
    recipe, classes, size, instances = parse_candidate(candidate)
    return (f"munet pretrain --agent {args.agent} --recipe {recipe} --classes {classes} "
            f"{f'--instances {instances} ' if instances > 1 else ''}"
            f"--image-size {size} --batch-size {args.batch_size} "
            f"{f'--minutes {args.minutes}' if args.minutes else f'--steps {args.steps}'} "
            f"--out {os.path.join(args.out, label_of(candidate))}")  # fmt: skip


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    start = time.perf_counter()
    # On a GPU several processes share it: these small models leave it mostly idle alone.
    workers = max(1, args.workers)
    threads = _threads(workers)
    preset = get_preset(args.agent)
    jobs = [
        {"candidate": c, "agent": args.agent, "work": os.path.join(args.out, label_of(c)),
         "steps": args.steps, "minutes": args.minutes, "batch_size": args.batch_size,
         "device": args.device,
         "threads": threads, "max_seconds": args.max_seconds, "command": command_for(args, c)}
        for c in args.candidates
    ]  # fmt: skip
    pretrained = {}
    for done in run_pool(pretrain_job, jobs, workers):
        pretrained[done["candidate"]] = done
        print(f"pretrained {done['candidate']}: {done['steps']} steps, {done['seconds']:.0f} s, "
              f"held-out {done['pretrain_accuracy']:.3f}", flush=True)  # fmt: skip
    size_of = {c: parse_candidate(c)[2] for c in args.candidates}
    roots = {c: pretrained[c]["root"] for c in args.candidates}
    for size in sorted(set(size_of.values())):
        roots[f"random_init:{size}"] = None
        size_of[f"random_init:{size}"] = size
    measure = [
        {"label": label, "root": root, "task": task, "model": preset.model,
         "num_layers": int(preset.hparams_defaults["num_layers"]),
         "size": size_of[label], "finetune_steps": args.finetune_steps,
         "device": args.device, "max_train": args.max_train, "max_eval": args.max_eval,
         "threads": threads}
        for label, root in roots.items() for task in args.tasks
    ]  # fmt: skip
    figures: dict[str, dict[str, dict]] = {label: {} for label in roots}
    for done in run_pool(measure_job, measure, workers):
        figures[done["label"]][done["task"]] = {
            "probe": done["probe"],
            "finetune": done["finetune"],
        }
        print(f"  {done['label']:<40} {done['task']:<16} probe {done['probe']:.3f} "
              f"fine-tune {done['finetune']:.3f}", flush=True)  # fmt: skip
    rows = {}
    for label, by_task in figures.items():
        probe = statistics.fmean(by_task[t]["probe"] for t in args.tasks)
        tune = statistics.fmean(by_task[t]["finetune"] for t in args.tasks)
        rows[label] = {"probe_mean": probe, "finetune_mean": tune, "score": (probe + tune) / 2}
    budget = f"{args.minutes} min" if args.minutes else f"{args.steps} steps"
    print(
        f"\nvalidation accuracy, mean over {len(args.tasks)} tasks ({', '.join(args.tasks)}); "
        f"pretraining {budget}, fine-tune {args.finetune_steps} steps, {args.device}"
    )
    print(f"{'candidate':<42}{'steps':>6}{'held-out':>9}{'probe':>8}{'tune':>8}{'score':>8}")
    for label, row in sorted(rows.items(), key=lambda item: -item[1]["score"]):
        held = pretrained.get(label, {}).get("pretrain_accuracy")
        steps = pretrained.get(label, {}).get("steps", "-")
        shown = f"{steps:>6}" + (f"{held:>9.3f}" if held is not None else f"{'-':>9}")
        print(f"{label:<42}{shown}{row['probe_mean']:>8.3f}{row['finetune_mean']:>8.3f}"
              f"{row['score']:>8.3f}")  # fmt: skip
    chosen = max(args.candidates, key=lambda c: rows[c]["score"])
    print(f"chosen: {chosen} (score {rows[chosen]['score']:.3f}, by validation only): "
          f"{command_for(args, chosen)}")  # fmt: skip
    # The same run's baseline: the random-init model at the chosen candidate's image size.
    baseline = rows.get(f"random_init:{parse_candidate(chosen)[2]}")
    if baseline is not None and baseline["score"] > 0:
        print(f"ratio: {rows[chosen]['score'] / baseline['score']:.3f} "
              f"(chosen / random init score, validation)")  # fmt: skip
    result = {
        "settings": {k: v for k, v in vars(args).items() if k != "quick"},
        "pretrained": pretrained, "figures": figures, "rows": rows, "chosen": chosen,
        "chosen_recipe": dict(zip(("recipe", "classes", "image_size", "instances"),
                                  parse_candidate(chosen), strict=True)),
        "wall_s": round(time.perf_counter() - start, 1),
    }  # fmt: skip
    with open(os.path.join(args.out, "choice.json"), "w") as handle:
        json.dump(result, handle, indent=1)
    print(f"{args.out}/choice.json ({result['wall_s']:.0f} s)")
    return result


if __name__ == "__main__":
    main()
