"""Training and evaluation throughput of the agents' own code against a plain PyTorch loop.

"munet" is what an agent runs: ``train_candidates`` (the seed's SGD with clipping, the
candidate's precision, NaN tracking) on an ``AssembledVit`` and ``evaluate_accuracy``. "plain"
is a textbook loop on the same model as one ``nn.Module`` (``torch.optim.SGD`` with Nesterov
momentum, ``clip_grad_norm_``, autocast for bf16; eval under ``no_grad``). Every variant
(munet / plain x fp32 / bf16 x the preset's thread policy / one thread) is timed in each
round, in an order that rotates between rounds, so machine noise hits all of them alike;
figures are medians over rounds and every ``ratio:`` is the median of per-round ratios.

Each load phase runs the same rounds: ``idle`` (nothing started by the script; a shared
machine is never idle, so the load average seen is printed) and ``busy`` (the script starts
``--busy-procs`` processes spinning on the CPU, and stops them after the phase; each also
exits on its own after ``--busy-max-seconds``).

    python benchmarks/train_throughput.py                       # VitT3's model, 32 px, 512
    python benchmarks/train_throughput.py --preset VitCpu --steps 8
    python benchmarks/train_throughput.py --loads busy --precisions fp32

Prints one line per variant (images/s) and ``ratio:`` lines: munet / plain for training and
evaluation, bf16 / fp32 of munet, and the preset's thread policy / one thread under each load.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

# Run from a checkout without installing: make the repository root importable.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# Before torch loads: the preset thread policy includes the OpenMP wait policy.
from munet.training.threads import prepare_openmp_env  # noqa: E402

prepare_openmp_env()

import torch  # noqa: E402

from munet.config import get_preset  # noqa: E402
from munet.cpus import cpu_info, cpu_model, cpu_vendor  # noqa: E402
from munet.models import AssembledVit, VitArch, build_model, init_components  # noqa: E402
from munet.models.dense import onednn_preferred  # noqa: E402
from munet.training import (  # noqa: E402
    TrainCandidate,
    evaluate_accuracy,
    make_optimizer,
    resolve_precision,
    train_candidates,
)
from munet.training.threads import resolve_num_threads  # noqa: E402

# The competing process: spins until killed or until its own deadline.
_BUSY_CODE = (
    "import sys, time\nend = time.time() + float(sys.argv[1])\nwhile time.time() < end: pass\n"
)


@dataclass
class Workload:
    """The model and data one benchmark times (from a preset, with command-line overrides)."""

    arch: VitArch
    image_size: int
    batch: int
    eval_batch: int
    hparams: dict
    preset_threads: int
    preset_precision: str


def add_workload_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--preset", default="VitT3", help="preset whose model and batch to use")
    parser.add_argument("--size", help="ViT size name (default: the preset's)")
    parser.add_argument("--num-layers", type=int, help="encoder blocks (default: the preset's)")
    parser.add_argument("--image-size", type=int, help="default: the preset's ds_image_size")
    parser.add_argument("--batch", type=int, help="train batch (default: the preset's)")
    parser.add_argument("--eval-batch", type=int, help="eval batch (default: the preset's)")
    parser.add_argument("--num-classes", type=int, default=10)
    parser.add_argument("--threads", type=int, help="the policy's num_threads (default: preset)")


def workload_from_args(args: argparse.Namespace) -> Workload:
    config = get_preset(args.preset)
    hparams = dict(config.hparams_defaults)
    arch = VitArch.from_size(
        args.size or config.model,
        num_layers=args.num_layers if args.num_layers is not None else int(hparams["num_layers"]),
        num_classes=args.num_classes,
    )
    batch = args.batch or config.batch_size
    return Workload(
        arch=arch,
        image_size=args.image_size or int(hparams["ds_image_size"]),
        batch=batch,
        eval_batch=args.eval_batch or config.eval_batch_size or batch,
        hparams=hparams,
        preset_threads=config.num_threads if args.threads is None else args.threads,
        preset_precision=config.precision,
    )


def fresh_components(workload: Workload, seed: int = 0) -> dict:
    generator = torch.Generator().manual_seed(seed)
    components = init_components(workload.arch, workload.image_size, generator)
    # vit_jax zero-initialises the head; give it values so the step is not degenerate.
    components["head"]["weight"].normal_(0.0, 0.02, generator=generator)
    return components


def random_batches(workload: Workload, count: int, batch: int, seed: int = 1) -> list:
    generator = torch.Generator().manual_seed(seed)
    size = workload.image_size
    return [
        (
            torch.randn(batch, 3, size, size, generator=generator),
            torch.randint(0, workload.arch.num_classes, (batch,), generator=generator),
        )
        for _ in range(count)
    ]


def munet_train(workload: Workload, precision: str, steps: int) -> Callable[[], float]:
    """The agents' training of one all-trainable path: returns a timer of seconds per step."""
    components = {
        name: {k: t.clone().requires_grad_(True) for k, t in tensors.items()}
        for name, tensors in fresh_components(workload).items()
    }
    model = AssembledVit(workload.arch, workload.image_size, components)
    trainable = model.trainable_tensors()
    batches = random_batches(workload, 2, workload.batch)
    validation = random_batches(workload, 1, 8, seed=2)

    def timed() -> float:
        # A fresh optimizer per round (the schedule restarts); the first step is untimed
        # (TrainStats.first_step), and so is the single validation at the end.
        candidate = TrainCandidate(
            label="bench",
            model=model,
            trainable=trainable,
            optimizer=make_optimizer(trainable, workload.hparams, steps + 1, 1),
            score_of_quality=lambda quality: float("-inf"),  # never snapshots
            threshold=float("inf"),
            precision=precision,
        )
        stream = (batches[i % len(batches)] for i in range(steps + 1))
        stats = train_candidates([candidate], stream, validation, steps + 1, 1, progress=False)
        if candidate.failure is not None:
            raise RuntimeError(f"benchmark training failed: {candidate.failure}")
        return stats.train / steps

    return timed


