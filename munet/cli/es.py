"""`munet es NAME`: the evolution-strategies worked problems.

munet es influence [--plot out.png]   PES vs truncated ES/backprop on influence balancing
munet es lr [--plot out.png]          learning an SGD learning rate on digits vs a grid

Both take ``--devices N`` (or a list, ``--devices cuda:0,cuda:1`` / ``cpu,cpu``) to spread the
PES and truncated-ES particles over several devices.
"""

from __future__ import annotations

import argparse
import sys

ESTIMATOR_NAMES = ("full_es", "tes", "pes", "tbptt")


def _estimator_list(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    for name in names:
        if name not in ESTIMATOR_NAMES:
            raise argparse.ArgumentTypeError(
                f"unknown estimator {name!r}; known: {', '.join(ESTIMATOR_NAMES)}"
            )
    if not names:
        raise argparse.ArgumentTypeError("give at least one estimator")
    return names


def _float_list(text: str) -> list[float]:
    try:
        return [float(value) for value in text.split(",") if value.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated numbers, got {text!r}"
        ) from None


def _device_spec(text: str) -> int | list[str]:
    """``N`` (a count, resolved later) or a comma-separated device list."""
    if text.strip().isdigit():
        return int(text)
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"expected a device count or list, got {text!r}")
    return names


def _devices(args: argparse.Namespace) -> list[str] | None:
    """The device list asked for, None for the single-device estimators.

    Raises:
        ValueError: for a device this machine lacks, or particles the devices do not divide.
    """
    if args.devices is None:
        return None
    from munet.es.devices import devices_for_count, resolve_devices

    devices = devices_for_count(args.devices) if isinstance(args.devices, int) else args.devices
    resolve_devices(devices)  # checked before anything runs
    if args.particles % len(devices):
        raise ValueError(
            f"--particles {args.particles} does not split evenly over {len(devices)} devices; "
            f"give a multiple of {len(devices)}"
        )
    return devices


