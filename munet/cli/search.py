r"""`munet search`: a strategy on an objective, in process or on Ray, checkpointed, resumable.

    munet search --strategy petridish --objective nasbench:table.tfrecord --out runs/pd
    munet search --strategy petridish --objective vit:digits --workers 2 --ray --out runs/vit
    munet search --strategy regularized_evolution --objective nasbench:table.tfrecord \
        --budget 200000 --workers 4 --out runs/re
    munet search ... --out runs/pd --resume        # after a crash: finished jobs are kept

`--strategy petridish` runs Petridish's distributed loop (seed, search and train jobs); the
other strategies run the asynchronous ask/tell driver. Both print a line per finished job or
trial, a summary table of the frontier, and write frontier.png, frontier.json, pool.json and
state.json into --out.
"""

from __future__ import annotations

import argparse
import json
import sys

#: `munet.search.strategy_names()`, listed here so `munet --help` needs no torch import (a test
#: keeps the two the same).
STRATEGIES = ("petridish", "regularized_evolution", "evolution", "random")


def _key_value(text: str) -> tuple[str, object]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds `munet search`."""
    parser = subparsers.add_parser(
        "search",
        help="run a search strategy on NAS-Bench-101 or on real ViTs (in process or on Ray)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--strategy",
        required=True,
        help=f"search strategy: {', '.join(STRATEGIES)}",
    )
    parser.add_argument(
        "--objective", required=True, help="nasbench:FILE.tfrecord or vit:TASK (e.g. vit:digits)"
    )
    parser.add_argument("--out", required=True, help="output folder (state, frontier, models)")
    parser.add_argument("--resume", action="store_true", help="continue the run in --out")
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the strategy and the trials (default: 0)"
    )
    parser.add_argument(
        "--workers", type=_positive_int, default=None,
        help="trials in flight (default 1 in process; the cluster's CPUs on Ray)",
    )
    parser.add_argument("--ray", action="store_true", help="run jobs as Ray tasks (local Ray)")
    parser.add_argument("--ray-address", help="connect to this Ray cluster (implies --ray)")
    parser.add_argument(
        "--cpus-per-trial", type=_positive_float, default=1.0,
        help="CPUs each Ray trial holds (default: 1)",
    )
    parser.add_argument(
        "--gpus-per-trial", type=float, default=0.0,
        help="GPUs (or a fraction) each Ray trial holds (default: 0)",
    )
    parser.add_argument(
        "--budget", type=_positive_float,
        help="stop once jobs' training seconds exceed this (default: no limit)",
    )
    parser.add_argument(
        "--max-trials", type=_positive_int,
        help="stop after this many models (default: no limit)",
    )
    parser.add_argument(
        "--set", dest="settings", type=_key_value, action="append", default=[],
        metavar="KEY=VALUE", help="objective setting, e.g. widths=[16,32] or epochs=36",
    )
    parser.add_argument(
        "--option", type=_key_value, action="append", default=[], metavar="KEY=VALUE",
        help="strategy option (ask/tell strategies), e.g. population_size=20",
    )
    petridish = parser.add_argument_group("petridish loop")
    petridish.add_argument(
        "--eps", type=float, default=0.025, help="hull band width (default: 0.025)"
    )
    petridish.add_argument(
        "--max-cost", type=float, help="stop once a model costs more (default: no limit)"
    )
    petridish.add_argument(
        "--max-pool-size", type=_positive_int, default=100,
        help="stop once the pool is larger (default: 100)",
    )
    parser.set_defaults(func=_search)


def _executor(args: argparse.Namespace):
    from munet.search.executors import InProcessExecutor, RayExecutor

    if args.ray or args.ray_address:
        return RayExecutor(
            args.workers,
            address=args.ray_address,
            num_cpus=args.cpus_per_trial,
            num_gpus=args.gpus_per_trial,
        )
    return InProcessExecutor(args.workers or 1)


def _search(args: argparse.Namespace) -> int:
    from munet.search.objectives import parse_objective

    try:
        objective = parse_objective(args.objective, **dict(args.settings))
    except (ValueError, TypeError, FileNotFoundError) as error:
        print(f"munet: error: {error}", file=sys.stderr)
        return 2
    try:
        executor = _executor(args)
    except (ImportError, ValueError) as error:
        print(f"munet: error: {error}", file=sys.stderr)
        return 2
    with executor, _TrialProgress(args.max_trials) as progress:
        try:
            if args.strategy == "petridish":
                pool, stop_reason, eps = _run_petridish(args, objective, executor, progress)
            else:
                pool, stop_reason, eps = _run_ask_tell(args, objective, executor, progress)
        except ValueError as error:
            print(f"munet: error: {error}", file=sys.stderr)
            return 2
    from munet.search.frontier import frontier_indices, write_outputs

    outputs = write_outputs(args.out, pool, eps, objective)
    hull, _ = frontier_indices(pool, eps)
    print(f"{len(pool)} models ({stop_reason})")
    print(_summary_table([pool[i] for i in hull], objective))
    for name, path in outputs.items():
        print(f"{name}: {path}")
    return 0


class _TrialProgress:
    """The search's lines, above an overall bar of finished trials (ETA with --max-trials)."""

    def __init__(self, total: int | None) -> None:
        from munet.progress import bars_enabled, progress_bar

        self.bar = progress_bar(total, "search", "trial", bars_enabled(None))

    def __call__(self, line: str) -> None:
        from munet.progress import write_line

        if line.startswith(("trial ", "job ")):  # a finished trial or job (not a stop notice)
            self.bar.update(1)
        write_line(_print_flush, line)

    def __enter__(self) -> _TrialProgress:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.bar.close()


