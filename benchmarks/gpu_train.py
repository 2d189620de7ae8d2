"""Training throughput of the agents' path on a GPU against a plain PyTorch loop, with MFU.

Workloads (one path on one GPU, the seed's rule: one path per accelerator per generation):

- ``vitb``: the VitB preset's path, ViT-B/16 (12 blocks) at 80 px, batch 256;
- ``vitl``: the Vit preset's model, ViT-L/16 (24 blocks) at 384 px, batch 16 (``--batch-vitl``);
- or ``--workload NAME=SIZE,LAYERS,IMAGE,BATCH`` (e.g. ``tiny=mu/4,1,16,8`` for a CPU smoke run).

For each, "agents" runs ``munet.training.train_candidates`` on a component-assembled ViT at
the preset's precision (``auto``: bf16 where native), and "plain" runs a textbook loop
(``torch.optim.SGD`` with Nesterov momentum, ``clip_grad_norm_``, the same autocast) on the
same ViT as one ``nn.Module``. Both read the same uint8 images, held on the device, through
the task pipeline's ``preprocess`` run on the device each step (resize to the path's size, and
crop, flip and colour with ``--augment``): no host round trip inside a step. Rounds alternate
the two (order flipped every round); figures are medians, ``ratio:`` the median per-round
ratio agents / plain (target >= 0.95). TFLOP/s counts a step as 3x the forward FLOPs
(munet.models.count_flops); MFU divides by the GPU's dense bf16 peak (a table of common GPUs,
or ``--peak-tflops``).

``--jpeg-folder DIR`` also times the task pipeline's decoding of DIR's images
(``folder:DIR``) with one decode thread and with the default parallel threads, and says whether
decoding keeps up with the measured training rate.

    python benchmarks/gpu_train.py                                    # both workloads, cuda
    python benchmarks/gpu_train.py --workloads vitb --augment --jpeg-folder ~/jpegs
    python benchmarks/gpu_train.py --device cpu --workloads tiny=mu/4,1,16,8 --rounds 1
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# Before torch loads, as every munet entry point does (see munet.training.threads).
from munet.training.threads import prepare_openmp_env  # noqa: E402

prepare_openmp_env()

import torch  # noqa: E402

from munet.config import get_preset  # noqa: E402
from munet.models import (  # noqa: E402
    AssembledVit,
    VitArch,
    build_model,
    count_flops,
    init_components,
)
from munet.tasks.augment import AugmentConfig, preprocess  # noqa: E402
from munet.training import (  # noqa: E402
    TrainCandidate,
    make_optimizer,
    resolve_precision,
    train_candidates,
)

# Dense bf16 tensor-core peaks (TFLOP/s, no sparsity) from the vendors' data sheets, matched
# against torch.cuda.get_device_name(); the first matching key wins.
BF16_PEAK_TFLOPS = {
    "H200": 989.0,
    "H100 SXM": 989.0,
    "H100 80GB HBM3": 989.0,
    "H100 NVL": 835.0,
    "H100 PCIe": 756.0,
    "H100": 756.0,
    "GH200": 989.0,
    "B200": 2250.0,
    "A100": 312.0,
    "A800": 312.0,
    "L40S": 362.0,
    "L40": 181.0,
    "L4": 121.0,
    "A10G": 70.0,
    "A10": 125.0,
    "RTX 4090": 165.0,
    "RTX 3090": 71.0,
}
WORKLOADS = {"vitb": ("B/16", 12, 80, 256), "vitl": ("L/16", 24, 384, 16)}
AUGMENTATION = {
    "ds_area_range_min": 0.5,
    "ds_aspect_ratio_range_min": 0.75,
    "ds_flip_left_right": True,
    "ds_brightness_delta": 0.1,
    "ds_contrast_delta": 0.1,
    "ds_saturation_delta": 0.1,
    "ds_hue_delta": 0.1,
}


@dataclass
class Workload:
    name: str
    size: str
    layers: int
    image: int
    batch: int


def parse_workload(text: str, vitl_batch: int) -> Workload:
    """``vitb``, ``vitl`` or ``NAME=SIZE,LAYERS,IMAGE,BATCH``."""
    if text in WORKLOADS:
        size, layers, image, batch = WORKLOADS[text]
        return Workload(text, size, layers, image, vitl_batch if text == "vitl" else batch)
    name, sep, spec = text.partition("=")
    parts = spec.split(",")
    if not sep or len(parts) != 4:
        raise SystemExit(f"workload {text!r}: expected vitb, vitl or NAME=SIZE,LAYERS,IMAGE,BATCH")
    try:
        return Workload(name, parts[0], int(parts[1]), int(parts[2]), int(parts[3]))
    except ValueError:
        raise SystemExit(f"workload {text!r}: LAYERS, IMAGE and BATCH must be integers") from None


def peak_tflops(device: torch.device, override: float | None) -> float | None:
    if override:
        return override
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((peak for key, peak in BF16_PEAK_TFLOPS.items() if key in name), None)


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class DeviceBatches:
    """Endless training batches made on the device from uint8 images already there."""

    def __init__(self, images: torch.Tensor, labels: torch.Tensor, hparams: dict, seed: int):
        self.images, self.labels = images, labels
        self.cfg = AugmentConfig.from_hparams(hparams)
        self.generator = torch.Generator().manual_seed(seed)

    def __iter__(self):
        return self

    def __next__(self) -> tuple[torch.Tensor, torch.Tensor]:
        inputs = preprocess(self.images, self.cfg, train=True, generator=self.generator)
        return inputs, self.labels


def agents_timer(model, hparams, batches, precision, steps, device):
    trainable = model.trainable_tensors()
    validation = [next(batches)]
    validation = [(validation[0][0][:1], validation[0][1][:1])]

    def timed() -> float:
        candidate = TrainCandidate(
            label="bench",
            model=model,
            trainable=trainable,
            optimizer=make_optimizer(trainable, hparams, steps, 1),
            score_of_quality=lambda quality: float("-inf"),  # never snapshots
            threshold=float("inf"),
            device=device,
            precision=precision,
        )
        synchronize(device)
        start = time.perf_counter()
        train_candidates([candidate], batches, validation, steps, 1, progress=False)
        synchronize(device)
        if candidate.failure is not None:
            raise RuntimeError(f"training failed: {candidate.failure}")
        return (time.perf_counter() - start) / steps

    return timed


def plain_timer(model, hparams, batches, precision, steps, device):
    params = list(model.parameters())
    optimizer = torch.optim.SGD(
        params,
        lr=float(hparams["opt_lr"]),
        momentum=float(hparams["opt_momentum"]),
        nesterov=bool(hparams["opt_nesterov"]),
        foreach=True,
    )
    bf16 = resolve_precision(precision, device) == "bf16"

    def step() -> None:
        images, labels = next(batches)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            logits = model(images)
        loss = torch.nn.functional.cross_entropy(logits.float(), labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0, foreach=True)
        optimizer.step()

    def timed() -> float:
        synchronize(device)
        start = time.perf_counter()
        for _ in range(steps):
            step()
        synchronize(device)
        return (time.perf_counter() - start) / steps

    return timed


def run_workload(workload: Workload, args: argparse.Namespace, device: torch.device) -> float:
    """Times one workload and prints its lines. Returns the agents' images/s."""
    preset = get_preset("VitB")
    hparams = dict(preset.hparams_defaults)
    hparams["ds_image_size"] = workload.image
    if args.augment:
        hparams.update(AUGMENTATION)
    precision = args.precision or preset.precision
    arch = VitArch.from_size(workload.size, num_layers=workload.layers, num_classes=10)
    generator = torch.Generator().manual_seed(0)
    components = init_components(arch, workload.image, generator)
    components["head"]["weight"].normal_(0.0, 0.02, generator=generator)
    plain = build_model(arch, workload.image, components).to(device)
    assembled = AssembledVit(
        arch,
        workload.image,
        {
            name: {k: t.to(device).requires_grad_(True) for k, t in tensors.items()}
            for name, tensors in components.items()
        },
    )
    stored = round(workload.image * args.storage_scale)
    images = torch.randint(0, 256, (workload.batch, 3, stored, stored), generator=generator)
    labels = torch.randint(0, 10, (workload.batch,), generator=generator)
    images, labels = images.to(torch.uint8).to(device), labels.to(device)
    timers = {
        "agents": agents_timer(
            assembled,
            hparams,
            DeviceBatches(images, labels, hparams, 1),
            precision,
            args.steps,
            device,
        ),
        "plain": plain_timer(
            plain,
            hparams,
            DeviceBatches(images, labels, hparams, 1),
            precision,
            args.steps,
            device,
        ),
    }
    for timer in timers.values():
        for _ in range(args.warmup):
            timer()
    seconds: dict[str, list[float]] = {name: [] for name in timers}
    for round_index in range(args.rounds):
        order = list(timers) if round_index % 2 == 0 else list(reversed(timers))
        for name in order:
            seconds[name].append(timers[name]())
    flops = 3 * count_flops(arch, workload.image)
    peak = peak_tflops(device, args.peak_tflops)
    print(
        f"[{workload.name}] {workload.size} x{workload.layers} {workload.image}px batch "
        f"{workload.batch} precision {resolve_precision(precision, device)} augment "
        f"{args.augment} ({stored}px uint8 on {device}) rounds {args.rounds}x{args.steps}"
    )
    rates = {}
    for name, values in seconds.items():
        rates[name] = workload.batch / statistics.median(values)
        tflops = rates[name] * flops / 1e12
        mfu = f"  MFU {tflops / peak:.1%} of {peak:.0f}" if peak else ""
        print(f"[{workload.name}] {name:7} {rates[name]:10.1f} img/s  {tflops:8.3f} TFLOP/s{mfu}")
    ratios = [p / a for p, a in zip(seconds["plain"], seconds["agents"], strict=True)]
    print(f"ratio: {statistics.median(ratios):.3f}  [{workload.name}] agents/plain")
    return rates["agents"]


