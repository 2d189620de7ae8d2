"""`munet predict`: class names and probabilities of image files from an exported model.

    munet predict exports/flowers photos/ rose.jpg --top-k 3 --format csv
    munet predict runs/vit photos/ [--trial 7]    # a vit: search's best model (or a trial)

Exit code 0 when every image was predicted; 2 on bad input: a usage error (no model folder,
no images), or images that could not be read (the others are still predicted and printed;
each unreadable file is named on stderr, then a count).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys

from munet.cli.errors import EXIT_BAD_INPUT

FORMATS = ("table", "csv", "json")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds `predict`."""
    parser = subparsers.add_parser(
        "predict",
        help="classify image files with an exported model",
        description=(
            "Classify images with a model folder written by munet export: the top-k classes "
            "and their probabilities per image. Folders are searched recursively for images; "
            "any size and mode (grey, RGBA, palette) is accepted."
        ),
    )
    parser.add_argument(
        "model", help="the export folder (munet export --out DIR), or a vit: search's folder"
    )
    parser.add_argument("inputs", nargs="+", help="image files and folders of images")
    parser.add_argument("--top-k", type=int, default=1, help="classes per image (default 1)")
    parser.add_argument("--format", default="table", choices=FORMATS)
    parser.add_argument("--batch-size", type=int, default=64, help="images per forward pass")
    parser.add_argument("--device", default="cpu", help="torch device (default: cpu)")
    parser.add_argument(
        "--trial", type=int, default=None, help="a search folder's trial (default: its best)"
    )
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="a progress bar on stderr (default: when stderr is a terminal and there are "
        "more images than one batch)",
    )
    parser.set_defaults(func=_predict)


def _fail(message: object) -> int:
    print(f"munet: error: {message}", file=sys.stderr)
    return 2


def _predict(args: argparse.Namespace) -> int:
    from munet.models.export import ExportError
    from munet.models.predict import collect_images, predict_files

    if args.top_k < 1 or args.batch_size < 1:
        return _fail("--top-k and --batch-size must be >= 1")
    try:
        model, preprocess = _load_model(args.model, args.trial)
        files = collect_images(args.inputs)
    except (ExportError, FileNotFoundError, ValueError) as error:
        return _fail(error)
    if not files:
        return _fail(f"no image files in {', '.join(args.inputs)}")
    failures: list[str] = []

    def warn(file: str, message: str) -> None:
        failures.append(file)
        print(f"munet: warning: skipping {file}: {message}", file=sys.stderr)

    show_progress = args.progress
    if show_progress is None:
        show_progress = sys.stderr.isatty() and len(files) > args.batch_size
    bar = None
    if show_progress:
        from tqdm import tqdm

        bar = tqdm(total=len(files), unit="img", file=sys.stderr, desc="predict")
    try:
        predictions = list(
            predict_files(
                model,
                preprocess,
                files,
                top_k=args.top_k,
                batch_size=args.batch_size,
                class_names=model.class_names,
                on_error=warn,
                on_batch=bar.update if bar is not None else None,
                device=args.device,
            )
        )
    finally:
        if bar is not None:
            bar.close()
    print(format_predictions(predictions, args.format))
    if failures:
        print(
            f"munet predict: error: {len(failures)} of {len(files)} images could not be read "
            "(named above; the others are predicted)",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    return 0


def _load_model(folder: str, trial: int | None):
    """An export folder, or a search folder's model exported on the fly (to a temporary
    folder, so it is checked and loaded exactly as an export)."""
    import os
    import tempfile

    from munet.models.export import load_exported
    from munet.search.run_state import STATE_FILE

    if not os.path.isfile(os.path.join(folder, STATE_FILE)):
        if trial is not None:
            raise ValueError(f"--trial {trial}: {folder!r} is not a search folder")
        return load_exported(folder)
    from munet.search.export import export_search_model

    with tempfile.TemporaryDirectory(prefix="munet-predict-") as scratch:
        exported, _ = export_search_model(folder, os.path.join(scratch, "model"), trial)
        return load_exported(exported)  # Tensors are in memory once loaded.


def format_predictions(predictions, fmt: str) -> str:
    """`table` (one line per image), `csv` (one row per image and rank) or `json`."""
    if fmt == "json":
        return json.dumps(
            [
                {
                    "file": p.file,
                    "predictions": [
                        {"class": name, "index": index, "probability": prob}
                        for name, index, prob in zip(
                            p.names, p.classes, p.probabilities, strict=True
                        )
                    ],
                }
                for p in predictions
            ],
            indent=2,
        )
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["file", "rank", "class", "index", "probability"])
        for p in predictions:
            for rank, (name, index, prob) in enumerate(
                zip(p.names, p.classes, p.probabilities, strict=True), 1
            ):
                writer.writerow([p.file, rank, name, index, f"{prob:.6f}"])
        return out.getvalue().rstrip("\n")
    if fmt != "table":
        raise ValueError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
    if not predictions:
        return "(no predictions)"
    width = max(len("file"), *(len(p.file) for p in predictions))
    lines = [f"{'file'.ljust(width)}  prediction"]
    for p in predictions:
        ranked = ", ".join(
            f"{name} {prob:.3f}" for name, prob in zip(p.names, p.probabilities, strict=True)
        )
        lines.append(f"{p.file.ljust(width)}  {ranked}")
    return "\n".join(lines)
