"""The docs' figures for `munet benchmark --quick` are the quick plan's (issue 53 item 4): its
tasks, the train steps its tasks round `--steps` to, and its cells, computed here from
munet.benchmark.plan and the suite's declared split sizes (no data is generated)."""

from __future__ import annotations

import re
from pathlib import Path

from munet.benchmark.plan import (
    AGENT_OVERRIDES,
    DEFAULT_SEEDS,
    METHODS,
    PRESET,
    QUICK_STEPS,
    make_settings,
    task_budget,
)
from munet.config import apply_overrides, get_preset
from munet.tasks.suite import DIGITS_1K_SPLIT_SIZES, QUICK_SUITE_TASKS, SUITE_SPLIT_SIZES
from munet.tasks.task import compute_sizing

REPO = Path(__file__).resolve().parents[2]


def _quick_plan() -> dict:
    settings = make_settings(quick=True)
    assert settings.tasks == QUICK_SUITE_TASKS and settings.steps == QUICK_STEPS
    assert settings.seeds == DEFAULT_SEEDS and settings.methods == METHODS
    config = apply_overrides(get_preset(PRESET), list(AGENT_OVERRIDES[PRESET]))
    budgets = []
    for task in settings.tasks:
        sizes = DIGITS_1K_SPLIT_SIZES if task == "1k/digits" else SUITE_SPLIT_SIZES
        sizing = compute_sizing(
            sizes["train"], sizes["validation"], sizes["test"],
            batch_size=config.batch_size,
            num_train_examples_between_validations_max=config.num_train_examples_between_validations_max,
            num_validation_examples_max=config.num_validation_examples_max,
        )  # fmt: skip
        budgets.append(
            task_budget(
                task,
                sizing.num_train_batches_between_validations,
                config.num_validations_per_path_training,
                settings.steps,
            )
        )
    (budget,) = {(b.steps, b.num_paths, b.path_steps, b.interval) for b in budgets}
    steps, num_paths, path_steps, interval = budget
    return {
        "tasks": settings.tasks,
        "steps": steps,
        "num_paths": num_paths,
        "path_steps": path_steps,
        "interval": interval,
        "cells": len(settings.tasks) * len(settings.seeds) * len(settings.methods),
    }


def _words(page: str) -> str:
    return " ".join((REPO / page).read_text().split())


def test_benchmark_md_states_the_quick_plan():
    plan = _quick_plan()
    text = _words("docs/benchmark.md")
    n = len(plan["tasks"])
    assert f"# CI-sized ({n} tasks, {plan['steps']} steps, {plan['cells']} cells)" in text
    assert f"`--quick`'s {QUICK_STEPS}: {plan['steps']} at `I` = {plan['interval']}" in text
    names = ", ".join(f"`{task}`" for task in plan["tasks"])
    assert f"`--quick`: `QUICK_SUITE_TASKS` ({n} tasks: {names})" in text
    assert (
        f"`--steps {QUICK_STEPS}`, which the 800-example tasks round to {plan['steps']} "
        f"({plan['num_paths']} paths of {plan['path_steps']} steps), seeds "
        f"{','.join(map(str, DEFAULT_SEEDS))}, {len(METHODS)} methods: {plan['cells']} cells"
    ) in text


def test_no_page_states_other_quick_figures():
    plan = _quick_plan()
    pages = ["README.md", *(p.relative_to(REPO).as_posix() for p in (REPO / "docs").glob("*.md"))]
    for page in pages:
        for line in (REPO / page).read_text().splitlines():
            if "--quick" not in line:
                continue
            for count in re.findall(r"\b(\d+) tasks\b", line):
                assert int(count) == len(plan["tasks"]), f"{page}: {line}"
            for count in re.findall(r"\b(\d+) cells\b", line):
                assert int(count) == plan["cells"], f"{page}: {line}"
