"""`munet export` and `munet test`: published paths as standalone models, and their check.

munet export -d state --task flowers --out exports/flowers     # the best published path
munet export -d state --task flowers --agent VitCpu --path 7 --out exports/flowers-7
munet export --search runs/vit [--trial 7] --out exports/vit       # a vit: search's model
munet export -d state --task flowers --format hf --out hf/flowers  # transformers ViT folder
munet export -d state --task flowers --format onnx --out onnx/flowers
munet test -d state [--task flowers] [--format json]           # the immutability test
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
from collections.abc import Callable

EXPORT_FORMATS = ("munet", "hf", "onnx")
# What the line after an export says the folder is, per --format.
FORMAT_NOTES = {
    "munet": "",
    "hf": " (transformers ViTForImageClassification folder)",
    "onnx": " (ONNX model)",
}
TEST_FORMATS = ("table", "json")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds `export` and `test`."""
    export = subparsers.add_parser(
        "export",
        help="write a published path as a standalone model folder",
        description=(
            "Write the best published path of a task (or the one named) as a folder: "
            "model.safetensors, config.json (architecture, classes, preprocessing, provenance) "
            "and a README card. Load it with munet.load_exported(DIR) or munet predict DIR. "
            "--format hf writes a transformers ViTForImageClassification folder, --format onnx "
            "an ONNX model (singlepath paths only)."
        ),
    )
    _add_state_dir(export)
    export.add_argument("--task", default=None, help="the task whose path to export")
    export.add_argument("--agent", default=None, help="agent class (default: any; the best)")
    export.add_argument("--path", type=int, default=None, help="path id (default: the best)")
    export.add_argument("--out", required=True, help="folder to create (must be new or empty)")
    export.add_argument("--data-dir", default=None, help="TFDS data_dir / Hugging Face cache")
    export.add_argument(
        "--format",
        default="munet",
        choices=EXPORT_FORMATS,
        help="munet (default: munet.load_exported / munet predict), hf (transformers "
        "ViTForImageClassification.from_pretrained) or onnx (onnxruntime); see docs/export.md",
    )
    export.add_argument(
        "--search",
        default=None,
        metavar="RUN_DIR",
        help="export a model of a vit: search (munet search --out RUN_DIR) instead: the best, "
        "or --trial",
    )
    export.add_argument(
        "--trial", type=int, default=None, help="with --search: this trial (pool model id)"
    )
    export.set_defaults(func=_export)

    test = subparsers.add_parser(
        "test",
        help="re-evaluate published best paths on their test split (immutability test)",
        description=(
            "Re-evaluate every agent's best published path on its task's test split and "
            "compare with the recorded test quality (relative tolerance 0.001, the seed's "
            "immutability test). Exit code 1 on a mismatch, 2 when a path could not be "
            "evaluated."
        ),
    )
    _add_state_dir(test)
    test.add_argument("--task", default=None, help="only this task")
    test.add_argument("--agent", action="append", help="only these agent classes (repeatable)")
    test.add_argument("--rtol", type=float, default=0.001, help="relative tolerance")
    test.add_argument("--device", default="cpu", help="torch device (default: cpu)")
    test.add_argument("--data-dir", default=None, help="TFDS data_dir / Hugging Face cache")
    test.add_argument(
        "--format",
        default="table",
        choices=TEST_FORMATS,
        help="table (default: the summary, then per-class accuracy and the confusion matrix of "
        "each path) or json",
    )
    test.set_defaults(func=_test)


def _add_state_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-d", "--state-dir", default="state", help="system state dir (default: state)"
    )


def _fail(command: str, message: object) -> int:
    print(f"munet: error: {message}", file=sys.stderr)
    return 2


def _open_store(state_dir: str):
    from munet.system import SystemStore

    if "://" not in state_dir and not os.path.isdir(state_dir):
        raise ValueError(f"no state dir at {state_dir!r}")
    return SystemStore(state_dir)


def _export(args: argparse.Namespace) -> int:
    if args.search is not None:
        return _export_search(args)
    if args.trial is not None:
        return _fail("export", "--trial needs --search RUN_DIR")
    if args.task is None:
        return _fail("export", "expected --task TASK (a system's path) or --search RUN_DIR")
    from munet.agents.published import export_published
    from munet.system import SystemStateError

    try:
        store = _open_store(args.state_dir)
        folder, published = _in_format(
            args,
            lambda out: export_published(
                store, args.task, out, args.agent, args.path, args.data_dir,
                check_model=_model_check(args.format),
            ),
        )  # fmt: skip
    except (ValueError, SystemStateError, ImportError) as error:
        return _fail("export", error)
    metrics = published.path.metrics
    test_quality = metrics.get("test_quality")
    shown = "-" if test_quality is None else f"{float(test_quality):.4f}"
    print(
        f"exported {published.path.full_id} (test quality {shown}) to {folder}"
        f"{FORMAT_NOTES[args.format]}"
    )
    return 0


