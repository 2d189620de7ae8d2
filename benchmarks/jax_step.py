"""munet's training and evaluation against the seed's own jitted JAX steps, on the same model.

"JAX" is the seed's train and eval steps (benchmarks/seed_jax.py: vit_jax's ViT in Flax, the
seed's loss, clipping, SGD with a bfloat16 momentum accumulator and lr schedule, ``jax.jit``
with donated buffers; float32, as the seed's model runs on a CPU). "munet" is what an agent
runs: ``train_candidates`` and ``evaluate_accuracy`` on an ``AssembledVit`` (timers shared
with benchmarks/train_throughput.py), at each ``--precisions`` entry (``preset``: the preset's
own, e.g. VitT3's ``auto``) and the preset's thread policy. Both start from the same weights
(munet's components converted to the Flax tree), read the same batches, and the script prints
the largest logit difference between the two models on those weights before timing.

Every variant runs once per round, in an order that rotates between rounds; each ``ratio:`` is
the median of per-round ratios of images/s, munet / JAX (above 1: munet is faster), printed
with its goal (preset precision: train >= 1.5, eval >= 1.2; fp32: train >= 1.2, eval >= 1.0).
The first line names the CPU: its model, family (AMX, AVX-512 + avx512_bf16, AVX2 only) and
the float32 matmul kernels munet uses on it (munet.models.dense).

    python benchmarks/jax_step.py                      # VitT3: ViT-Ti/16 x3, 32 px, batch 512
    python benchmarks/jax_step.py --precisions fp32 --rounds 9

XLA's CPU client uses the cores this process may use (its affinity; print below); munet runs
at the preset's thread policy (``--threads`` overrides), so on a 2-core machine both use 2.
Needs the ``bench-jax`` extra.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

# Before torch loads: the preset thread policy includes the OpenMP wait policy.
from munet.training.threads import prepare_openmp_env  # noqa: E402

prepare_openmp_env()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from seed_jax import (  # noqa: E402
    eval_step,
    flax_params,
    seed_optimizer,
    seed_train_step,
    seed_vit,
    to_channels_last,
)
from train_throughput import (  # noqa: E402
    Workload,
    add_workload_args,
    cpu_line,
    fresh_components,
    load_average,
    median_ratio,
    munet_eval,
    munet_train,
    random_batches,
    run_rounds,
    workload_from_args,
)

from munet.models import AssembledVit  # noqa: E402
from munet.training import resolve_precision  # noqa: E402
from munet.training.threads import resolve_num_threads  # noqa: E402

# The goals (docs/speed.md, Benchmarks), munet / JAX as medians of per-round ratios: at the
# preset's precision and at fp32 (another precision than the preset's is held to the fp32 goals).
GOALS = {
    ("preset", "train"): 1.5,
    ("preset", "eval"): 1.2,
    ("fp32", "train"): 1.2,
    ("fp32", "eval"): 1.0,
}


def jax_train(workload: Workload, steps: int) -> Callable[[], float]:
    """The seed's jitted train step on the benchmark's model: a timer of seconds per step."""
    model = seed_vit(workload.arch)
    # The same schedule length as munet_train's optimizer (steps + 1 updates).
    optimizer = seed_optimizer(workload.hparams, steps + 1, 1)
    batches = [
        (to_channels_last(images), jnp.asarray(labels.numpy()))
        for images, labels in random_batches(workload, 2, workload.batch)
    ]
    state = {"params": flax_params(fresh_components(workload), workload.arch)}

    def timed() -> float:
        # A fresh optimizer state per round and one untimed step, as munet_train does.
        params = state["params"]
        opt_state = optimizer.init(params)
        params, opt_state = seed_train_step(params, opt_state, *batches[0], model, optimizer)
        jax.block_until_ready(params)
        start = time.perf_counter()
        for index in range(steps):
            images, labels = batches[index % len(batches)]
            params, opt_state = seed_train_step(params, opt_state, images, labels, model, optimizer)
        jax.block_until_ready(params)
        elapsed = time.perf_counter() - start
        state["params"] = params  # the old buffers were donated
        return elapsed / steps

    return timed


def jax_eval(workload: Workload, num_batches: int) -> Callable[[], float]:
    """The seed's jitted eval step over ``num_batches`` batches: a timer of seconds per image."""
    model = seed_vit(workload.arch)
    params = flax_params(fresh_components(workload), workload.arch)
    batches = [
        (to_channels_last(images), jnp.asarray(labels.numpy()))
        for images, labels in random_batches(workload, num_batches, workload.eval_batch, seed=3)
    ]
    count = sum(int(labels.shape[0]) for _, labels in batches)

    def timed() -> float:
        start = time.perf_counter()
        accuracies = [eval_step(params, images, labels, model) for images, labels in batches]
        float(jnp.mean(jnp.stack(accuracies)))  # waits for the results, as munet's float() does
        return (time.perf_counter() - start) / count

    return timed


