"""Regenerate the docs' results tables from the result files they quote.

A generated table sits between two HTML comments in a Markdown file (invisible once rendered):

    <!-- generated: {"kind": "own-data", "files": ["docs/results/run/seed_0.json"]} -->
    | ... the table ... |
    <!-- end generated -->

The opening comment holds a JSON object: ``kind`` names a renderer below, the other keys are
its arguments (file paths relative to the repository root). ``python tools/docs_tables.py``
rewrites every such block in the README and docs/ from the files; ``--check`` rewrites nothing
and exits 1 naming each block that differs (tests/test_docs.py runs the check, so a table cannot
drift from the files that hold its figures).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DOCUMENTS = ("README.md", "docs/*.md")
BLOCK = re.compile(
    r"(?P<open><!-- generated: (?P<spec>\{.*?\}) -->\n)(?P<body>.*?)"
    r"(?P<close><!-- end generated -->)",
    re.DOTALL,
)

Renderer = Callable[[dict[str, Any]], list[str]]


def _json(path: str) -> Any:
    file = REPO / path
    if not file.is_file():
        raise SystemExit(f"docs_tables: {path} (named in a generated block) does not exist")
    return json.loads(file.read_text())


def _interval(entry: dict[str, Any]) -> str:
    return f"{entry['mean']:.3f} ± {entry['ci95']:.3f}"


def _count(value: float) -> str:
    """Parameters and FLOPs as the benchmark's report writes them: 115.8k, 22.30M."""
    if value >= 1e6:
        return f"{value / 1e6:.2f}M"
    return f"{value / 1e3:.1f}k"


def _ratio(summary: dict[str, Any], method: str, against: str) -> dict[str, Any]:
    for ratio in summary.get("ratios", []):
        if ratio["method"] == method and ratio["against"] == against:
            return ratio
    raise SystemExit(f"docs_tables: no {method}/{against} ratio in the benchmark summary")


def claims(spec: dict[str, Any]) -> list[str]:
    """The system against fine-tuning, one row per benchmark run: ``rows`` of [label, file]."""
    lines = [
        "| preset, system budget | system | fine-tuning | quality / fine-tuning "
        "| params / fine-tuning |",
        "|---|---|---|---|---|",
    ]
    for label, path in spec["rows"]:
        summary = _json(path)
        ratio = _ratio(summary, "system", "finetune")
        quality = _interval(ratio["quality"])
        if "validation_quality" in ratio:
            quality += f" (validation {_interval(ratio['validation_quality'])})"
        lines.append(
            f"| {label} | {_interval(summary['methods']['system']['overall']['test_quality'])} "
            f"| {_interval(summary['methods']['finetune']['overall']['test_quality'])} "
            f"| {quality} | {ratio['params']:.3f} |"
        )
    return lines


def multipath(spec: dict[str, Any]) -> list[str]:
    """Multipath against the best singlepath path: ``rows`` of [label, file]."""
    lines = [
        "| preset | multipath / singlepath quality (paired over tasks and seeds) "
        "| pairs where multipath is better |",
        "|---|---|---|",
    ]
    for label, path in spec["rows"]:
        versus = _json(path)["multipath_vs_singlepath"]
        better = sum(task["multipath_better"] for task in versus["tasks"].values())
        pairs = sum(task["seeds"] for task in versus["tasks"].values())
        lines.append(f"| {label} | {versus['ratio']['mean']:.3f} | {better} of {pairs} |")
    return lines


def benchmark_tasks(spec: dict[str, Any]) -> list[str]:
    """One run's per-task table (test accuracy and params added) and its overall rows."""
    summary = _json(spec["file"])
    methods = list(summary["methods"])
    names = {"finetune": "fine-tuning", "linear": "linear probe", "cnn": "small CNN"}
    lines = [
        "| task | " + " | ".join(names.get(m, m) for m in methods) + " |",
        "|---|" + "---|" * len(methods),
    ]
    for task in summary["settings"]["tasks"]:
        cells = [summary["methods"][m]["tasks"][task] for m in methods]
        texts = [f"{_interval(c['test_quality'])} ({_count(c['params_added'])})" for c in cells]
        lines.append(f"| {task} | " + " | ".join(texts) + " |")
    overall = [summary["methods"][m]["overall"] for m in methods]
    lines += [
        "| **mean accuracy** | " + " | ".join(_interval(o["test_quality"]) for o in overall) + " |",
        "| params added per task | "
        + " | ".join(_count(o["params_added_per_task"]) for o in overall)
        + " |",
        "| FLOPs per example | " + " | ".join(_count(o["flops"]) for o in overall) + " |",
    ]
    return lines


