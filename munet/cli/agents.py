"""`munet root`, `munet run`, `munet leaderboard`, `munet demo`: grow a system with agents.

    munet root --agent VitCpu --state-dir state              # built-in pretrained root
    munet run --agent VitCpu --task digits --cycles 2 --state-dir state
    munet leaderboard --state-dir state --format table
    munet demo                                                # the whole thing, on a CPU

Run several `munet run` processes (one per task) on one state dir to grow the system
concurrently; each sees the others' published paths at the start of each of its cycles.
"""

from __future__ import annotations

import argparse
import logging
import sys

DEFAULT_STATE_DIR = "state"


def _agent_help() -> str:
    # The preset table imports no torch, so --help stays fast.
    from munet.config.presets import PRESETS

    singlepath = [name for name in PRESETS if not name.startswith("Multi")]
    multipath = [name for name in PRESETS if name.startswith("Multi")]
    return f"agent preset: {', '.join(singlepath)}; multipath: {', '.join(multipath)}"


AGENT_HELP = _agent_help()


def add_common_options(
    parser: argparse.ArgumentParser, state_default: str = DEFAULT_STATE_DIR
) -> None:
    parser.add_argument(
        "-d",
        "--state-dir",
        default=state_default,
        help=f"system state dir, local path or fsspec URL (default: {state_default})",
    )


def add_config_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config value (repeatable), e.g. --set opt_lr=0.05 --set batch_size=64",
    )
    parser.add_argument(
        "--seed",
        dest="overrides",
        action=_SeedOverride,
        type=int,
        default=argparse.SUPPRESS,
        metavar="N",
        help="seed of every random decision, data order and init (the same as --set seed=N; "
        "default: the preset's, 0)",
    )


class _SeedOverride(argparse.Action):
    """``--seed N``: the override ``seed=N``, in its place among the ``--set`` ones."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        overrides = list(getattr(namespace, self.dest, None) or [])
        setattr(namespace, self.dest, [*overrides, f"seed={values}"])


def _add_verbosity(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="also every sampled path (parent, quality, score, verdict) and every mutation, "
        "selection and reuse decision",
    )
    group.add_argument(
        "-q", "--quiet", action="store_true", help="one line per cycle, warnings and results"
    )
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="training progress bars on stderr (default: when stderr is a terminal)",
    )


def detail_of(args: argparse.Namespace) -> str:
    """The agents' lines for -q / (default) / -v (munet.agents.options.RunOptions.detail)."""
    return "cycle" if args.quiet else "full" if args.verbose else "generation"


def _setup_logging(args: argparse.Namespace, default: int = logging.INFO) -> None:
    level = logging.DEBUG if args.verbose else logging.WARNING if args.quiet else default
    from munet.agents.reports import DECISIONS_LOGGER
    from munet.progress import BarSafeHandler

    # The agents' decisions (about ten lines a generation) are -v's only.
    logging.getLogger(DECISIONS_LOGGER).setLevel(logging.DEBUG if args.verbose else logging.WARNING)

    handler = BarSafeHandler()  # above the progress bars, never inside them
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger("munet")
    logger.handlers[:] = [handler]
    logger.setLevel(level)
    logger.propagate = False