def plain_train(workload: Workload, precision: str, steps: int) -> Callable[[], float]:
    """A plain PyTorch loop on the same model: returns a timer of seconds per step."""
    model = build_model(workload.arch, workload.image_size, fresh_components(workload))
    params = list(model.parameters())
    hparams = workload.hparams
    optimizer = torch.optim.SGD(
        params,
        lr=float(hparams["opt_lr"]),
        momentum=float(hparams["opt_momentum"]),
        nesterov=bool(hparams["opt_nesterov"]),
        foreach=True,
    )
    batches = random_batches(workload, 2, workload.batch)
    bf16 = resolve_precision(precision, "cpu") == "bf16"

    def step(images: torch.Tensor, labels: torch.Tensor) -> None:
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = model(images)
        loss = torch.nn.functional.cross_entropy(logits.float(), labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0, foreach=True)
        optimizer.step()

    def timed() -> float:
        step(*batches[0])
        start = time.perf_counter()
        for index in range(steps):
            step(*batches[index % len(batches)])
        return (time.perf_counter() - start) / steps

    return timed


def munet_eval(workload: Workload, precision: str, num_batches: int) -> Callable[[], float]:
    """``evaluate_accuracy`` over ``num_batches`` eval batches: a timer of seconds per image."""
    model = AssembledVit(workload.arch, workload.image_size, fresh_components(workload))
    batches = random_batches(workload, num_batches, workload.eval_batch, seed=3)
    count = sum(len(labels) for _, labels in batches)

    def timed() -> float:
        start = time.perf_counter()
        evaluate_accuracy(model, batches, torch.device("cpu"), precision)
        return (time.perf_counter() - start) / count

    return timed


def plain_eval(workload: Workload, precision: str, num_batches: int) -> Callable[[], float]:
    model = build_model(workload.arch, workload.image_size, fresh_components(workload))
    batches = random_batches(workload, num_batches, workload.eval_batch, seed=3)
    count = sum(len(labels) for _, labels in batches)
    bf16 = resolve_precision(precision, "cpu") == "bf16"

    def timed() -> float:
        start = time.perf_counter()
        correct = 0
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            for images, labels in batches:
                correct += int((model(images).argmax(-1) == labels).sum())
        return (time.perf_counter() - start) / count

    return timed


@contextlib.contextmanager
def busy_processes(count: int, max_seconds: float) -> Iterator[None]:
    """``count`` processes spinning on the CPU for the enclosed block (each also stops by
    itself after ``max_seconds``)."""
    procs = [
        subprocess.Popen([sys.executable, "-c", _BUSY_CODE, str(max_seconds)]) for _ in range(count)
    ]
    try:
        time.sleep(0.5)  # let them reach the CPU
        yield
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def run_rounds(
    timers: dict[str, tuple[int, Callable[[], float]]], rounds: int
) -> dict[str, list[float]]:
    """Times every variant once per round, rotating the order; each variant runs at its own
    thread count. Returns seconds (per step or per image) per round, by variant."""
    names = list(timers)
    seconds: dict[str, list[float]] = {name: [] for name in names}
    for round_index in range(rounds):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            threads, timer = timers[name]
            torch.set_num_threads(threads)
            seconds[name].append(timer())
    return seconds


def median_ratio(numerator: list[float], denominator: list[float]) -> float:
    """Median over rounds of numerator[i] / denominator[i]."""
    return statistics.median(n / d for n, d in zip(numerator, denominator, strict=True))


def cpu_family() -> str:
    """The CPU family munet's speed defaults distinguish, from the ``/proc/cpuinfo`` flags."""
    flags = set(cpu_info().get("flags", "").split())
    if {"amx_bf16", "amx_tile"} & flags:
        return "AMX"
    if "avx512_bf16" in flags:
        return "AVX-512 + avx512_bf16, no AMX"
    if "avx512f" in flags:
        return "AVX-512 without bf16"
    if "avx2" in flags:
        return "AVX2 only"
    return "other"