def benchmark_overall(spec: dict[str, Any]) -> list[str]:
    """One run's overall rows only: mean test accuracy and parameters added, per method."""
    table = benchmark_tasks(spec)
    header = table[0].replace("| task |", "| mean over the tasks and seeds |", 1)
    return [header, table[1], *table[-3:-1]]


def benchmark_ratios(spec: dict[str, Any]) -> list[str]:
    """One run's summary ``ratio:`` lines (the per-task multipath lines left out)."""
    from munet.benchmark.summary import ratio_lines

    lines = [
        line
        for line in ratio_lines(_json(spec["file"]))
        if not line.startswith("ratio: multipath/singlepath quality 1k/")
    ]
    return ["```", *lines, "```"]


def own_data(spec: dict[str, Any]) -> list[str]:
    """benchmarks/own_data_vs_cnn.py's runs: ``files``, one per seed, in order."""
    lines = [
        "| seed | munet held-out | CNN held-out | wall time (each) | ratio |",
        "|---|---|---|---|---|",
    ]
    for path in spec["files"]:
        run = _json(path)
        lines.append(
            f"| {run['settings']['seed']} | {run['munet']['accuracy']:.3f} "
            f"| {run['cnn']['accuracy']:.3f} | {run['munet']['seconds']:.0f} s "
            f"| {run['ratio']:.3f} |"
        )
    return lines


def shipped_roots(spec: dict[str, Any]) -> list[str]:
    """The built-in roots, from their cards (munet/pretrain/roots/*.json)."""
    lines = [
        "| preset | sha256 | model, image size | pretraining | steps | made in "
        "| held-out acc. (own classes) |",
        "|---|---|---|---|---|---|---|",
    ]
    for path in spec["cards"]:
        card = _json(path)
        recipe = card["recipe"]
        how = [recipe["recipe"], f"{recipe['num_classes']:,} classes"]
        if recipe.get("instances", 1) > 1:
            how.append(f"up to {recipe['instances']} instances per image")
        if recipe.get("thumbnail"):
            how.append(f"{recipe['thumbnail']} x {recipe['thumbnail']} thumbnail")
        how += [f"seed {recipe['seed']}", f"batch {recipe['batch_size']}", card["dtype"]]
        device = "a GPU" if card["device"].startswith("cuda") else "a CPU"
        lines.append(
            f"| {card['preset']} | `{card['sha256'][:12]}…` "
            f"| {recipe['model']}, {recipe['num_layers']} blocks, {recipe['image_size']} px "
            f"| {', '.join(how)} | {card['steps']:,} | {card['seconds']:,.0f} s on {device} "
            f"| {card['val_accuracy']:.3f} |"
        )
    return lines


RENDERERS: dict[str, Renderer] = {
    "claims": claims,
    "multipath": multipath,
    "benchmark-tasks": benchmark_tasks,
    "benchmark-overall": benchmark_overall,
    "benchmark-ratios": benchmark_ratios,
    "own-data": own_data,
    "shipped-roots": shipped_roots,
}


def render(text: str, where: str) -> str:
    """``text`` with every generated block's body rendered afresh from its files."""

    def replace(match: re.Match[str]) -> str:
        try:
            spec = json.loads(match["spec"])
        except json.JSONDecodeError as error:
            raise SystemExit(f"docs_tables: {where}: a generated block's JSON: {error}") from None
        kind = spec.get("kind")
        if kind not in RENDERERS:
            raise SystemExit(
                f"docs_tables: {where}: kind {kind!r}; expected one of {sorted(RENDERERS)}"
            )
        body = "\n".join(RENDERERS[kind](spec)) + "\n"
        return match["open"] + body + match["close"]

    return BLOCK.sub(replace, text)


def documents() -> list[Path]:
    return sorted(path for pattern in DOCUMENTS for path in REPO.glob(pattern))


def stale_blocks() -> list[str]:
    """The documents whose generated blocks differ from their files (nothing rewritten)."""
    stale = []
    for path in documents():
        text = path.read_text()
        if render(text, str(path.relative_to(REPO))) != text:
            stale.append(str(path.relative_to(REPO)))
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="rewrite nothing; exit 1 if stale")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_blocks()
        for name in stale:
            print(
                f"{name}: generated tables differ from their files "
                "(run python tools/docs_tables.py)"
            )
        return 1 if stale else 0
    for path in documents():
        text = path.read_text()
        rendered = render(text, str(path.relative_to(REPO)))
        if rendered != text:
            path.write_text(rendered)
            print(f"rewrote {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