def time_decoding(folder: str, train_rate: float | None, batch: int, rounds: int) -> None:
    """Images/s of the folder's decoding, serial and parallel, against the training rate."""
    from munet.tasks.sources.imagefolder import load_image_folder

    seconds: dict[str, list[float]] = {"1 thread": [], "parallel": []}
    count = 0
    for round_index in range(rounds):
        order = list(seconds) if round_index % 2 == 0 else list(reversed(seconds))
        for label in order:
            # A fresh source each time: decoded images are cached, and this times decoding.
            source = load_image_folder(folder, decode_workers=1 if label == "1 thread" else 0)
            count = min(source.num_examples("train"), 4 * batch)
            source.storage_size()  # the first image sets the storage size; not timed
            start = time.perf_counter()
            for first in range(0, count, batch):
                source.images("train", torch.arange(first, min(first + batch, count)))
            seconds[label].append((time.perf_counter() - start) / count)
    rates = {label: 1.0 / statistics.median(values) for label, values in seconds.items()}
    for label, value in rates.items():
        print(f"[decode] {label:8} {value:10.1f} img/s  ({count} images of {folder})")
    ratios = [s / p for s, p in zip(seconds["1 thread"], seconds["parallel"], strict=True)]
    print(f"ratio: {statistics.median(ratios):.3f}  [decode] parallel/1 thread")
    if train_rate:
        verdict = "keeps up" if rates["parallel"] >= train_rate else "does not keep up"
        print(
            f"[decode] parallel decoding {verdict} with training at {train_rate:.0f} img/s "
            "(decoded images are cached in memory up to cache_bytes, so later epochs skip it)"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument(
        "--workloads", nargs="+", default=["vitb", "vitl"], help="vitb, vitl, NAME=S,L,I,B"
    )
    parser.add_argument("--batch-vitl", type=int, default=16)
    parser.add_argument("--precision", help="fp32, bf16 or auto (default: the preset's)")
    parser.add_argument("--augment", action="store_true", help="crop, flip and colour too")
    parser.add_argument("--storage-scale", type=float, default=1.25, help="stored / model side")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=10, help="train steps per round")
    parser.add_argument("--warmup", type=int, default=1, help="untimed rounds")
    parser.add_argument("--peak-tflops", type=float, help="the device's dense bf16 peak")
    parser.add_argument("--jpeg-folder", help="also time decoding this image folder")
    args = parser.parse_args(argv)

    device = torch.device(args.device)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise SystemExit("no CUDA device here; pass --device cpu for a smoke run")
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        name = torch.cuda.get_device_name(device)
        print(f"device: {name} ({torch.cuda.device_count()} visible; this times one path on one)")
    else:
        print(f"device: {device} (threads {torch.get_num_threads()})")
    train_rate = None
    for text in args.workloads:
        workload = parse_workload(text, args.batch_vitl)
        rate = run_workload(workload, args, device)
        train_rate = rate if train_rate is None else train_rate
    if args.jpeg_folder:
        time_decoding(args.jpeg_folder, train_rate, 256, args.rounds)


if __name__ == "__main__":
    main()
