"""Your own data: munet's own-data commands against a small CNN given the same wall time.

A folder task is drawn with PIL (5 shape classes: circle, square, triangle, star, cross; each
image a random size, position, rotation and pair of colours at 48 px): ``--per-class`` PNGs per
class to train on, and ``--held-out`` new ones per class, drawn from the same distribution with
another seed, that neither side sees before scoring. A third draw, ``--choice`` images per class
with a third seed, is scored like the held-out images but only for munet: it is the figure a
choice (of a root, a recipe) reads, so the held-out images stay a test read once.

- ``munet``: the README's commands, run as subprocesses: ``munet root`` (``--root``:
  ``random_init``, ``pretrained`` or a checkpoint file; benchmarks/root_source.py), ``munet run
  --task shapes --data folder:TRAIN --cycles N``, ``munet export``, then ``munet predict`` on
  the held-out images. Its wall time is that of root, run and export.
- ``cnn``: a plain PyTorch CNN (munet.benchmark.cnn.small_cnn: 4 conv-BN-ReLU-pool layers
  and a linear head, about 56k parameters; Adam, random flips) on the same training images
  at 48 px, on as many threads as the ``VitCpu`` preset (one), trained for the same wall
  time, then scored on the same held-out images.

Prints each side's held-out accuracy and wall time, munet's accuracy on the choice draw, and
its validation accuracy (the exported path's, on 200 images it split off the training folder;
it selected that path on them, so it reads high), and::

    ratio: R   (munet held-out accuracy / the CNN's)

Run: ``python benchmarks/own_data_vs_cnn.py --seed S`` (the benchmark's default preset,
``munet.benchmark.plan.PRESET``, from its built-in root; about 5 minutes on a 2-core machine);
``--quick``: a tiny smoke test. ``--agent VitCpu`` runs the patchify CPU preset, ``--agent
VitT3`` the paper's smallest preset, at the CPU path shape ``munet benchmark --agent VitT3``
gives it (munet.benchmark.plan.AGENT_OVERRIDES, passed as ``--set``s before yours).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# This checkout's munet (the CNN lives in munet.benchmark.cnn), as the munet subprocesses use.
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from root_source import resolve_root  # noqa: E402

from munet.benchmark.cnn import small_cnn  # noqa: E402
from munet.benchmark.plan import AGENT_OVERRIDES, PRESET  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CLASSES = ("circle", "square", "triangle", "star", "cross")
IMAGE_SIZE = 48
TASK = "shapes"
# The tests' tiny VitCpu (tests/agents/conftest.py).
QUICK_OVERRIDES = [
    "batch_size=8",
    "num_train_examples_between_validations_max=16",
    "num_validations_per_path_training=2",
    "num_validation_examples_max=16",
    "num_samples_per_cycle=2",
    "max_task_population_size=2",
    "hparams_mutation_ranges.num_layers=[0, 1, 2]",
    "num_layers=1",
]


# Data ----------------------------------------------------------------------------------------
def _polygon(center: tuple[float, float], radii: list[float], angle: float) -> list[tuple]:
    """Vertices at equal angular steps from ``angle``, at the given radii in turn."""
    cx, cy = center
    step = 2 * math.pi / len(radii)
    return [
        (cx + r * math.cos(angle + i * step), cy + r * math.sin(angle + i * step))
        for i, r in enumerate(radii)
    ]


def draw_shape(label: str, rng: random.Random):
    """One 48 px RGB image of the shape ``label`` (PIL Image)."""
    from PIL import Image, ImageDraw

    background = tuple(rng.randrange(256) for _ in range(3))
    while True:  # A fill colour that stands out from the background.
        fill = tuple(rng.randrange(256) for _ in range(3))
        if sum(abs(a - b) for a, b in zip(fill, background, strict=True)) > 180:
            break
    image = Image.new("RGB", (IMAGE_SIZE, IMAGE_SIZE), background)
    draw = ImageDraw.Draw(image)
    radius = rng.uniform(8, 18)
    margin = radius + 2
    center = (rng.uniform(margin, IMAGE_SIZE - margin), rng.uniform(margin, IMAGE_SIZE - margin))
    angle = rng.uniform(0, 2 * math.pi)
    if label == "circle":
        cx, cy = center
        draw.ellipse([cx - radius, cy - radius, cx + radius, cy + radius], fill=fill)
    elif label == "square":
        draw.polygon(_polygon(center, [radius] * 4, angle), fill=fill)
    elif label == "triangle":
        draw.polygon(_polygon(center, [radius] * 3, angle), fill=fill)
    elif label == "star":
        draw.polygon(_polygon(center, [radius, radius * 0.45] * 5, angle), fill=fill)
    else:  # cross: two bars of a third of the width, rotated together.
        half = radius / 3
        arm = [(radius, half), (half, half), (half, radius), (-half, radius), (-half, half),
               (-radius, half), (-radius, -half), (-half, -half), (-half, -radius),
               (half, -radius), (half, -half), (radius, -half)]  # fmt: skip
        cos, sin = math.cos(angle), math.sin(angle)
        cx, cy = center
        draw.polygon([(cx + x * cos - y * sin, cy + x * sin + y * cos) for x, y in arm], fill=fill)
    return image


def write_folder(root: Path, per_class: int, seed: int) -> Path:
    """``root/<class>/NNNN.png``, ``per_class`` images of each class."""
    rng = random.Random(seed)
    for label in CLASSES:
        (root / label).mkdir(parents=True, exist_ok=True)
        for index in range(per_class):
            draw_shape(label, rng).save(root / label / f"{index:04d}.png")
    return root


def read_folder(root: Path, side: int = IMAGE_SIZE):
    """(images as a float tensor N x 3 x side x side in [0, 1], labels) of a class folder
    (resized with antialiasing from 48 px when ``side`` differs)."""
    import numpy as np
    import torch
    from PIL import Image

    images, labels = [], []
    for label_index, label in enumerate(CLASSES):
        for file in sorted((root / label).glob("*.png")):
            images.append(np.asarray(Image.open(file).convert("RGB"), dtype=np.float32) / 255)
            labels.append(label_index)
    pixels = torch.from_numpy(np.stack(images)).permute(0, 3, 1, 2).contiguous()
    if side != IMAGE_SIZE:
        pixels = torch.nn.functional.interpolate(
            pixels, size=(side, side), mode="bilinear", antialias=True
        )
    return pixels, torch.tensor(labels)


# munet ---------------------------------------------------------------------------------------
def munet_cli(*argv: str) -> str:
    """Runs ``munet ARGV`` in a subprocess (this checkout's munet); its stdout.

    Raises:
        SystemExit: the command failed (its exit code and the end of its stderr).
    """
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    done = subprocess.run(
        [sys.executable, "-m", "munet", *argv], capture_output=True, text=True, env=env
    )
    if done.returncode != 0:
        raise SystemExit(
            f"munet {' '.join(argv)} exited with {done.returncode}:\n{done.stderr[-3000:]}"
        )
    return done.stdout


def predict_accuracy(export: str, folder: Path) -> tuple[float, int]:
    """(top-1 accuracy, image count) of ``munet predict EXPORT FOLDER`` on a class folder."""
    predictions = json.loads(munet_cli("predict", export, str(folder), "--format", "json"))
    correct = sum(Path(p["file"]).parent.name == p["predictions"][0]["class"] for p in predictions)
    return correct / len(predictions), len(predictions)


def run_munet(
    args: argparse.Namespace, train: Path, held_out: Path, choice: Path, work: Path
) -> dict:
    """The README's own-data commands; held-out and choice-draw accuracy, and the wall time of
    root, run and export."""
    root = resolve_root(args.root, args.agent)
    print(root.describe(), flush=True)
    state, export = str(work / "state"), str(work / "export")
    overrides = [*AGENT_OVERRIDES[args.agent], *args.overrides]
    sets = [arg for item in overrides for arg in ("--set", item)]
    root_sets = [arg for item in root.overrides for arg in ("--set", item)]
    commands = [
        ["root", "--agent", args.agent, "-d", state, *root.cli_args, *sets, "-q"],
        ["run", "--agent", args.agent, "--task", TASK, "--data", f"folder:{train}",
         "--cycles", str(args.cycles), "-d", state, *root_sets, *sets, "-q"],
        ["export", "-d", state, "--task", TASK, "--out", export],
    ]  # fmt: skip
    start = time.perf_counter()
    for command in commands:
        print(f"  $ munet {' '.join(command)}", flush=True)
        munet_cli(*command)
    seconds = time.perf_counter() - start
    accuracy, images = predict_accuracy(export, held_out)
    choice_accuracy, choice_images = predict_accuracy(export, choice)
    config = json.loads((Path(export) / "config.json").read_text())
    return {
        "accuracy": accuracy,
        "images": images,
        # New images no model was selected on, read by choices (of a root, a recipe) only.
        "choice": choice_accuracy,
        "choice_images": choice_images,
        # The exported path's validation accuracy: what munet selected it on, from the training
        # folder alone (so it reads high).
        "validation": config["metrics"]["quality"],
        "seconds": seconds,
        "root": args.root,
        "agent": args.agent,
        "exported": {
            k: config[k] for k in ("architecture", "provenance", "metrics") if k in config
        },
    }


# The CNN -------------------------------------------------------------------------------------
def run_cnn(
    train: Path, held_out: Path, seconds: float, seed: int, threads: int, side: int = IMAGE_SIZE
) -> dict:
    """Trains the CNN on the training images (at ``side`` px) for ``seconds`` of wall time
    (reading the images included); its held-out accuracy."""
    import torch

    start = time.perf_counter()
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        torch.manual_seed(seed)
        images, labels = read_folder(train, side)
        model = small_cnn(len(CLASSES))
        optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
        generator = torch.Generator().manual_seed(seed)
        steps = epochs = 0
        model.train()
        while time.perf_counter() - start < seconds:
            order = torch.randperm(len(labels), generator=generator)
            for batch in order.split(64):
                x = images[batch]
                flip = torch.rand(len(batch), generator=generator) < 0.5
                x = torch.where(flip[:, None, None, None], x.flip(-1), x)
                loss = torch.nn.functional.cross_entropy(model(x), labels[batch])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                steps += 1
                if time.perf_counter() - start >= seconds:
                    break
            epochs += 1
        trained = time.perf_counter() - start
        model.eval()
        test_images, test_labels = read_folder(held_out, side)
        with torch.no_grad():
            predicted = model(test_images).argmax(-1)
        accuracy = float((predicted == test_labels).float().mean())
    finally:
        torch.set_num_threads(before)
    return {
        "accuracy": accuracy,
        "images": len(test_labels),
        "seconds": trained,
        "steps": steps,
        "epochs": epochs,
        "params": sum(p.numel() for p in model.parameters()),
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--root", default="pretrained", help="pretrained (default: what `munet root` gives), "
        "random_init or FILE"
    )  # fmt: skip
    parser.add_argument(
        "--agent", default=PRESET, choices=list(AGENT_OVERRIDES), help=f"default {PRESET}"
    )
    parser.add_argument("--per-class", type=int, default=300, help="training images per class")
    parser.add_argument("--held-out", type=int, default=50, help="held-out images per class")
    parser.add_argument(
        "--choice", type=int, default=100, help="choice-draw images per class (munet only)"
    )
    parser.add_argument("--cycles", type=int, default=2, help="munet run --cycles")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--work", default=None, help="keep the data and state here")
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    parser.add_argument("--quick", action="store_true", help="tiny smoke test")
    args = parser.parse_args(argv)
    if args.quick:
        args.per_class, args.held_out, args.choice, args.cycles = 12, 4, 3, 1
        args.overrides = [*QUICK_OVERRIDES, *args.overrides]
    args.overrides = [f"seed={args.seed}", *args.overrides]
    with tempfile.TemporaryDirectory(prefix="munet-own-data-") as tmp:
        work = Path(args.work or tmp)
        train = write_folder(work / "train", args.per_class, seed=args.seed)
        held_out = write_folder(work / "held_out", args.held_out, seed=args.seed + 10_000)
        choice = write_folder(work / "choice", args.choice, seed=args.seed + 20_000)
        print(
            f"task: {len(CLASSES)} shape classes, {args.per_class * len(CLASSES)} training "
            f"PNGs, {args.held_out * len(CLASSES)} held-out, {args.choice * len(CLASSES)} in "
            f"the choice draw ({IMAGE_SIZE} px); load average {os.getloadavg()[0]:.1f}",
            flush=True,
        )
        munet = run_munet(args, train, held_out, choice, work)
        print(
            f"munet: held-out accuracy {munet['accuracy']:.4f} ({munet['images']} images), "
            f"choice-draw accuracy {munet['choice']:.4f} ({munet['choice_images']} images), "
            f"validation accuracy {munet['validation']:.4f} (its own split of the training "
            f"folder), {munet['seconds']:.0f}s",
            flush=True,
        )
        cnn = run_cnn(train, held_out, munet["seconds"], args.seed, threads=1)
        print(
            f"cnn: held-out accuracy {cnn['accuracy']:.4f}, {cnn['params']:,} params, "
            f"{cnn['steps']} steps ({cnn['epochs']} epochs) in {cnn['seconds']:.0f}s",
            flush=True,
        )
    ratio = munet["accuracy"] / cnn["accuracy"] if cnn["accuracy"] else float("inf")
    print(f"load average: {os.getloadavg()[0]:.1f}")
    print(f"ratio: {ratio:.3f} (munet / cnn held-out accuracy, same wall time)")
    results = {"munet": munet, "cnn": cnn, "ratio": ratio, "settings": vars(args)}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)
    return results


if __name__ == "__main__":
    main()
