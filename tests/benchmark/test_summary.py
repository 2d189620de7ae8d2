"""The summary's ratios against fine-tuning, from cells written by hand."""

import math

import pytest

from munet.benchmark import make_settings
from munet.benchmark.summary import ratio_lines, ratios_against_baseline


def cells_for(settings, figures):
    """Cells from {(method, seed): (validation, test, params)}, the same on every task."""
    return {
        (method, task, seed): {"quality": val, "test_quality": test, "params_added": params}
        for (method, seed), (val, test, params) in figures.items()
        for task in settings.tasks
    }


def test_ratios_read_validation_and_test_apart_and_give_the_params_per_seed():
    settings = make_settings(methods=["system", "finetune"], tasks=["digits"], seeds=[0, 1])
    cells = cells_for(settings, {
        ("system", 0): (0.45, 0.40, 60.0), ("finetune", 0): (0.50, 0.50, 100.0),
        ("system", 1): (0.60, 0.90, 40.0), ("finetune", 1): (0.60, 1.00, 100.0),
    })  # fmt: skip
    (ratio,) = ratios_against_baseline(settings, cells)
    assert ratio["quality"]["mean"] == pytest.approx((0.8 + 0.9) / 2)
    assert ratio["validation_quality"]["mean"] == pytest.approx((0.9 + 1.0) / 2)
    assert ratio["params"] == pytest.approx(0.5)
    assert ratio["params_per_seed"] == pytest.approx([0.6, 0.4])
    lines = ratio_lines({"ratios": [ratio]})
    assert lines[0].startswith("ratio: system/finetune quality 0.850 ± ")
    assert lines[1].startswith("ratio: system/finetune validation quality 0.950 ± ")
    assert lines[2] == (
        "ratio: system/finetune params 0.500 (parameters added per task; per seed 0.400 to 0.600)"
    )


def test_a_cell_without_a_validation_score_leaves_the_validation_ratio_out():
    settings = make_settings(methods=["system", "finetune"], tasks=["digits"], seeds=[0])
    cells = cells_for(settings, {("system", 0): (math.nan, 0.4, 60.0),
                                 ("finetune", 0): (0.5, 0.5, 100.0)})  # fmt: skip
    (ratio,) = ratios_against_baseline(settings, cells)
    assert ratio["validation_quality"] is None
    lines = ratio_lines({"ratios": [ratio]})
    assert [line.split(" (")[0] for line in lines] == [
        "ratio: system/finetune quality 0.800",
        "ratio: system/finetune params 0.600",
    ]
