"""`munet nasbench ...`: enumerate the cell space, write a synthetic table, run searches."""

from __future__ import annotations

import argparse
import json
import sys


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


def _epoch_list(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}"
        ) from None
    if not values:
        raise argparse.ArgumentTypeError("expected at least one epoch budget")
    return values


def _option(text: str) -> tuple[str, str, object]:
    """`strategy.key=value` with a JSON value (bare words are strings)."""
    name, sep, value = text.partition("=")
    strategy, dot, key = name.partition(".")
    if not sep or not dot or not strategy or not key:
        raise argparse.ArgumentTypeError(
            f"expected STRATEGY.OPTION=VALUE (e.g. evolution.population_size=20), got {text!r}"
        )
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        parsed = value
    return strategy, key, parsed


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds `munet nasbench {enumerate,generate,info,search}`."""
    parser = subparsers.add_parser("nasbench", help="NAS-Bench-101: tabular NAS experiments")
    commands = parser.add_subparsers(dest="nasbench_command", metavar="SUBCOMMAND")
    parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])

    enum = commands.add_parser(
        "enumerate", help="count the unique cells (423,624 for 7 vertices, 9 edges, 3 ops)"
    )
    enum.add_argument("--max-vertices", type=int, default=7)
    enum.add_argument("--max-edges", type=int, default=9)
    enum.add_argument("--num-ops", type=int, default=3)
    enum.add_argument("--json", action="store_true", help="print the result as JSON")
    enum.set_defaults(func=_enumerate)

    gen = commands.add_parser(
        "generate", help="write a small table in the published TFRecord format (for demos/tests)"
    )
    gen.add_argument("--out", required=True, help="output .tfrecord file")
    gen.add_argument("--max-vertices", type=int, default=5, help="every unique cell up to this")
    gen.add_argument("--max-edges", type=int, default=9)
    gen.add_argument("--epochs", type=_epoch_list, default=[4, 12, 36, 108])
    gen.add_argument("--repeats", type=_positive_int, default=3)
    gen.add_argument("--seed", type=int, default=0)
    gen.set_defaults(func=_generate)

    info = commands.add_parser("info", help="summarise a NAS-Bench table file")
    info.add_argument("--dataset", required=True)
    info.add_argument(
        "--verify-hashes", action="store_true", help="recompute every cell's graph hash"
    )
    info.set_defaults(func=_info)

    search = commands.add_parser(
        "search", help="run search strategies under a simulated training-time budget"
    )
    search.add_argument("--dataset", required=True, help="NAS-Bench .tfrecord file")
    search.add_argument(
        "--strategy",
        action="append",
        required=True,
        help="strategy name (repeatable), or 'all'",
    )
    search.add_argument("--budget", type=_positive_float, required=True, help="seconds")
    search.add_argument("--trials", type=_positive_int, default=10)
    search.add_argument("--seed", type=int, default=0, help="first trial seed")
    search.add_argument("--epochs", type=int, default=108, help="epoch budget queried")
    search.add_argument(
        "--option",
        type=_option,
        action="append",
        default=[],
        metavar="STRATEGY.KEY=VALUE",
        help="strategy option override, e.g. regularized_evolution.sample_size=5",
    )
    search.add_argument("--plot", help="write best-so-far test accuracy vs time (png)")
    search.add_argument("--csv", help="write every curve point (csv)")
    search.set_defaults(func=_search)


def _enumerate(args: argparse.Namespace) -> int:
    from munet.nasbench.enumerate import enumerate_unique_graphs

    try:
        result = enumerate_unique_graphs(args.max_vertices, args.max_edges, args.num_ops)
    except ValueError as error:
        print(f"munet: error: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(
            json.dumps(
                {
                    "count": result.count,
                    "count_by_vertices": result.count_by_vertices,
                    "labeled_by_vertices": result.labeled_by_vertices,
                    "seconds": round(result.seconds, 3),
                }
            )
        )
        return 0
    for vertices, count in result.count_by_vertices.items():
        print(
            f"{vertices} vertices: {count:>8,} unique of "
            f"{result.labeled_by_vertices[vertices]:>9,} labelled graphs"
        )
    print(f"unique graphs: {result.count} ({result.seconds:.2f} s)")
    return 0


def _generate(args: argparse.Namespace) -> int:
    from munet.nasbench.generate import write_synthetic_dataset

    try:
        count = write_synthetic_dataset(
            args.out, args.max_vertices, args.max_edges, args.epochs, args.repeats, args.seed
        )
    except ValueError as error:
        print(f"munet: error: {error}", file=sys.stderr)
        return 2
    print(f"wrote {count} records to {args.out}")
    return 0


def _load(path: str, verify_hashes: bool = False):
    from munet.nasbench.api import NASBench

    return NASBench(path, verify_hashes=verify_hashes)


def _info(args: argparse.Namespace) -> int:
    nasbench = _load(args.dataset, args.verify_hashes)
    sizes: dict[int, int] = {}
    for stats in nasbench.fixed_statistics.values():
        v = stats["module_adjacency"].shape[0]
        sizes[v] = sizes.get(v, 0) + 1
    print(f"{args.dataset}: {len(nasbench)} cells, epochs {sorted(nasbench.valid_epochs)}")
    if args.verify_hashes:
        print("  every stored hash matches its cell")
    for v in sorted(sizes):
        print(f"  {v} vertices: {sizes[v]} cells")
    return 0


def _search(args: argparse.Namespace) -> int:
    from munet.nasbench.runner import (
        format_summary,
        plot_curves,
        resolve_strategies,
        run_trials,
        summarize,
        write_curves_csv,
    )

    try:
        names = resolve_strategies(args.strategy)
    except ValueError as error:
        print(f"munet: error: {error}", file=sys.stderr)
        return 2
    options: dict[str, dict[str, object]] = {}
    for strategy, key, value in args.option:
        if strategy not in names:
            print(
                f"munet: error: --option for {strategy!r}, which is not being run",
                file=sys.stderr,
            )
            return 2
        options.setdefault(strategy, {})[key] = value
    nasbench = _load(args.dataset)
    try:
        curves = run_trials(
            nasbench,
            names,
            args.budget,
            args.trials,
            seed=args.seed,
            epochs=args.epochs,
            options=options,
        )
    except ValueError as error:
        print(f"munet: error: {error}", file=sys.stderr)
        return 2
    print(
        f"{len(nasbench)} cells, budget {args.budget:g} s simulated training, "
        f"{args.trials} trials per strategy, {args.epochs} epochs"
    )
    print(format_summary(summarize(curves)))
    if args.csv:
        write_curves_csv(curves, args.csv)
        print(f"curves: {args.csv}")
    if args.plot:
        plot_curves(curves, args.plot, args.budget)
        print(f"plot: {args.plot}")
    return 0
