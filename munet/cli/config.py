"""`munet config show`: the config an agent would run with, as JSON.

    munet config show --agent VitCpu                          # the preset
    munet config show --agent VitCpu --set batch_size=16      # the preset, overridden
    munet config show --agent VitCpu --task digits -d state   # what `munet run` would use

With a task and a state dir holding that agent, the config stored with its latest state (what a
rerun continues with), then the overrides; else the preset and the overrides. The JSON goes to
stdout, where it came from to stderr.
"""

from __future__ import annotations

import argparse
import os
import sys

from munet.cli.agents import AGENT_HELP, DEFAULT_STATE_DIR, _add_config


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds `munet config show`."""
    parser = subparsers.add_parser(
        "config",
        help="print the effective config of an agent (preset, stored state, overrides)",
        description="Print the config an agent runs with.",
    )
    sub = parser.add_subparsers(dest="config_command", metavar="SUBCOMMAND", required=True)
    show = sub.add_parser(
        "show",
        help="the effective config as JSON",
        description=(
            "The config `munet run` would use: the one stored with the agent's latest state "
            "when --task names an agent with a state in --state-dir, else the preset; then the "
            "--set overrides (checked as munet run checks them). JSON on stdout; where it came "
            "from on stderr."
        ),
    )
    show.add_argument("--agent", required=True, help=AGENT_HELP)
    show.add_argument(
        "--task", default=None, help="the agent's task (to read its stored config from -d)"
    )
    show.add_argument(
        "-d",
        "--state-dir",
        default=DEFAULT_STATE_DIR,
        help=f"system state dir, local path or fsspec URL (default: {DEFAULT_STATE_DIR})",
    )
    _add_config(show)
    show.set_defaults(func=_show)


def _stored_state(args: argparse.Namespace):
    """The agent's latest state in the state dir, or None (no task, no dir, no state)."""
    if args.task is None:
        return None, None
    if "://" not in args.state_dir and not os.path.isdir(args.state_dir):
        return None, None  # Never create a state dir to show a config.
    from munet.system import SystemStore, format_agent_id

    store = SystemStore(args.state_dir)
    return store, store.latest_state(format_agent_id(args.agent, args.task))


def _show(args: argparse.Namespace) -> int:
    from munet.agents.runner import resolve_config

    store, state = _stored_state(args)
    # Bad presets, keys and values are one line each with exit code 2 (munet.cli.errors).
    config = resolve_config(args.agent, args.overrides, store if state else None, args.task)
    config.validate()
    source = f"stored with {state.relative_dir}" if state is not None else f"preset {args.agent}"
    if args.overrides:
        source += f", then {len(args.overrides)} override(s): {' '.join(args.overrides)}"
    print(f"config of {args.agent}: {source}", file=sys.stderr)
    print(config.to_json())
    return 0
