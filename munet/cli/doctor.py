"""`munet doctor`: find damaged states in a state dir, and move them aside.

    munet doctor                           # list damaged states of ./state (exit code 5 if any)
    munet doctor -d state                  # the same, naming the state dir
    munet doctor -d state --quarantine     # move them to state/.quarantine/ (never deletes)
    munet doctor -d state --clean          # remove stray files no committed state uses

Stray files (states deleted or quarantined half-way, a killed writer's unfinished save, late
requests of a writer that lost its lease) are listed apart: they are not part of any committed
state, and each agent's next holder removes them when it takes the agent's lock
(munet.system.strays).
"""

from __future__ import annotations

import argparse
import os
import sys

from munet.cli.errors import EXIT_BAD_INPUT, EXIT_DAMAGED_STATE


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds `doctor`."""
    doctor = subparsers.add_parser(
        "doctor",
        help="check every committed state; list or quarantine the damaged ones",
        description=(
            "Check every committed state of every agent (manifest, shards, checksums) and list "
            "the damaged ones with what is wrong. With --quarantine, move them into "
            "STATE_DIR/.quarantine/AGENT/ (nothing is deleted); each agent then resumes from "
            "its previous good state. Exit code 0 when every state is whole, 5 when damaged "
            "states remain in place."
        ),
    )
    doctor.add_argument(
        "-d",
        "--state-dir",
        default="state",
        help="system state dir, local path or fsspec URL (default: state, as munet run)",
    )
    doctor.add_argument(
        "--quarantine", action="store_true", help="move damaged states aside (never deletes)"
    )
    doctor.add_argument(
        "--clean",
        action="store_true",
        help="remove stray files no committed state uses (takes each such agent's lock; a "
        "running agent is skipped: it removed them when it took its lock)",
    )
    doctor.add_argument(
        "--fast",
        action="store_true",
        help="check manifests and shard headers only (no checksums: misses flipped bits)",
    )
    doctor.set_defaults(func=_doctor)


def _doctor(args: argparse.Namespace) -> int:
    from munet.system import SystemStore
    from munet.system.integrity import find_damaged, quarantine

    if "://" not in args.state_dir and not os.path.isdir(args.state_dir):
        print(f"munet: error: no state dir at {args.state_dir!r}", file=sys.stderr)
        return EXIT_BAD_INPUT
    store = SystemStore(args.state_dir)
    damaged = find_damaged(store, "structure" if args.fast else "checksums")
    strays = _report_strays(store, args)
    if not damaged:
        if strays:
            print(f"{args.state_dir}: every committed state is whole; {strays} folder(s) hold "
                  "stray files (listed above)")
        else:
            print(f"{args.state_dir}: every committed state is whole")
        return 0
    for item in damaged:
        where = item.state.relative_dir if item.state.cycle >= 0 else f"{item.state.agent_id}/"
        print(f"damaged {where}: {item.problem}")
    if not args.quarantine:
        print(
            f"{len(damaged)} damaged state(s); `munet doctor -d {args.state_dir} --quarantine` "
            "moves them aside"
        )
        return EXIT_DAMAGED_STATE
    kept = 0
    for result in quarantine(store, damaged):
        if result.moved_to is not None:
            print(f"moved {result.state.relative_dir} to {result.moved_to}")
        else:
            kept += 1
            print(f"kept {result.state.relative_dir}: {result.kept_because}")
    return EXIT_DAMAGED_STATE if kept else 0


def _report_strays(store, args: argparse.Namespace) -> int:
    """List (or with --clean remove) the files no committed state uses; returns how many
    folders still hold some."""
    from munet.system.errors import AgentLockedError
    from munet.system.strays import find_strays

    left = 0
    for agent_id in store.agent_ids():
        strays = find_strays(store, agent_id)
        for stray in strays:
            count = "the folder" if stray.whole_folder else f"{len(stray.files)} file(s)"
            print(f"stray {agent_id}/{stray.folder}: {count}, {stray.why}")
        if not strays:
            continue
        if not args.clean:
            left += len(strays)
            continue
        try:
            with store.lock(agent_id):  # taking the lock removes them (munet.system.strays)
                pass
        except AgentLockedError as err:
            left += len(strays)
            print(f"kept the strays of {agent_id}: the agent is running ({err})")
            continue
        print(f"removed the stray files of {agent_id}")
    if left and not args.clean:
        print(f"{left} folder(s) with stray files: each agent's next run removes them, "
              f"`munet doctor -d {args.state_dir} --clean` now")
    return left