def logits_difference(workload: Workload, count: int = 64) -> float:
    """Largest |munet logit - JAX logit| on ``count`` images, same weights, float32."""
    components = fresh_components(workload)
    images, _ = random_batches(workload, 1, count, seed=4)[0]
    with torch.no_grad():
        ours = AssembledVit(workload.arch, workload.image_size, components)(images).numpy()
    params = flax_params(components, workload.arch)
    theirs = np.asarray(seed_vit(workload.arch).apply({"params": params}, to_channels_last(images)))
    return float(np.abs(ours - theirs).max())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_workload_args(parser)
    parser.add_argument(
        "--precisions", default="preset,fp32", help="munet's, comma-separated (preset: its own)"
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=2, help="timed train steps per round")
    parser.add_argument("--eval-batches", type=int, default=2, help="eval batches per round")
    args = parser.parse_args(argv)

    workload = workload_from_args(args)
    threads = resolve_num_threads(workload.preset_threads)
    precisions: list[str] = []
    for name in args.precisions.split(","):
        name = workload.preset_precision if name.strip() == "preset" else name.strip()
        if name and name not in precisions:
            precisions.append(name)
    labels = {p: f"{p} ({resolve_precision(p, 'cpu')})" if p == "auto" else p for p in precisions}
    timers: dict[str, tuple[int, Callable[[], float]]] = {
        "train jax": (threads, jax_train(workload, args.steps)),
        "eval jax": (threads, jax_eval(workload, args.eval_batches)),
    }
    for precision in precisions:
        timers[f"train munet {precision}"] = (threads, munet_train(workload, precision, args.steps))
        timers[f"eval munet {precision}"] = (
            threads,
            munet_eval(workload, precision, args.eval_batches),
        )
    print(cpu_line())
    print(
        f"model: {workload.arch}  image: {workload.image_size}  batch: {workload.batch}  eval "
        f"batch: {workload.eval_batch}  munet threads: {threads} (OMP_WAIT_POLICY="
        f"{os.environ.get('OMP_WAIT_POLICY')})  JAX {jax.__version__} on {jax.devices()[0]} "
        f"with {len(os.sched_getaffinity(0))} usable cores  precisions: "
        f"{', '.join(labels.values())}  rounds: {args.rounds}",
        flush=True,
    )
    print(f"logits max |munet - JAX| (fp32, same weights): {logits_difference(workload):.2e}")
    start = time.perf_counter()
    for count, timer in timers.values():  # warm-up: jit compilation, lazy initialisation
        torch.set_num_threads(count)
        timer()
    print(f"warm-up (JAX compiles here): {time.perf_counter() - start:.1f} s", flush=True)
    before = load_average()
    seconds = run_rounds(timers, args.rounds)
    print(f"load average before: {before}, after: {load_average()}")
    for name, values in seconds.items():
        size = workload.batch if name.startswith("train") else 1
        print(f"{name:22} {size / statistics.median(values):10.1f} img/s")
    for kind in ("train", "eval"):
        for precision in precisions:
            ratio = median_ratio(seconds[f"{kind} jax"], seconds[f"{kind} munet {precision}"])
            goal = GOALS[("preset" if precision == workload.preset_precision else "fp32", kind)]
            verdict = "met" if ratio >= goal else f"not met by {goal - ratio:.3f}"
            print(
                f"ratio: {ratio:.3f}  {kind} munet/JAX {labels[precision]}  "
                f"(goal >= {goal}: {verdict})"
            )


if __name__ == "__main__":
    main()
