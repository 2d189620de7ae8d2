"""`munet report`: the system at a glance, as one self-contained HTML file.

munet report -d state                       # writes report.html
munet report -d state --out r.html --png    # plus r-history.png, r-system.png, ...
munet report -d state --watch 30            # rewrite on every commit; the page reloads
munet report -d state --baseline docs/results/system_vs_independent/seed_0.json
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds `report`."""
    report = subparsers.add_parser(
        "report",
        help="write an HTML report of a system (leaderboard, charts, system graph)",
        description=(
            "Write one self-contained HTML file (opens offline) showing the leaderboard, each "
            "task against chance and baselines, learning curves of the best paths, quality "
            "and score over cycles, the components each task shares, parameters per task, "
            "multipath routes and mutations ranked by their effect on score. Reads manifests "
            "and path history only (no tensors)."
        ),
    )
    report.add_argument(
        "-d", "--state-dir", default="state", help="system state dir (default: state)"
    )
    report.add_argument("--out", default="report.html", help="HTML file (default: report.html)")
    report.add_argument(
        "--watch",
        type=float,
        default=None,
        metavar="SECONDS",
        help="keep running: check every SECONDS, rewrite when an agent commits (page reloads)",
    )
    report.add_argument(
        "--png", action="store_true", help="also write the figures as PNG files next to it"
    )
    report.add_argument(
        "--class-metrics",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="evaluate each task agent's best path on its test split for the per-class "
        "section (confusion-matrix heat maps; default: on; --no-class-metrics reads no data)",
    )
    report.add_argument("--data-dir", default=None, help="TFDS data_dir / Hugging Face cache")
    report.add_argument(
        "--baseline",
        action="append",
        default=[],
        metavar="FILE.json",
        help="a baseline's test quality per task: a benchmarks/system_vs_independent.py "
        "result or {method: {task: test quality}}; repeat to average seeds (see docs/report.md)",
    )
    report.set_defaults(func=_report)


def _describe(view, out: str, png: bool) -> str:
    """The line after each write; its counts are the page header's."""
    extra = f" (+ {os.path.splitext(out)[0]}-*.png)" if png else ""
    tasks, agents = len(view.task_names), len(view.tasks)
    published = sum(len(a.published) for a in view.tasks)
    return (
        f"report of {tasks} task{'s' if tasks != 1 else ''} ({agents} task "
        f"agent{'s' if agents != 1 else ''}), {published} published "
        f"path{'s' if published != 1 else ''}: {os.path.abspath(out)}{extra}"
    )


def _class_metrics(args: argparse.Namespace):
    """The per-class evaluation for the report (cached across --watch rewrites), or None."""
    if not args.class_metrics:
        return None
    from munet.agents.class_evaluation import best_paths_class_metrics
    from munet.system import SystemStore

    cache: dict = {}
    return lambda: best_paths_class_metrics(SystemStore(args.state_dir), args.data_dir, cache)


def _report(args: argparse.Namespace) -> int:
    from munet.report.baseline import BaselineError, load_baselines
    from munet.report.html import watch_report, write_report

    if "://" not in args.state_dir and not os.path.isdir(args.state_dir):
        print(f"munet: error: no state dir at {args.state_dir!r}", file=sys.stderr)
        return 2
    try:
        baselines = load_baselines(args.baseline)
    except BaselineError as error:
        print(f"munet: error: --baseline: {error}", file=sys.stderr)
        return 2
    if args.watch is not None:
        if args.watch <= 0:
            print(f"munet: error: --watch {args.watch:g}: expected seconds > 0", file=sys.stderr)
            return 2
        print(f"watching {args.state_dir} every {args.watch:g}s (Ctrl-C to stop)")
        watch_report(
            args.state_dir,
            args.out,
            args.watch,
            png=args.png,
            baselines=baselines,
            class_metrics=_class_metrics(args),
            on_write=lambda view: print(
                f"{time.strftime('%H:%M:%S')} {_describe(view, args.out, args.png)}", flush=True
            ),
        )
        return 0
    view = write_report(
        args.state_dir,
        args.out,
        png=args.png,
        baselines=baselines,
        class_metrics=_class_metrics(args),
    )
    for problem in view.warnings:
        print(f"munet: warning: {problem}", file=sys.stderr)
    print(_describe(view, args.out, args.png))
    return 0
