"""`munet tasks`: the tasks available here, what the others need, and one task's sizing."""

from __future__ import annotations

import argparse
import importlib.util
import sys

#: The sizing `munet tasks show` uses when no agent sizes the task (the seed's ViT-Ti/3 values).
SHOW_DEFAULTS = {
    "batch_size": 512,
    "num_train_examples_between_validations_max": 300_000,
    "num_validation_examples_max": 10_000,
}
SIZING_FIELDS = tuple(SHOW_DEFAULTS)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds `munet tasks [list|show NAME]`."""
    parser = subparsers.add_parser(
        "tasks",
        help="list tasks (embedded, real sources, TFDS table) or show one task's sizing",
        description="Lists the tasks available here and what each of the others needs.",
    )
    parser.set_defaults(func=_list, all=False, data_dir=None)
    sub = parser.add_subparsers(dest="tasks_command", metavar="SUBCOMMAND")
    list_parser = sub.add_parser("list", help="list tasks (the default)")
    list_parser.add_argument("--all", action="store_true", help="print every TFDS task name")
    list_parser.set_defaults(func=_list)
    show = sub.add_parser("show", help="build a task and print its classes and batch sizing")
    show.add_argument("name", help="task name, e.g. digits, synth/count, folder:ROOT")
    show.add_argument(
        "--agent",
        default=None,
        help="size the task as this agent preset does (its config stored in -d when it ran "
        "on the task); default: the first agent on the task in -d, else --batch-size etc.",
    )
    show.add_argument(
        "--batch-size", type=int, default=None, help=f"(default: {SHOW_DEFAULTS['batch_size']})"
    )
    show.add_argument(
        "--num-train-examples-between-validations-max",
        type=int,
        default=None,
        help=f"(default: {SHOW_DEFAULTS['num_train_examples_between_validations_max']})",
    )
    show.add_argument(
        "--num-validation-examples-max",
        type=int,
        default=None,
        help=f"(default: {SHOW_DEFAULTS['num_validation_examples_max']})",
    )
    show.add_argument("--data-dir", default=None, help="TFDS data_dir / Hugging Face cache")
    show.add_argument(
        "-d",
        "--state-dir",
        default="state",
        help="where to look up a task named with munet run --data (default: state)",
    )
    show.set_defaults(func=_show)


def _requirement(package: str, module: str, extra: str) -> str:
    """``uses 'datasets' (installed)`` or ``needs 'datasets' (not installed: pip install
    'munet-evolve[hf]')``: the install hint only where something is missing."""
    if importlib.util.find_spec(module) is not None:
        return f"uses '{package}' (installed)"
    return f"needs '{package}' (not installed: pip install 'munet-evolve[{extra}]')"


def _print_entries(entries: dict, width: int) -> None:
    for name, entry in entries.items():
        needs = f"  [needs {entry.needs}]" if entry.needs else ""
        print(f"  {name:<{width}}  {entry.description}{needs}")


def _list(args: argparse.Namespace) -> int:
    from munet.tasks.registry import registered_tasks
    from munet.tasks.tfds_splits import tfds_task_names

    entries = registered_tasks()
    width = max(len(n) for n in entries)
    plain = {n: e for n, e in entries.items() if e.group != "suite"}
    suite = {n: e for n, e in entries.items() if e.group == "suite"}
    print("Available here, no download needed:")
    _print_entries(plain, width)
    print()
    if suite:
        print(
            "The 1k suite (VTAB-1k regime: 800 train + 200 validation, no download; "
            "munet.tasks.suite):"
        )
        _print_entries(suite, width)
        print()
    print("Your data on disk:")
    print("  folder:ROOT       an image-folder tree ROOT/<class>/*.png|jpg (or ROOT/train/...,")
    print("                    ROOT/validation/..., ROOT/test/...)")
    print("  npz:FILE.npz      arrays x_train/y_train[/x_validation/...][/x_test/...] or")
    print("                    images/labels")
    print("  hf:NAME_OR_DIR    a Hugging Face dataset saved to disk or in the local cache;")
    print(f"                    {_requirement('datasets', 'datasets', 'hf')}")
    print("  Name them: munet run --task flowers --data folder:ROOT ... (the state dir keeps")
    print("  the source; missing validation/test splits are 5% slices of train)")
    print()
    names = tfds_task_names()
    print(
        f"TensorFlow Datasets, the µNet seed's table ({len(names)} names, VTAB tasks also as "
        "NAME/1k):"
    )
    print(
        f"  {_requirement('tensorflow-datasets', 'tensorflow_datasets', 'tfds')} and the dataset "
        "prepared in a data_dir (tfds build NAME)"
    )
    if args.all:
        for name in names:
            print(f"  {name}")
    else:
        print(
            "  e.g. cifar100, cifar10 (validated on cifar10_1), imagenet2012, "
            "visual_domain_decathlon/dtd, oxford_iiit_pet/1k, clevr/count_all, ... "
            "(list them with --all)"
        )
        print("  tfds:NAME reads any other prepared TFDS dataset with the seed's default splits")
    return 0


def _binding(name: str, state_dir: str):
    """The data a state dir records for task `name`, or None."""
    import os

    if ":" in name:
        return None
    if "://" not in state_dir and not os.path.isdir(state_dir):
        return None
    from munet.agents.task_data import task_bindings
    from munet.system import SystemStore

    found = [b for b in task_bindings(SystemStore(state_dir), name) if b.data]
    return found[0] if found else None


def _agent_sizing(args: argparse.Namespace) -> tuple[dict[str, int], str]:
    """The sizing fields of the agent that sizes the task, and which agent that is: --agent
    (its config stored in the state dir for this task, else its preset), else the first agent
    on the task in the state dir; else the defaults."""
    import os

    from munet.agents.runner import resolve_config
    from munet.agents.task_data import task_bindings
    from munet.system import SystemStore, agent_class_name, format_agent_id

    has_state = "://" in args.state_dir or os.path.isdir(args.state_dir)
    store = SystemStore(args.state_dir) if has_state else None
    agent_class = args.agent
    if agent_class is None and store is not None:
        bindings = task_bindings(store, args.name)
        agent_class = agent_class_name(bindings[0].agent_id) if bindings else None
    if agent_class is None:
        return dict(SHOW_DEFAULTS), "defaults (--agent PRESET sizes it as that agent does)"
    # The config a run of that agent uses: stored with its state, else the preset.
    config = resolve_config(agent_class, (), store, args.name)
    state = store.latest_state(format_agent_id(agent_class, args.name)) if store else None
    where = f"config of {state.relative_dir}" if state is not None else "preset"
    return {f: getattr(config, f) for f in SIZING_FIELDS}, f"agent {agent_class} ({where})"


def _show(args: argparse.Namespace) -> int:
    from munet.tasks import get_task

    try:
        binding = _binding(args.name, args.state_dir)
        sizing, sized_by = _agent_sizing(args)
        given = {f: getattr(args, f) for f in SIZING_FIELDS if getattr(args, f) is not None}
        if given:
            sized_by += f", then {', '.join(f'{k}={v}' for k, v in given.items())}"
        sizing.update(given)
        task = get_task(args.name, **sizing,
            data=binding.data if binding else None,
            split_rule=binding.split_rule if binding else None,
            data_dir=args.data_dir,
        )
    except (ValueError, ImportError, NotImplementedError) as error:
        print(f"munet: error: {error}", file=sys.stderr)
        return 2
    sizing = task.sizing
    print(f"task: {task.name}")
    if binding is not None:
        print(f"source: {binding.describe()}")
    else:
        print(f"source: {task.source.name}")
    print(f"splits: {task.source.describe_splits()}")
    names = f" ({', '.join(task.class_names)})" if task.class_names else ""
    print(f"classes: {task.num_classes}{names}")
    print(
        f"examples: train {sizing.num_train_examples}, validation "
        f"{sizing.num_validation_examples_total} (used {task.num_validation_examples}), test "
        f"{sizing.num_test_examples}"
    )
    print(f"sized by: {sized_by}")
    print(f"train batch size: {task.train_batch_size}")
    print(f"train batches between validations: {task.num_train_batches_between_validations}")
    print(f"validation: {task.num_validation_batches} batches of {task.validation_batch_size}")
    return 0