def _common(parser: argparse.ArgumentParser, estimators: str) -> None:
    parser.add_argument(
        "--estimators",
        type=_estimator_list,
        default=_estimator_list(estimators),
        help=f"comma-separated, from {', '.join(ESTIMATOR_NAMES)} (default: {estimators})",
    )
    parser.add_argument("--plot", metavar="PNG", help="write a figure to this file")
    parser.add_argument("--log-every", type=int, default=0, help="print every N outer steps")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch CPU threads (default 1: the tensors are tiny, more threads only contend)",
    )
    parser.add_argument(
        "--devices",
        type=_device_spec,
        metavar="N|LIST",
        help="run pes and tes with their particles split over N devices (N CUDA devices, or "
        "N CPU shards where there is no CUDA) or over a list such as cuda:0,cuda:1 or cpu,cpu "
        "(a device may repeat); tbptt and full_es stay on one device",
    )
    parser.add_argument(
        "--replicate-data",
        action="store_true",
        help="with --devices: every device trains on the same batches",
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds `munet es influence` and `munet es lr`."""
    group = subparsers.add_parser(
        "es", help="evolution-strategies gradient estimators (PES) on worked problems"
    )
    es_commands = group.add_subparsers(dest="es_command", metavar="NAME")

    influence = es_commands.add_parser(
        "influence",
        help="influence balancing (PES paper, sec. 5.1): final theta per estimator vs optimum",
    )
    _common(influence, "tbptt,tes,pes")
    influence.add_argument("--steps", type=int, default=3000)
    influence.add_argument("--truncation-length", type=int, default=1)
    influence.add_argument("--particles", type=int, default=1000)
    influence.add_argument("--std", type=float, default=0.1)
    influence.add_argument("--meta-lr", type=float, default=1e-4, help="SGD step on theta")
    influence.add_argument("--seed", type=int, default=3)
    influence.set_defaults(func=_influence)

    lr = es_commands.add_parser(
        "lr", help="learn SGD's learning rate for a tiny MLP on digits; compare with a grid"
    )
    _common(lr, "pes,tes")
    lr.add_argument("--steps", type=int, default=300, help="outer steps per estimator")
    lr.add_argument("--episode-length", type=int, default=100, help="SGD steps per episode")
    lr.add_argument("--truncation-length", type=int, default=10)
    lr.add_argument("--particles", type=int, default=16)
    lr.add_argument("--std", type=float, default=0.1, help="perturbation std in log10 units")
    lr.add_argument("--meta-lr", type=float, default=0.05, help="Adam step on theta")
    lr.add_argument("--knots", type=int, default=1, help="log10-lr knots (1: constant rate)")
    lr.add_argument("--initial-log10-lr", type=float, default=-2.0)
    lr.add_argument(
        "--grid",
        type=_float_list,
        help="log10 rates to compare, e.g. --grid=-2,-1,0 (default -3 to 0.5 by 0.25)",
    )
    lr.add_argument("--eval-runs", type=int, default=16, help="networks per score")
    lr.add_argument("--seed", type=int, default=0)
    lr.add_argument("--checkpoint", metavar="DIR", help="save each run here; resume if present")
    lr.set_defaults(func=_learning_rate)

    group.set_defaults(func=lambda args: group.print_help() or 2)


def _say_devices(devices: list[str] | None, args: argparse.Namespace) -> None:
    if devices is None:
        return
    data = "the same data on every device" if args.replicate_data else "separate data"
    print(
        f"pes/tes: {args.particles} particles over {len(devices)} devices "
        f"({', '.join(devices)}), {data}"
    )


def _influence(args: argparse.Namespace) -> int:
    import torch

    from munet.es.experiments import run_influence_balancing

    torch.set_num_threads(args.threads)
    try:
        devices = _devices(args)
        _say_devices(devices, args)
        result = run_influence_balancing(
            estimators=args.estimators,
            steps=args.steps,
            truncation_length=args.truncation_length,
            num_particles=args.particles,
            std=args.std,
            meta_lr=args.meta_lr,
            seed=args.seed,
            log_every=args.log_every,
            devices=devices,
            replicate_data=args.replicate_data,
        )
    except ValueError as error:  # bad settings: say which, no traceback
        print(f"munet: error: {error}", file=sys.stderr)
        return 2
    print(f"true optimum: theta* = {result.true_optimum:+.6f}")
    for run in result.runs:
        error = run.theta[0] - result.true_optimum
        print(
            f"{run.label:<14} final theta {run.theta[0]:+.6f}  (theta - theta* = {error:+.4f})  "
            f"500-step loss {run.final_metric:.4g}"
        )
    if args.plot:
        from munet.es.plots import plot_influence

        print(f"wrote {plot_influence(result, args.plot)}")
    return 0


def _learning_rate(args: argparse.Namespace) -> int:
    import torch

    from munet.es.experiments import run_learning_rate

    torch.set_num_threads(args.threads)
    try:
        devices = _devices(args)
        _say_devices(devices, args)
        result = run_learning_rate(
            estimators=args.estimators,
            steps=args.steps,
            episode_length=args.episode_length,
            truncation_length=args.truncation_length,
            num_particles=args.particles,
            std=args.std,
            meta_lr=args.meta_lr,
            num_knots=args.knots,
            initial_log10_lr=args.initial_log10_lr,
            grid=args.grid,
            eval_runs=args.eval_runs,
            seed=args.seed,
            checkpoint_dir=args.checkpoint,
            log_every=args.log_every,
            devices=devices,
            replicate_data=args.replicate_data,
        )
    except ValueError as error:  # bad settings or a mismatched checkpoint: say which
        print(f"munet: error: {error}", file=sys.stderr)
        return 2
    print(f"fixed learning rates ({result.episode_length} SGD steps, {args.eval_runs} networks):")
    print("  log10 lr   mean train loss   final val loss   final val acc")
    for log10_lr, metrics in result.grid:
        print(
            f"  {log10_lr:+8.2f}   {metrics.mean_train_loss:15.4f}   "
            f"{metrics.final_val_loss:14.4f}   {metrics.final_val_accuracy:13.3f}"
        )
    best_rate, best = min(result.grid, key=lambda item: item[1].mean_train_loss)
    print(
        f"best fixed rate: log10 lr {best_rate:+.2f} (mean train loss {best.mean_train_loss:.4f})"
    )
    for run, metrics in zip(result.runs, result.run_metrics, strict=True):
        knots = ", ".join(f"{value:+.3f}" for value in run.theta)
        print(
            f"{run.label:<14} learned log10 lr [{knots}]  mean train loss "
            f"{metrics.mean_train_loss:.4f}  final val loss {metrics.final_val_loss:.4f}  "
            f"final val acc {metrics.final_val_accuracy:.3f}"
        )
    if args.plot:
        from munet.es.plots import plot_learning_rate

        print(f"wrote {plot_learning_rate(result, args.plot)}")
    return 0
