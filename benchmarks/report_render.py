"""Benchmark `munet report` on the 50-agent synthetic system of `benchmarks/state_io.py`.

Prints, over interleaved rounds (medians):
  1. writing the report (read manifests + history, render, write the HTML) against the plain
     reads it cannot avoid: every agent's end-of-cycle manifests with `json.load` and its
     `paths.csv` with `csv.DictReader`, in the same process;
  2. the page's load time in headless Chromium (navigation start to the end of the load
     event) against a blank page in the same browser set-up, when Chromium is installed;
  3. the PNG figures' time (matplotlib), once.

Run: `python benchmarks/report_render.py` (builds the system first: about a minute, ~450 MB in
a temp dir; `--dir D` keeps it in D for the next run).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from state_io import build_system  # noqa: E402

from munet.report.browser import find_chromium, open_page  # noqa: E402
from munet.report.collect import collect_system  # noqa: E402
from munet.report.html import write_report  # noqa: E402
from munet.report.png import write_pngs  # noqa: E402


def plain_read(root: str) -> int:
    """Baseline: read every end-of-cycle manifest and history CSV; the number of rows."""
    rows = 0
    for agent in sorted(os.listdir(root)):
        folder = os.path.join(root, agent)
        if not os.path.isdir(folder):
            continue
        for state in sorted(os.listdir(folder)):
            if not state.startswith("state_") or not state.endswith("_0"):
                continue
            with open(os.path.join(folder, state, "manifest.json")) as f:
                json.load(f)
            with open(os.path.join(folder, state, "paths.csv"), newline="") as f:
                rows += sum(1 for _ in csv.DictReader(f))
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agents", type=int, default=50)
    parser.add_argument("--paths", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--dir", default=None, help="build (or reuse) the system here")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    base = args.dir or tempfile.mkdtemp(prefix="report_render_")
    root = os.path.join(base, "state")
    try:
        if not os.path.exists(os.path.join(root, f"Bench~task{args.agents - 1:03d}")):
            shutil.rmtree(root, ignore_errors=True)
            start = time.perf_counter()
            build_system(root, args.agents, args.paths, seed=0)
            print(f"built the system in {time.perf_counter() - start:.0f} s")
        out = os.path.join(base, "report.html")
        view = collect_system(root)
        print(
            f"system: {len(view.tasks)} task agents, {len(view.paths)} published paths, "
            f"{sum(len(a.history) for a in view.tasks)} history rows"
        )
        report_s, plain_s = [], []
        for _ in range(args.rounds):  # Interleaved: the machine is shared and noisy.
            start = time.perf_counter()
            plain_read(root)
            plain_s.append(time.perf_counter() - start)
            start = time.perf_counter()
            write_report(root, out)
            report_s.append(time.perf_counter() - start)
        report, plain = statistics.median(report_s), statistics.median(plain_s)
        print(
            f"1. write the report: {report * 1e3:.0f} ms (median of {args.rounds}), plain "
            f"manifest + CSV reads {plain * 1e3:.0f} ms; HTML {os.path.getsize(out) / 1e3:.0f} kB"
        )
        print(f"ratio: report / plain reads {report / plain:.2f}x")

        if find_chromium() is None:
            print("2. browser load: skipped (no Chromium; `make browser` installs it)")
        else:
            blank = os.path.join(base, "blank.html")
            with open(blank, "w") as f:
                f.write("<!DOCTYPE html><html><body><p>blank</p></body></html>")
            page_ms, blank_ms = [], []
            for _ in range(max(3, args.rounds // 2)):
                blank_ms.append(open_page(blank).load_ms)
                result = open_page(out)
                if result.errors:
                    raise RuntimeError(f"the page has errors: {result.errors}")
                page_ms.append(result.load_ms)
            page, empty = statistics.median(page_ms), statistics.median(blank_ms)
            print(
                f"2. browser load (headless Chromium, 1440x900): report {page:.0f} ms, blank "
                f"page {empty:.0f} ms (medians)"
            )
            print(f"ratio: report load / blank page load {page / empty:.2f}x")

        start = time.perf_counter()
        written = write_pngs(view, os.path.join(base, "report"))
        print(f"3. PNG figures: {len(written)} files in {time.perf_counter() - start:.1f} s")
    finally:
        if args.dir is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