def cpu_line() -> str:
    """One line naming the CPU, its family, the usable cores and munet's float32 matmul kernels."""
    kernels = "oneDNN" if onednn_preferred() else "PyTorch's F.linear (MKL on x86)"
    return (
        f"cpu: {cpu_model()} ({cpu_vendor() or 'vendor unknown'}; {cpu_family()}; "
        f"{resolve_num_threads(0)} usable cores; torch {torch.__version__}; munet float32 "
        f"matmuls: {kernels})"
    )


def load_average() -> str:
    try:
        return " ".join(f"{value:.1f}" for value in os.getloadavg())
    except OSError:
        return "n/a"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_workload_args(parser)
    parser.add_argument("--precisions", default="fp32,bf16", help="comma-separated")
    parser.add_argument("--loads", default="idle,busy", help="idle, busy or both")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=2, help="timed train steps per round")
    parser.add_argument("--eval-batches", type=int, default=2, help="eval batches per round")
    parser.add_argument("--busy-procs", type=int, default=0, help="0: the policy's threads")
    parser.add_argument("--busy-max-seconds", type=float, default=1800.0)
    args = parser.parse_args(argv)

    workload = workload_from_args(args)
    policy_threads = resolve_num_threads(workload.preset_threads)
    thread_settings = {"policy": policy_threads}
    if policy_threads != 1:
        thread_settings["1thread"] = 1
    precisions = [p.strip() for p in args.precisions.split(",") if p.strip()]
    timers: dict[str, tuple[int, Callable[[], float]]] = {}
    for precision in precisions:
        for setting, threads in thread_settings.items():
            key = f"{precision}/{setting}"
            timers[f"train munet {key}"] = (threads, munet_train(workload, precision, args.steps))
            timers[f"train plain {key}"] = (threads, plain_train(workload, precision, args.steps))
            timers[f"eval munet {key}"] = (
                threads,
                munet_eval(workload, precision, args.eval_batches),
            )
            timers[f"eval plain {key}"] = (
                threads,
                plain_eval(workload, precision, args.eval_batches),
            )
    print(cpu_line())
    print(
        f"model: {workload.arch}  image: {workload.image_size}  batch: {workload.batch}  "
        f"eval batch: {workload.eval_batch}  policy threads: {policy_threads} "
        f"(OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')})  usable cores: "
        f"{resolve_num_threads(0)}  preset precision: {workload.preset_precision} "
        f"(resolves to {resolve_precision(workload.preset_precision, 'cpu')} here)  "
        f"rounds: {args.rounds}",
        flush=True,
    )
    for timer in timers.values():  # warm-up: lazy initialisation, allocator, imports
        torch.set_num_threads(timer[0])
        timer[1]()
    loads = [load.strip() for load in args.loads.split(",") if load.strip()]
    results: dict[str, dict[str, list[float]]] = {}
    for load in loads:
        if load not in ("idle", "busy"):
            raise SystemExit(f"unknown load {load!r}; expected idle or busy")
        before = load_average()
        busy = args.busy_procs or policy_threads
        context = (
            busy_processes(busy, args.busy_max_seconds)
            if load == "busy"
            else contextlib.nullcontext()
        )
        with context:
            results[load] = run_rounds(timers, args.rounds)
        started = f", {busy} busy processes started" if load == "busy" else ""
        print(f"[{load}] load average before: {before}, after: {load_average()}{started}")
        for name, values in results[load].items():
            kind = name.split()[0]
            size = workload.batch if kind == "train" else 1
            rate = size / statistics.median(values)
            print(f"[{load}] {name:28} {rate:10.1f} img/s")
    for load, seconds in results.items():
        for kind in ("train", "eval"):
            for precision in precisions:
                for setting in thread_settings:
                    key = f"{precision}/{setting}"
                    ratio = median_ratio(
                        seconds[f"{kind} plain {key}"], seconds[f"{kind} munet {key}"]
                    )
                    print(f"ratio: {ratio:.3f}  {kind} munet/plain {key} [{load}]")
            if "fp32" in precisions and "bf16" in precisions:
                ratio = median_ratio(
                    seconds[f"{kind} munet fp32/policy"], seconds[f"{kind} munet bf16/policy"]
                )
                print(f"ratio: {ratio:.3f}  {kind} munet bf16/fp32 policy [{load}]")
            if "1thread" in thread_settings:
                for precision in precisions:
                    ratio = median_ratio(
                        seconds[f"{kind} munet {precision}/1thread"],
                        seconds[f"{kind} munet {precision}/policy"],
                    )
                    print(f"ratio: {ratio:.3f}  {kind} munet policy/1thread {precision} [{load}]")


if __name__ == "__main__":
    main()
