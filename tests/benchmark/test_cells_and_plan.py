import json

import pytest

from munet.benchmark.cells import (
    SETTINGS_FILE,
    cell_file,
    claim_out,
    done_cells,
    read_cell,
    write_json_atomic,
)
from munet.benchmark.plan import (
    PATH_SHAPE_KEYS,
    BenchmarkError,
    Settings,
    make_settings,
    settings_mismatch,
    task_budget,
)


def _cell(method="linear", task="digits", seed=0, **extra):
    return {"method": method, "task": task, "seed": seed, "quality": 0.5, "test_quality": 0.4,
            "params_added": 10, "flops": 100.0, **extra}  # fmt: skip


def test_atomic_write_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "a" / "b.json"
    write_json_atomic(target, {"x": 1})
    write_json_atomic(target, {"x": 2})
    assert json.loads(target.read_text()) == {"x": 2}
    assert [p.name for p in target.parent.iterdir()] == ["b.json"]


def test_results_files_follow_the_umask(tmp_path):
    import os

    old = os.umask(0o022)
    try:
        write_json_atomic(tmp_path / "c.json", {"x": 1})
    finally:
        os.umask(old)
    assert (tmp_path / "c.json").stat().st_mode & 0o777 == 0o644


def test_cells_live_per_method_task_and_seed(tmp_path):
    assert cell_file(tmp_path, "system", "synth/shape", 2) == (
        tmp_path / "cells" / "system" / "synth~shape" / "seed_2.json"
    )


@pytest.mark.parametrize(
    "content",
    ['{"method": "linear", "task": "dig', "not json", json.dumps({"method": "linear"}),
     json.dumps(_cell(test_quality=None))],
)  # fmt: skip
def test_a_half_written_or_incomplete_cell_is_not_done(tmp_path, content):
    file = cell_file(tmp_path, "linear", "digits", 0)
    file.parent.mkdir(parents=True)
    file.write_text(content)
    assert read_cell(file) is None


def test_done_cells_reads_only_complete_cells_of_the_settings(tmp_path):
    settings = Settings(methods=("linear",), tasks=("digits",), seeds=(0, 1))
    write_json_atomic(cell_file(tmp_path, "linear", "digits", 0), _cell())
    cell_file(tmp_path, "linear", "digits", 1).write_text("{")
    write_json_atomic(cell_file(tmp_path, "cnn", "digits", 0), _cell("cnn"))  # not asked for
    assert list(done_cells(tmp_path, settings)) == [("linear", "digits", 0)]


def test_claim_out_records_settings_and_accepts_the_same_again(tmp_path):
    settings = Settings(methods=("linear",), tasks=("digits",), seeds=(0,), steps=64)
    claim_out(tmp_path / "out", settings)
    assert json.loads((tmp_path / "out" / SETTINGS_FILE).read_text())["steps"] == 64
    claim_out(tmp_path / "out", settings)  # a rerun resumes


def test_claim_out_refuses_another_configuration_and_names_the_difference(tmp_path):
    claim_out(tmp_path, Settings(methods=("linear",), tasks=("digits",), seeds=(0,), steps=64))
    other = Settings(methods=("linear",), tasks=("digits",), seeds=(0,), steps=128)
    with pytest.raises(BenchmarkError, match=r"another configuration \(steps 64 there, 128 now\)"):
        claim_out(tmp_path, other)


def test_claim_out_refuses_a_file_and_a_foreign_cells_folder(tmp_path):
    settings = Settings(methods=("linear",), tasks=("digits",), seeds=(0,))
    (tmp_path / "file").write_text("x")
    with pytest.raises(BenchmarkError, match="is a file"):
        claim_out(tmp_path / "file", settings)
    (tmp_path / "old" / "cells").mkdir(parents=True)
    with pytest.raises(BenchmarkError, match="no settings.json"):
        claim_out(tmp_path / "old", settings)


def test_budget_rounds_to_whole_paths_and_splits_the_system_paths():
    budget = task_budget("digits", interval=32, validations_per_path=4, steps=1024)
    assert (budget.path_steps, budget.num_paths, budget.steps) == (128, 8, 1024)
    assert (budget.singlepath_paths, budget.multipath_paths) == (6, 2)
    assert budget.num_validations == 32
    # A 1k task: 800 train examples, 25 batches between validations.
    budget = task_budget("1k/x", interval=25, validations_per_path=4, steps=1024)
    assert (budget.num_paths, budget.steps) == (10, 1000)
    # At least one singlepath and one multipath path.
    small = task_budget("digits", interval=32, validations_per_path=4, steps=1)
    assert (small.singlepath_paths, small.multipath_paths) == (1, 1)


