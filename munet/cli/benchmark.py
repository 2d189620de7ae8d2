"""`munet benchmark`: the papers' comparison on the benchmark suite (munet.benchmark).

    munet benchmark --out out/benchmark --workers 14      # the full suite, 3 seeds
    munet benchmark --quick --out out/bench-quick          # CI-sized (minutes on 2 cores)
    munet benchmark --tasks digits,synth/shape --methods system,finetune --seeds 0,1,2

Rerunning the same command resumes: finished cells are kept, the others run.
"""

from __future__ import annotations

import argparse
import logging
import sys


def _csv(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def _seeds(value: str | None) -> list[int] | None:
    """``0,1,2`` as integers (None: the default seeds).

    Raises:
        BenchmarkError: not comma-separated integers.
    """
    from munet.benchmark.plan import BenchmarkError

    if value is None:
        return None
    try:
        return [int(item) for item in _csv(value)]
    except ValueError:
        raise BenchmarkError(
            f"--seeds {value!r}: expected comma-separated non-negative integers, e.g. 0,1,2"
        ) from None


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds `benchmark`."""
    from munet.benchmark.plan import (
        AGENT_OVERRIDES,
        DEFAULT_ADAPTER_BOTTLENECK,
        DEFAULT_SEEDS,
        DEFAULT_STEPS,
        DEFAULT_SYSTEM_BUDGET,
        METHODS,
        PRESET,
        QUICK_STEPS,
    )

    parser = subparsers.add_parser(
        "benchmark",
        help="the system against fine-tuning, linear probe, adapters and a CNN on the suite",
        description=(
            "Runs the µNet papers' comparison on the benchmark suite at the same train-step "
            "budget per task for every method, over several seeds; writes results.json, "
            "results.md and results.png to --out and prints `ratio:` lines against "
            "fine-tuning, then one `verdict:` line per claim (met or not, against the papers' "
            "goal). Resumable: rerun the same command. See docs/benchmark.md."
        ),
    )
    parser.add_argument("--out", default="out/benchmark", help="results folder")
    parser.add_argument(
        "--methods", type=_csv, default=None, help=f"comma-separated (default: {','.join(METHODS)})"
    )
    parser.add_argument(
        "--tasks", type=_csv, default=None, help="comma-separated (default: the suite)"
    )
    parser.add_argument(
        "--seeds",
        default=None,
        help=f"comma-separated (default {','.join(map(str, DEFAULT_SEEDS))})",
    )
    parser.add_argument(
        "--steps",
        type=int,
        default=None,
        help=f"train steps per task and method, rounded to whole agent paths (default "
        f"{DEFAULT_STEPS}; --quick {QUICK_STEPS})",
    )
    parser.add_argument(
        "--workers", type=int, default=1, help="cells run in this many processes (default 1)"
    )
    parser.add_argument(
        "--adapter-bottleneck",
        type=int,
        default=DEFAULT_ADAPTER_BOTTLENECK,
        help=f"hidden width of each adapter (default {DEFAULT_ADAPTER_BOTTLENECK})",
    )
    parser.add_argument(
        "--system-budget",
        type=int,
        default=DEFAULT_SYSTEM_BUDGET,
        metavar="K",
        help="the system's train steps per task, in task budgets (default 1: the same steps "
        "as every other method; K > 1 gives it the papers' larger compute)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="CI-sized: the quick suite and fewer steps"
    )
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="config override for every method's agent (repeatable)",
    )
    parser.add_argument(
        "--agent",
        default=PRESET,
        help=(
            f"the singlepath agent (default {PRESET}; {', '.join(AGENT_OVERRIDES)}): every "
            "method starts from its built-in root, at the benchmark's CPU path shape "
            "(docs/benchmark.md)"
        ),
    )
    parser.add_argument(
        "--root",
        metavar="FILE",
        help="start every method from this root checkpoint instead of the agent's built-in "
        "root (a candidate from munet pretrain: OUT/root.safetensors); its image size is "
        "not applied: --set hparams_defaults.ds_image_size=N for that",
    )
    parser.set_defaults(func=_benchmark)


def _benchmark(args: argparse.Namespace) -> int:
    from munet.benchmark import make_settings, run_benchmark
    from munet.benchmark.plan import BenchmarkError, root_size_note
    from munet.config import ConfigError, apply_overrides, get_preset

    logging.getLogger("munet").setLevel(logging.WARNING)
    try:
        settings = make_settings(
            methods=args.methods,
            tasks=args.tasks,
            seeds=_seeds(args.seeds),
            steps=args.steps,
            quick=args.quick,
            overrides=args.overrides,
            adapter_bottleneck=args.adapter_bottleneck,
            system_budget=args.system_budget,
            preset=args.agent,
            root=args.root,
        )
        config = apply_overrides(get_preset(settings.preset), settings.agent_overrides)  # bad --set
        if args.workers < 1:
            raise BenchmarkError(f"--workers {args.workers!r}: expected at least 1")
    except (BenchmarkError, ConfigError) as err:
        print(f"munet: error: {err}", file=sys.stderr)
        return 2
    note = root_size_note(settings, config)
    if note:
        print(note, flush=True)
    run_benchmark(
        settings, args.out, workers=args.workers, echo=lambda line: print(line, flush=True)
    )
    return 0