def exit_with_error(message: object) -> int:
    print(f"munet: error: {message}", file=sys.stderr)
    return 2


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds `root`, `run`, `leaderboard` and `demo`."""
    from munet.cli.options import add_split_options, add_tracking_options
    from munet.config import (
        DEFAULT_DEMO_CYCLES,
        DEFAULT_DEMO_STATE_DIR,
        DEMO_AGENT,
        DEMO_MULTIPATH_TASKS,
        DEMO_TASKS,
    )

    root = subparsers.add_parser(
        "root",
        help="create the root model agents start from",
        description="Create the root model of an agent class in a state dir (once).",
    )
    root.add_argument("--agent", required=True, help=AGENT_HELP)
    root.add_argument(
        "--root",
        default=None,
        choices=["pretrained", "random_init", "checkpoint"],
        help=(
            # The presets munet.agents.root.default_root_kind starts from their built-in root
            # (tests/cli/test_help_defaults.py checks the list; --help imports no torch).
            "pretrained (the preset's built-in root; the default of VitCpuHybrid, VitCpu and "
            "VitT3, which ship one), random_init (the default elsewhere), or checkpoint (needs "
            "--set checkpoint_path=PATH: an augreg .npz, a .safetensors or .pth/.bin state dict, "
            "or a Hugging Face save_pretrained folder)"
        ),
    )
    add_common_options(root)
    add_config_options(root)
    _add_verbosity(root)
    root.set_defaults(func=_root)

    run = subparsers.add_parser(
        "run",
        help="run an agent on a task for some cycles",
        description=(
            "Run (or resume) the agent of an agent class on a task until it completed --cycles "
            "cycles. Rerun with more cycles to continue."
        ),
    )
    run.add_argument("--agent", required=True, help=AGENT_HELP)
    run.add_argument("--task", required=True, help="task name, e.g. digits, synth/shape, cifar10")
    run.add_argument("--cycles", type=int, required=True, help="total cycles to reach")
    run.add_argument(
        "--data",
        default=None,
        metavar="SOURCE",
        help=(
            "the data a new task name reads: folder:ROOT, npz:FILE, hf:DIR or tfds:NAME; "
            "stored with the state, so later runs need no --data"
        ),
    )
    run.add_argument(
        "--skip-bad-files",
        action="store_true",
        help="folder: data: leave out image files that cannot be read (empty, corrupt) instead "
        "of refusing the folder; they are named in a warning",
    )
    add_common_options(run)
    add_config_options(run)
    _add_verbosity(run)
    add_split_options(run)
    add_tracking_options(run)
    run.set_defaults(func=_run)

    board = subparsers.add_parser(
        "leaderboard",
        help="show every agent's published paths",
        description="The published paths of every agent: scores, quality, params, FLOPs.",
    )
    add_common_options(board)
    board.add_argument("--format", default="table", choices=["table", "csv", "json"])
    board.add_argument("--agent", action="append", help="only these agent classes (repeatable)")
    board.set_defaults(func=_leaderboard)

    demo = subparsers.add_parser(
        "demo",
        help="grow a small multitask system on the CPU (a few minutes)",
        description=(
            "From an empty state dir: a CPU preset's built-in pretrained root model, then agents "
            "on digits and three generated tasks, cycle by cycle; then multipath agents on the "
            "weakest tasks; ends with the leaderboard and multipath vs singlepath. "
            "Rerunning resumes."
        ),
    )
    add_common_options(demo, DEFAULT_DEMO_STATE_DIR)
    demo.add_argument(
        "--cycles",
        type=int,
        default=DEFAULT_DEMO_CYCLES,
        help="cycles per task (default %(default)s)",
    )
    demo.add_argument(
        "--task",
        action="append",
        dest="tasks",
        help=f"a task (repeatable; default: {', '.join(DEMO_TASKS)})",
    )
    demo.add_argument(
        "--workers",
        type=int,
        default=None,
        help="agents run in parallel processes (default: one per core); 1 prints every generation",
    )
    demo.add_argument(
        "--multipath-tasks",
        type=int,
        default=DEMO_MULTIPATH_TASKS,
        help="then the preset's multipath agents on this many of the weakest tasks (default "
        "%(default)s; 0: skip the stage)",
    )
    demo.add_argument(
        "--agent",
        default=DEMO_AGENT,
        help="the singlepath preset (default %(default)s); the multipath stage runs Multi<agent>",
    )
    demo.add_argument(
        "--root",
        default=None,
        choices=["pretrained", "random_init"],
        help="root model (default: the state dir's, else pretrained where the preset ships one)",
    )
    add_config_options(demo)
    _add_verbosity(demo)
    add_tracking_options(demo)
    demo.set_defaults(func=_demo)


def _root(args: argparse.Namespace) -> int:
    from munet.agents.root import create_root_model
    from munet.agents.runner import resolve_config
    from munet.config import ConfigError

    _setup_logging(args)
    try:
        config = resolve_config(args.agent, args.overrides)
    except ConfigError as err:
        return exit_with_error(err)
    # No --root: the root the state dir has, else the preset's default (as the Python API).
    # Store and OS errors (locked, read-only, disk full, ...) are one line each, by main().
    path = create_root_model(config, args.state_dir, args.root)
    print(f"root model {path.full_id} ({path.num_params()} params) in {args.state_dir}")
    return 0


def _run(args: argparse.Namespace) -> int:
    from munet.agents.runner import make_agent, resolve_config
    from munet.agents.task_data import bind_task_data
    from munet.cli.options import split_rule_of, tracking_settings
    from munet.cli.prechecks import check_parent_hparams
    from munet.system import SystemStore, format_agent_id

    _setup_logging(args)
    if ":" in args.task:  # a source given as the task: say how to name it
        return exit_with_error(
            f"task name {args.task!r} holds ':'; name the task and give its data, e.g. "
            f"--task mydata --data {args.task}"
        )
    # Every failure (bad config, locked agent, damaged state, full disk) is one line: main().
    store = SystemStore(args.state_dir)
    config = resolve_config(args.agent, args.overrides, store, args.task)
    # --val-split/--test-split and --log-dir/--wandb (munet.cli.options).
    split, tracking = split_rule_of(args), tracking_settings(args)
    config = bind_task_data(
        config, args.task, store, args.data, format_agent_id(args.agent, args.task), split
    )
    # Refused before the agent's lock: a refused run leaves no folder and no `.lock`.
    check_parent_hparams(config, store, format_agent_id(args.agent, args.task))
    # A start-of-run block, then one line per generation and per cycle; -q: one line per
    # cycle (with the time left); -v: also every sampled path and every decision.
    agent = make_agent(
        config,
        args.task,
        store,
        progress=args.progress,
        detail=detail_of(args),
        tracker=tracking,
        skip_bad_files=args.skip_bad_files,
    )
    report = agent.run(args.cycles)
    best = report.best
    if best is not None:
        print(
            f"{report.agent_id}: {report.cycle} cycles; best path {best.full_id} "
            f"quality {best.metrics.get('quality', float('nan')):.4f} "
            f"test quality {best.metrics.get('test_quality', float('nan')):.4f}"
        )
    return 0


def _leaderboard(args: argparse.Namespace) -> int:
    import os

    from munet.agents.runner import leaderboard_rows
    from munet.report.leaderboard import format_leaderboard
    from munet.system import SystemStore

    if "://" not in args.state_dir and not os.path.isdir(args.state_dir):
        return exit_with_error(f"no state dir at {args.state_dir!r}")
    rows = leaderboard_rows(SystemStore(args.state_dir), args.agent)  # skips damaged states
    print(format_leaderboard(rows, args.format))
    return 0


def _demo(args: argparse.Namespace) -> int:
    from munet.agents.demo import run_demo
    from munet.cli.options import tracking_settings
    from munet.config import DEMO_TASKS

    _setup_logging(args, default=logging.WARNING)
    run_demo(
        args.state_dir,
        cycles=args.cycles,
        tasks=args.tasks or DEMO_TASKS,
        overrides=args.overrides,
        progress=args.progress,
        workers=args.workers,
        multipath_tasks=args.multipath_tasks,
        tracking=tracking_settings(args),
        root_kind=args.root,
        detail=detail_of(args),
        preset=args.agent,
    )
    return 0
