"""`munet config show`: the config an agent would run with, as JSON.

    munet config show --agent VitCpu                          # the preset
    munet config show --agent VitCpu --set batch_size=16      # the preset, overridden
    munet config show --agent VitCpu --task digits -d state   # what `munet run` would use
    munet config show --agent VitCpu opt_lr num_layers        # only these keys

With a task and a state dir holding that agent, the config stored with its latest state (what a
rerun continues with), then the overrides; else the preset and the overrides. The JSON goes to
stdout, where it came from to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from munet.cli.agents import AGENT_HELP, DEFAULT_STATE_DIR, add_config_options
from munet.hints import did_you_mean


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
        "keys",
        nargs="*",
        metavar="KEY",
        help="only these keys, as a JSON object: a field (opt_lr), a dotted path into one "
        "(scorer.scale_factor) or an hparam default (num_layers, as --set takes it)",
    )
    show.add_argument(
        "--task", default=None, help="the agent's task (to read its stored config from -d)"
    )
    show.add_argument(
        "-d",
        "--state-dir",
        default=DEFAULT_STATE_DIR,
        help=f"system state dir, local path or fsspec URL (default: {DEFAULT_STATE_DIR})",
    )
    add_config_options(show)
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
    if not args.keys:
        print(config.to_json())
        return 0
    data = config.to_dict()
    print(json.dumps({key: config_value(data, key) for key in args.keys}, indent=2))
    return 0


def config_value(data: dict[str, Any], key: str) -> Any:
    """The value of ``key`` in a config's ``to_dict()``: a field, a dotted path into one, or
    an hparam default by its own name (as ``--set num_layers=2`` takes it).

    Raises:
        ValueError: no such key (naming close ones).
    """
    value: Any = data
    for part in key.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        else:
            break
    else:
        return value
    hparams = data.get("hparams_defaults") or {}
    if key in hparams:
        return hparams[key]
    known = [*data, *hparams]
    raise ValueError(
        f"unknown config key {key!r}{did_you_mean(key, known)}; `munet config show --agent "
        "NAME` lists them all"
    )