def test_a_larger_system_budget_multiplies_the_systems_paths_only():
    equal = task_budget("1k/x", interval=25, validations_per_path=20, steps=1024)
    assert (equal.path_steps, equal.num_paths, equal.steps) == (500, 2, 1000)
    assert (equal.singlepath_paths, equal.multipath_paths) == (1, 1)
    four = task_budget("1k/x", interval=25, validations_per_path=20, steps=1024, system_budget=4)
    # The baselines keep N * P = 1,000 steps; the system samples 4 * 2 paths of 500.
    assert (four.num_paths, four.steps, four.path_steps) == (2, 1000, 500)
    assert (four.system_paths, four.singlepath_paths, four.multipath_paths) == (8, 6, 2)
    with pytest.raises(BenchmarkError, match="--system-budget 0: expected a whole number"):
        task_budget("1k/x", interval=25, validations_per_path=4, steps=1024, system_budget=0)


def test_a_settings_file_from_before_the_system_budget_resumes_at_budget_one(tmp_path):
    settings = make_settings(methods=["linear"], tasks=["digits"], seeds=[0], steps=64)
    old = {k: v for k, v in settings.to_dict().items() if k != "system_budget"}
    assert settings_mismatch(old, settings.to_dict()) is None
    larger = make_settings(methods=["linear"], tasks=["digits"], seeds=[0], steps=64,
                           system_budget=2)  # fmt: skip
    assert settings_mismatch(old, larger.to_dict()) == "system_budget 1 there, 2 now"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"methods": ["finetune", "lora"]}, "unknown method 'lora'"),
        ({"methods": ["cnn", "cnn"]}, "appears twice"),
        ({"tasks": ["digts"]}, "unknown task 'digts' \\(did you mean 'digits'"),
        ({"seeds": []}, "--seeds is empty"),
        ({"seeds": [0, 0]}, "distinct non-negative"),
        ({"seeds": [-1]}, "distinct non-negative"),
        ({"steps": 0}, "--steps 0"),
        ({"system_budget": 0}, "--system-budget 0"),
        ({"system_budget": 1.5}, "--system-budget 1.5"),
        ({"preset": "VitT"}, "--agent 'VitT' \\(did you mean 'VitT3'"),
        ({"preset": "VitB"}, "--agent 'VitB'.*expected one of VitCpu, VitCpuHybrid, VitT3"),
    ],
)
def test_make_settings_refuses_bad_requests(kwargs, match):
    with pytest.raises(BenchmarkError, match=match):
        make_settings(**kwargs)


def test_quick_settings_use_the_quick_suite():
    from munet.tasks.suite import QUICK_SUITE_TASKS, SUITE_TASKS

    assert make_settings().tasks == SUITE_TASKS
    quick = make_settings(quick=True)
    assert quick.tasks == QUICK_SUITE_TASKS and quick.quick and quick.steps < make_settings().steps
    assert Settings.from_dict(quick.to_dict()) == quick


def test_vitt3_runs_at_vitcpus_path_shape_with_its_own_model_root_and_lr():
    from munet.benchmark.baselines import base_config
    from munet.benchmark.system import _multipath_shape
    from munet.config import apply_overrides, get_preset

    cpu = base_config(make_settings(), seed=0)
    t3 = base_config(make_settings(preset="VitT3"), seed=0)
    shape = PATH_SHAPE_KEYS
    assert {k: getattr(t3, k) for k in shape} == {k: getattr(cpu, k) for k in shape}
    assert (t3.batch_size, t3.num_validations_per_path_training) == (32, 4)  # not 512, 4
    assert (t3.name, t3.model, t3.seed) == ("VitT3", "Ti/16", 0)
    assert t3.hparams_defaults["ds_image_size"] == 32 and t3.hparams_defaults["opt_lr"] == 0.02
    # The params base is VitCpu's scaled by the root's size; the paper's (2.2B) would make
    # every clone free for a 1.5M-parameter model.
    assert t3.scorer.base_accounted_params == 7.2 * cpu.scorer.base_accounted_params
    # --set comes after the shape; the multipath agent keeps its neutral scorer.
    settings = make_settings(preset="VitT3", overrides=["batch_size=16"])
    assert base_config(settings, seed=0).batch_size == 16
    multi = apply_overrides(get_preset(settings.multipath_preset), _multipath_shape(settings))
    assert (multi.name, multi.batch_size, multi.scorer.base_accounted_params) == (
        "MultiVitT3",
        16,
        0,
    )


def test_the_agent_is_part_of_a_benchmarks_configuration():
    t3 = make_settings(tasks=["digits"], seeds=[0], preset="VitT3")
    assert Settings.from_dict(t3.to_dict()) == t3
    cpu = make_settings(tasks=["digits"], seeds=[0])
    assert cpu.preset == "VitCpuHybrid"  # munet's CPU default
    assert (
        settings_mismatch(cpu.to_dict(), t3.to_dict()) == "preset 'VitCpuHybrid' there, 'VitT3' now"
    )
