"""`munet launch`: run many agents at once on a Ray cluster against one shared store.

    munet launch --agent VitCpu --tasks digits,synth/shape,synth/count --cycles 2 -d state/c
    munet launch --agent VitT3 --tasks cifar10,cifar100,dtd --cycles 8 -d s3://bucket/system \\
        --ray-address auto --gpus-per-agent 1 --cpus-per-agent 8
    munet launch --agent VitCpu --tasks digits,synth/shape --agent MultiVitCpu --tasks digits \\
        --cpus-per-agent 1 --cpus-per-agent 2 --cycles 4 -d state/c     # mixed presets
"""

from __future__ import annotations

import argparse
import logging
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds `launch`."""
    from munet.cli.agents import add_common_options, add_config_options
    from munet.cli.options import add_tracking_options

    parser = subparsers.add_parser(
        "launch",
        help="run many agents on a Ray cluster (or a local Ray) against one store",
        description=(
            "Run agents as Ray tasks until each completed --cycles cycles, printing one line "
            "per finished generation and cycle, then the leaderboard. Give --agent PRESET "
            "--tasks T1,T2 once per preset (mixed presets run together). Without "
            "--ray-address a local Ray on 127.0.0.1 is started. Needs munet-evolve[ray]."
        ),
    )
    parser.add_argument(
        "--agent", action="append", required=True, dest="agents", help="preset (repeatable)"
    )
    parser.add_argument(
        "--tasks",
        action="append",
        required=True,
        help="comma-separated tasks of the preceding --agent (one --tasks per --agent)",
    )
    parser.add_argument("--cycles", type=int, required=True, help="total cycles per agent")
    add_common_options(parser)
    parser.add_argument("--ray-address", default=None, help="Ray cluster (default: local Ray)")
    parser.add_argument(
        "--num-cpus", type=int, default=None, help="CPUs of the local Ray (default: all)"
    )
    parser.add_argument(
        "--cpus-per-agent",
        type=float,
        action="append",
        help="CPUs each agent reserves: once for all, or once per --agent (default 1)",
    )
    parser.add_argument(
        "--gpus-per-agent",
        type=float,
        action="append",
        help="GPUs each agent reserves: once for all, or once per --agent (default 0)",
    )
    parser.add_argument(
        "--root",
        choices=["none", "default", "pretrained", "random_init"],
        default="none",
        help="create the root model of each singlepath class of the launch that has none: "
        "default (as `munet root` would: pretrained where the preset ships a root, e.g. "
        "VitCpuHybrid), pretrained or random_init (default: none; create it with `munet root`)",
    )
    parser.add_argument(
        "--max-retries", type=int, default=3, help="reruns of an agent whose worker died"
    )
    parser.add_argument(
        "--lease-ttl",
        type=float,
        default=None,
        help="seconds an agent's lease on an object store lasts without a heartbeat "
        "(default: $MUNET_LEASE_TTL or 30)",
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME",
        help="forward this environment variable to the workers (repeatable), e.g. "
        "AWS_ACCESS_KEY_ID when the nodes have no credentials of their own",
    )
    add_config_options(parser)
    parser.add_argument(
        "--agent-set",
        nargs=2,
        action="append",
        default=[],
        metavar=("PRESET", "KEY=VALUE"),
        help="override a config value of one preset's agents only (repeatable), after --set",
    )
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="an overall bar of every agent's generations, with ETA, on stderr (default: when "
        "stderr is a terminal)",
    )
    verbosity = parser.add_mutually_exclusive_group()
    verbosity.add_argument(
        "-v", "--verbose", action="store_true", help="also this process's debug log"
    )
    verbosity.add_argument(
        "-q", "--quiet", action="store_true", help="one line per cycle (no generation lines)"
    )
    add_tracking_options(parser)
    parser.set_defaults(func=_launch)


def _launch(args: argparse.Namespace) -> int:
    from munet.interrupts import defer_sigint

    # Ctrl-C while torch and Ray load (seconds) is taken once they have: an import it
    # interrupts leaves them half-initialised, and the process crashed instead of exiting 130.
    with defer_sigint():
        return _launch_deferred(args)


def _launch_deferred(args: argparse.Namespace) -> int:
    from munet.agents.singlepath import AgentError
    from munet.cli.agents import exit_with_error
    from munet.cli.errors import EXIT_AGENTS_FAILED, EXIT_INTERRUPTED, EXIT_TERMINATED
    from munet.cli.options import tracking_settings
    from munet.cluster import agent_specs, launch
    from munet.cluster.launch import ClusterLostError
    from munet.config import ConfigError
    from munet.interrupts import interruption_point
    from munet.progress import BarSafeHandler

    interruption_point()  # Ctrl-C while torch loaded: stop before starting anything
    handler = BarSafeHandler()  # sys.stderr as it is at each record
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger("munet")
    logger.handlers[:] = [handler]
    logger.setLevel(logging.DEBUG if args.verbose else logging.WARNING)
    logger.propagate = False
    try:
        specs = agent_specs(
            args.agents,
            args.tasks,
            args.cpus_per_agent,
            args.gpus_per_agent,
            [tuple(pair) for pair in args.agent_set],
        )
        if args.root != "none":
            _create_roots(specs, args)
        _check_parents(specs, args)
        interruption_point()
        result = launch(
            specs,
            args.state_dir,
            args.cycles,
            overrides=args.overrides,
            ray_address=args.ray_address,
            num_cpus=args.num_cpus,
            max_retries=args.max_retries,
            lease_ttl=args.lease_ttl,
            env_names=args.env,
            progress=args.progress,
            tracking=tracking_settings(args),
            detail="cycle" if args.quiet else "generation",
        )
    except (ConfigError, AgentError, ValueError, ImportError) as err:
        return exit_with_error(err)
    except ClusterLostError as err:  # not a bug in munet: a lost head node, say
        print(f"munet: error: {err}", file=sys.stderr)
        return EXIT_AGENTS_FAILED
    if result.interrupted:
        if result.terminated:
            return EXIT_TERMINATED
        return EXIT_INTERRUPTED
    if result.failures:
        for agent_id, error in result.failures.items():
            print(f"munet: error: agent {agent_id} failed: {error}", file=sys.stderr)
        return launch_exit_code(result, args.state_dir)
    return 0


def launch_exit_code(result, state_dir: str | None = None) -> int:
    """The exit code of a launch whose agents failed: the code `munet run` gives the first
    failed agent's error (3 for a locked agent, 5 for a damaged state, ...; munet.cli.errors),
    or 11 (agents failed) when any agent failed with an unexpected error or without one (a
    worker killed): a launch's failed agent is not by itself a bug in munet.

    Args:
        result: the launch's `LaunchResult`, with failures.
        state_dir: the launch's state dir (an OS error inside it says so).

    Returns:
        The exit code (0 when nothing failed).
    """
    from munet.cli.errors import EXIT_AGENTS_FAILED, classify

    codes = []
    for agent_id in result.failures:
        error = result.failure_errors.get(agent_id)
        known = None if error is None else classify(error, state_dir)
        if known is None:
            return EXIT_AGENTS_FAILED
        codes.append(known[0])
    return codes[0] if codes else 0


def _check_parents(specs, args: argparse.Namespace) -> None:
    """Refuse, before any agent starts (and takes its lock), a spec whose mutation ranges do
    not hold a parent's hparam value (`munet.cli.prechecks`)."""
    from munet.agents.runner import resolve_config
    from munet.cli.prechecks import check_parent_hparams
    from munet.system import SystemStore

    store = SystemStore(args.state_dir)
    for spec in specs:
        overrides = [*args.overrides, *spec.overrides]
        config = resolve_config(spec.agent_class, overrides, store, spec.task)
        check_parent_hparams(config, store, spec.agent_id)


def _create_roots(specs, args: argparse.Namespace) -> None:
    """A root model of kind ``args.root`` for each singlepath class of the launch (a multipath
    preset's singlepath class included) that has none."""
    from munet.agents.root import create_root_model
    from munet.agents.runner import resolve_config

    group_overrides = {s.agent_class: list(s.overrides) for s in specs}
    classes = []
    for agent_class in group_overrides:
        config = resolve_config(agent_class, [*args.overrides, *group_overrides[agent_class]])
        if getattr(config, "is_multipath", False):
            agent_class = config.singlepath_agent  # multipath agents have no root of their own
        if agent_class not in classes:
            classes.append(agent_class)
    for agent_class in classes:
        overrides = [*args.overrides, *group_overrides.get(agent_class, [])]
        config = resolve_config(agent_class, overrides)
        # "default": the root the state dir has, else the preset's (create_root_model's None).
        kind = None if args.root == "default" else args.root
        path = create_root_model(config, args.state_dir, kind)
        print(f"root model {path.full_id} in {args.state_dir}")
