"""Speed of the pretraining images' rendering against the same code at another git revision.

The recipes are the pretraining's data stream: a faster renderer must render the same images,
bit for bit, or the shipped roots no longer reproduce. In one run, this renders the same
batches (``make_recipe(...)``, ``sample_batch`` from the same seeds) with this work tree's
``munet`` and with the ``munet`` of ``--against`` (extracted by ``git archive``), each in its
own process on ``--threads`` threads, alternating for ``--rounds`` rounds, and prints per side
the median images/s, whether the images are identical (sha256 of all batches), and::

    ratio: R   (this tree's images/s / the revision's)

    python benchmarks/render_speed.py --against a5ddd37~1 --recipe fractal --instances 3
    python benchmarks/render_speed.py --against HEAD --quick          # tiny smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Run in a fresh interpreter whose sys.path starts at the tree to time.
CHILD = """
import hashlib, json, sys, time
import torch
args = json.loads(sys.argv[1])
torch.set_num_threads(args["threads"])
from munet.pretrain.generators import make_recipe, sample_batch
recipe = make_recipe(args["recipe"], args["classes"], 0, instances=args["instances"])
digest = hashlib.sha256()
g = torch.Generator().manual_seed(1)
sample_batch(recipe, args["batch_size"], args["image_size"], g)  # warm-up
start = time.perf_counter()
for index in range(args["batches"]):
    images, labels = sample_batch(
        recipe, args["batch_size"], args["image_size"], torch.Generator().manual_seed(index)
    )
    digest.update(images.numpy().tobytes() + labels.numpy().tobytes())
seconds = time.perf_counter() - start
print(json.dumps({"img_s": args["batches"] * args["batch_size"] / seconds,
                  "sha256": digest.hexdigest()}))
"""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", required=True, help="git revision to compare with")
    parser.add_argument("--recipe", default="fractal")
    parser.add_argument("--classes", type=int, default=100)
    parser.add_argument("--instances", type=int, default=1)
    parser.add_argument("--image-size", type=int, default=24)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--batches", type=int, default=20, help="timed batches per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="tiny smoke run")
    args = parser.parse_args(argv)
    if args.quick:
        args.classes, args.image_size, args.batch_size, args.batches, args.rounds = 10, 16, 8, 2, 1
    return args


def extract(revision: str, into: Path) -> Path:
    """The ``munet`` package of ``revision``, unpacked under ``into``."""
    archive = into / "tree.tar"
    try:
        subprocess.run(
            ["git", "-C", str(REPO), "archive", "--output", str(archive), revision, "munet"],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
    except subprocess.CalledProcessError as error:
        message = f"--against {revision!r}: git archive failed: {error.stderr.strip()}"
        raise SystemExit(message) from None
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into


def render(tree: Path, args: argparse.Namespace) -> dict:
    keys = ("recipe", "classes", "instances", "image_size", "batch_size", "batches", "threads")
    spec = {key: getattr(args, key) for key in keys}
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": str(args.threads)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(spec)],
        check=True, capture_output=True, text=True, env=env, cwd=tree,
    )  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"this tree": REPO, args.against: extract(args.against, Path(tmp))}
        runs: dict[str, list[dict]] = {name: [] for name in trees}
        for round_index in range(args.rounds):
            for name, tree in trees.items():
                runs[name].append(render(tree, args))
                print(f"round {round_index + 1}/{args.rounds} {name}: "
                      f"{runs[name][-1]['img_s']:,.0f} img/s", flush=True)  # fmt: skip
    speed = {name: statistics.median(run["img_s"] for run in runs[name]) for name in runs}
    digests = {run["sha256"] for rounds in runs.values() for run in rounds}
    same = len(digests) == 1
    print(f"\n{args.recipe}, {args.classes} classes, up to {args.instances} instances, "
          f"{args.image_size} px, batch {args.batch_size}, {args.threads} thread(s):")  # fmt: skip
    for name, value in speed.items():
        print(f"  {name}: {value:,.0f} img/s (median of {args.rounds})")
    print(f"  images identical: {'yes' if same else 'NO'} ({len(digests)} distinct sha256)")
    ratio = speed["this tree"] / speed[args.against]
    print(f"ratio: {ratio:.3f} (this tree's images/s / {args.against}'s)")
    return {"img_s": speed, "identical": same, "ratio": ratio}


if __name__ == "__main__":
    main()