def _run_petridish(args, objective, executor, progress):
    from munet.search.petridish_loop import PetridishLoop, PetridishSettings

    if args.option:
        raise ValueError("--option is for ask/tell strategies; petridish takes --eps, --max-cost")
    settings = PetridishSettings(
        eps=args.eps,
        max_cost=args.max_cost,
        max_pool_size=args.max_pool_size,
        max_trained=args.max_trials,
        time_budget=args.budget,
        seed=args.seed,
    )
    loop = PetridishLoop(
        objective, executor, args.out, settings, resume=args.resume, progress=progress
    )
    report = loop.run()
    return report.pool, report.stop_reason, settings.eps


def _run_ask_tell(args, objective, executor, progress):
    from munet.nasbench.runner import strategy_settings
    from munet.search import make_strategy
    from munet.search.driver import SearchRun
    from munet.search.petridish_loop import PoolPoint

    options = dict(args.option)
    if objective.kind == "nasbench":  # the benchmark colab's settings, as `nasbench search`
        options = strategy_settings(args.strategy, options)
    strategy = make_strategy(args.strategy, objective.search_space(), args.seed, **options)
    run = SearchRun(
        strategy,
        objective,
        executor,
        args.out,
        max_trials=args.max_trials,
        time_budget=args.budget,
        seed=args.seed,
        resume=args.resume,
        progress=progress,
    )
    report = run.run()
    pool = [
        PoolPoint(
            id=r["trial"],
            candidate=r["candidate"],
            error=1.0 - r["objective"],
            cost=r["cost"],
            sampling_count=0,
            parent_id=r["parent"],
            stage="seed" if r["parent"] is None else "train",
            weights=None,
            train_seconds=r["train_seconds"],
            metrics=r["metrics"],
        )
        for r in report.results
        if r["failure"] is None
    ]
    return pool, report.stop_reason, args.eps


def _summary_table(points, objective) -> str:
    unit = getattr(objective, "cost_unit", "")
    cost = f"cost ({unit})" if unit else "cost"
    header = f"{'id':>5} {'model':<24} {'error':>8} {cost:>14} {'train s':>10} {'parent':>6}"
    lines = ["frontier (lower convex hull of error vs cost):", header, "-" * len(header)]
    for p in points:
        parent = "-" if p.parent_id is None else str(p.parent_id)
        lines.append(
            f"{p.id:>5} {objective.describe(p.candidate):<24} {p.error:>8.4f} {p.cost:>14.5g}"
            f" {p.train_seconds:>10.2f} {parent:>6}"
        )
    return "\n".join(lines)


def _print_flush(line: str) -> None:
    print(line, flush=True)