def _model_check(fmt: str) -> Callable[[dict, str], None] | None:
    """What refuses a path's model tree for --format `fmt` before anything is written (a
    hybrid ViT for hf), or None."""
    if fmt != "hf":
        return None
    from munet.models.export_hf import hf_refusal
    from munet.models.export_tree import ExportError

    def check(node: dict, where: str) -> None:
        refusal = hf_refusal(node, where)
        if refusal is not None:
            raise ExportError(refusal)

    return check


def _in_format(args: argparse.Namespace, write_munet: Callable[[str], tuple]) -> tuple:
    """Runs `write_munet(folder) -> (folder, what)`; for --format hf/onnx into a scratch
    folder, converted into --out (checked first, so a busy --out costs no export)."""
    if args.format == "munet":
        return write_munet(args.out)
    from munet.models.export_hf import new_folder, save_hf
    from munet.models.export_onnx import save_onnx

    new_folder(args.out, create_parent=False)
    convert = save_hf if args.format == "hf" else save_onnx
    with tempfile.TemporaryDirectory(prefix="munet-export-") as scratch:
        munet_folder, what = write_munet(os.path.join(scratch, "munet"))
        return convert(munet_folder, args.out), what


def _export_search(args: argparse.Namespace) -> int:
    from munet.search.export import export_search_model

    try:
        folder, model = _in_format(
            args, lambda out: export_search_model(args.search, out, args.trial)
        )
    except (ValueError, ImportError) as error:  # ExportError is a ValueError
        return _fail("export", error)
    print(
        f"exported trial {model.trial} of {args.search} ({model.candidate}, validation "
        f"accuracy {model.accuracy:.4f}) to {folder}{FORMAT_NOTES[args.format]}"
    )
    return 0


def _test(args: argparse.Namespace) -> int:
    from munet.agents.immutability import run_immutability_test
    from munet.system import SystemStateError

    try:
        store = _open_store(args.state_dir)
        results = run_immutability_test(
            store,
            task_name=args.task,
            agent_classes=args.agent,
            rtol=args.rtol,
            device=args.device,
            data_dir=args.data_dir,
        )
    except (ValueError, SystemStateError) as error:
        return _fail("test", error)
    if not results:
        which = hint = ""
        if args.task:
            from munet.agents.task_data import task_bindings
            from munet.tasks.registry import did_you_mean

            which = f" of task {args.task!r}"
            tasks = sorted({b.task_name for b in task_bindings(store)})
            hint = f"{did_you_mean(args.task, tasks)}; tasks there: {', '.join(tasks) or 'none'}"
        return _fail("test", f"no published paths{which} in {args.state_dir}{hint}")
    if args.format == "json":
        print(json.dumps([test_result_dict(r) for r in results], indent=1))
    else:
        from munet.models.class_metrics import class_table

        print(format_test_table(results))
        for result in results:
            if result.classes is not None:
                print()
                print(_class_heading(result))
                print(class_table(result.classes))
    if any(r.status == "MISMATCH" for r in results):
        from munet.cli.errors import EXIT_QUALITY_MISMATCH

        return EXIT_QUALITY_MISMATCH
    if any(r.status.startswith("error") for r in results):
        return 2
    return 0


def _class_heading(result) -> str:
    classes = result.classes
    top5 = classes.top5_accuracy
    extra = "" if top5 is None else f", top-5 accuracy {top5:.4f}"
    return (
        f"{result.agent_id}:{result.path_id} ({result.task_name}): {classes.num_examples} test "
        f"examples, accuracy {classes.accuracy:.4f}{extra}"
    )


def test_result_dict(result) -> dict:
    """One `munet test --format json` entry: the summary row plus per-class metrics."""
    return {
        "path": f"{result.agent_id}:{result.path_id}",
        "agent_id": result.agent_id,
        "path_id": result.path_id,
        "task": result.task_name,
        "examples": result.num_examples,
        "recorded": result.recorded,
        "measured": result.measured,
        "delta": result.delta,
        "status": result.status,
        "classes": None if result.classes is None else result.classes.to_dict(),
    }


def format_test_table(results) -> str:
    """An aligned table: path, task, recorded and measured test quality, delta, status."""

    def number(value: float | None, signed: bool = False) -> str:
        if value is None or math.isnan(value):
            return "-"
        return f"{value:+.6f}" if signed else f"{value:.6f}"

    header = ["path", "task", "examples", "recorded", "measured", "delta", "status"]
    rows = [
        [
            f"{r.agent_id}:{r.path_id}",
            r.task_name,
            str(r.num_examples or "-"),
            number(r.recorded),
            number(r.measured),
            number(r.delta, signed=True),
            r.status,
        ]
        for r in results
    ]
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    lines += [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
    ok = sum(r.status == "ok" for r in results)
    lines.append(f"{ok}/{len(results)} paths reproduce their recorded test quality")
    return "\n".join(lines)
