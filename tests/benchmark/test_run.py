"""End to end: tiny benchmarks through run_benchmark (resume, files, ratios, workers)."""

import json

import pytest

from munet.benchmark import make_settings, run_benchmark
from munet.benchmark.cells import cell_file, read_cell


def _quiet(_line):
    pass


def test_resume_skips_done_cells_and_redoes_a_half_written_one(tmp_path, tiny_overrides):
    settings = make_settings(
        methods=["linear", "cnn"], tasks=["digits"], seeds=[0], steps=8, overrides=tiny_overrides
    )
    out = tmp_path / "out"
    first = run_benchmark(settings, out, echo=_quiet)
    assert (first.ran, first.skipped) == (2, 0)
    kept = cell_file(out, "linear", "digits", 0)
    kept_stamp = kept.stat().st_mtime_ns
    damaged = cell_file(out, "cnn", "digits", 0)
    damaged.write_text(damaged.read_text()[:40])  # a write cut short
    lines = []
    second = run_benchmark(settings, out, echo=lines.append)
    assert (second.ran, second.skipped) == (1, 1)
    assert kept.stat().st_mtime_ns == kept_stamp
    assert read_cell(damaged)["method"] == "cnn"
    assert any(line.startswith("[1/1] cnn digits seed 0: test ") for line in lines)
    assert run_benchmark(settings, out, echo=_quiet).ran == 0


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    from tests.benchmark.conftest import TINY_OVERRIDES

    out = tmp_path_factory.mktemp("bench") / "out"
    settings = make_settings(
        tasks=["digits", "synth/shape"], seeds=[0], steps=8, overrides=TINY_OVERRIDES
    )
    lines = []
    run = run_benchmark(settings, out, echo=lines.append)
    return settings, out, run, lines


@pytest.mark.slow
def test_tiny_benchmark_writes_json_markdown_plot_and_ratios(tiny_run):
    settings, out, run, lines = tiny_run
    assert run.ran == 10
    for name in ("results.json", "results.md", "results.png"):
        assert (out / name).stat().st_size > 0
    results = json.loads((out / "results.json").read_text())
    assert len(results["cells"]) == 10
    assert {r["method"] for r in results["ratios"]} == {"system", "linear", "adapters", "cnn"}
    for ratio in results["ratios"]:
        assert ratio["quality"]["mean"] > 0 and ratio["params"] > 0
    # Parameters added: the linear probe adds its head only, fine-tuning the whole model.
    linear = results["methods"]["linear"]["tasks"]["digits"]["params_added"]
    finetune = results["methods"]["finetune"]["tasks"]["digits"]["params_added"]
    assert 0 < linear < finetune
    for cell in results["cells"]:
        assert 0 < cell["params_added"] <= cell["params_total"]
        if cell["method"] == "system":  # Shared components are charged in part.
            assert 0 < cell["accounted_params"] <= cell["params_total"]
            assert cell["model"] in ("singlepath", "multipath")
    assert set(results["multipath_vs_singlepath"]["tasks"]) == {"digits", "synth/shape"}
    assert any(line.startswith("ratio: system/finetune quality ") for line in lines)
    assert any(line.startswith("ratio: multipath/singlepath quality digits ") for line in lines)
    assert "| digits |" in (out / "results.md").read_text()
    # Then one verdict per claim, after every ratio line (issue 53).
    verdicts = [i for i, line in enumerate(lines) if line.startswith("verdict: ")]
    assert [lines[i].split(":")[1] for i in verdicts] == [
        " system vs finetune", " multipath vs singlepath"
    ]  # fmt: skip
    assert min(verdicts) > max(i for i, line in enumerate(lines) if line.startswith("ratio: "))
    assert lines[-1].startswith("results: ")
    # Every method spent the same train steps on a task.
    steps = {c["steps"] for c in results["cells"] if c["task"] == "digits"}
    assert steps == {results["budgets"]["digits"]["steps"]}


@pytest.mark.slow
def test_a_system_cell_lost_after_its_agents_finished_is_rebuilt_from_the_store(tiny_run):
    settings, out, _, _ = tiny_run
    lost = cell_file(out, "system", "synth/shape", 0)
    before = json.loads(lost.read_text())
    lost.unlink()
    again = run_benchmark(settings, out, echo=_quiet)
    assert again.ran == 1
    after = json.loads(lost.read_text())
    # The agents had finished their cycles: the same published paths, not a new run.
    assert after["path"] == before["path"]
    assert after["test_quality"] == before["test_quality"]


@pytest.mark.slow
def test_workers_run_cells_in_processes(tmp_path, tiny_overrides):
    settings = make_settings(
        methods=["linear", "cnn"], tasks=["digits"], seeds=[0, 1], steps=8,
        overrides=tiny_overrides,
    )  # fmt: skip
    lines = []
    run = run_benchmark(settings, tmp_path / "out", workers=2, echo=lines.append)
    assert run.ran == 4
    assert sum(line.startswith("[") for line in lines) == 4
    serial = run_benchmark(settings, tmp_path / "serial", echo=_quiet)
    # One thread per worker and seeded: the same results as in this process.
    for key in [("linear", "digits", 0), ("cnn", "digits", 1)]:
        assert (
            read_cell(cell_file(tmp_path / "out", *key))["test_quality"]
            == read_cell(cell_file(tmp_path / "serial", *key))["test_quality"]
        )
    assert serial.ran == 4


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:.*took over a stale lock")  # the killed run's, expected
def test_kill_9_mid_run_then_the_same_command_finishes_keeping_finished_cells(
    tmp_path, tiny_overrides
):
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    out = tmp_path / "out"
    args = ["--out", str(out), "--methods", "system,linear", "--tasks", "digits,synth/shape",
            "--seeds", "0", "--steps", "8"]  # fmt: skip
    for item in tiny_overrides:
        args += ["--set", item]
    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(repo), "OMP_NUM_THREADS": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "munet", "benchmark", *args],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    first = cell_file(out, "system", "digits", 0)
    deadline = time.monotonic() + 600
    while not first.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    assert first.exists(), "the run ended before its first cell"
    stamp = first.stat().st_mtime_ns
    settings = make_settings(
        methods=["system", "linear"], tasks=["digits", "synth/shape"], seeds=[0], steps=8,
        overrides=tiny_overrides,
    )  # fmt: skip
    again = run_benchmark(settings, out, echo=_quiet)
    assert again.skipped >= 1 and again.ran + again.skipped == 4
    assert first.stat().st_mtime_ns == stamp
    assert len(json.loads((out / "results.json").read_text())["cells"]) == 4


def test_a_system_budget_of_two_gives_the_system_twice_the_steps(tmp_path, tiny_overrides):
    settings = make_settings(methods=["system", "linear"], tasks=["digits"], seeds=[0], steps=8,
                             overrides=tiny_overrides, system_budget=2)  # fmt: skip
    out = tmp_path / "out"
    run_benchmark(settings, out, echo=_quiet)
    results = json.loads((out / "results.json").read_text())
    budget = results["budgets"]["digits"]
    assert budget["system_paths"] == 2 * budget["num_paths"]
    system = read_cell(cell_file(out, "system", "digits", 0))
    linear = read_cell(cell_file(out, "linear", "digits", 0))
    assert system["steps"] == 2 * budget["steps"] == 2 * linear["steps"]
    assert "the system: 2 times that, --system-budget 2" in (out / "results.md").read_text()


def test_a_baseline_cell_written_after_planning_is_not_run_again(tmp_path, tiny_overrides):
    from munet.benchmark.cells import write_json_atomic
    from munet.benchmark.runner import _baseline_job

    settings = make_settings(methods=["linear"], tasks=["digits"], seeds=[0], steps=8,
                             overrides=tiny_overrides)  # fmt: skip
    file = cell_file(tmp_path, "linear", "digits", 0)
    cell = {"method": "linear", "task": "digits", "seed": 0, "quality": 0.5,
            "test_quality": 0.4, "params_added": 10, "flops": 1.0}  # fmt: skip
    write_json_atomic(file, cell)
    assert _baseline_job(settings, str(tmp_path), "linear", "digits", 0, None) == 0
    assert read_cell(file) == cell


def test_an_interrupt_stops_running_cells_instead_of_waiting_for_them():
    import multiprocessing
    import signal
    import time

    from munet.workers import WorkerPool

    # Two cells that would run for two minutes; Ctrl-C arrives at the first progress check.
    workers = []

    def interrupt():
        workers.extend(multiprocessing.active_children())  # the pool's worker processes
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        with WorkerPool(2, threads=1) as pool:
            pool.run([(time.sleep, (120,)), (time.sleep, (120,))], on_tick=interrupt)
    # Its processes were stopped by a signal (SIGTERM, or SIGKILL after it), not left to finish
    # their cells (a worker that did would exit 0 at the pool's shutdown), and are gone.
    assert len(workers) == 2
    assert all(w.exitcode in (-signal.SIGTERM, -signal.SIGKILL) for w in workers), workers
    assert not multiprocessing.active_children()


@pytest.mark.slow
def test_a_vitt3_benchmark_grows_its_system_from_vitt3s_root(tmp_path):
    import torch
    from safetensors.torch import load_file

    from munet.pretrain import builtin_root

    tiny_t3 = ["batch_size=8", "num_train_examples_between_validations_max=16",
               "num_validations_per_path_training=2", "num_validation_examples_max=16",
               "max_task_population_size=2", "hparams_mutation_ranges.num_layers=[1, 2]",
               "num_layers=1", "hparams_mutation_ranges.ds_image_size=[16, 32]",
               "ds_image_size=16"]  # fmt: skip
    settings = make_settings(
        methods=["system", "finetune"], tasks=["digits", "synth/shape"], seeds=[0], steps=8,
        overrides=tiny_t3, preset="VitT3",
    )  # fmt: skip
    out = tmp_path / "out"
    lines = []
    assert run_benchmark(settings, out, echo=lines.append).ran == 4
    assert "Preset VitT3" in (out / "results.md").read_text()
    for task in settings.tasks:
        system = read_cell(cell_file(out, "system", task, 0))
        finetune = read_cell(cell_file(out, "finetune", task, 0))
        # Ti/16 widths (192), not VitCpu's 64: one block and the embeddings are ~0.1M params.
        assert finetune["params_added"] > 100_000
        assert 0 < system["params_added"] <= system["params_total"]
    # Every method started from VitT3's built-in root: the baselines' store holds its weights
    # (stored as component:agent:version/tensor).
    shipped = load_file(builtin_root("VitT3").file)
    stored = {}
    for file in (out / "state" / "root").rglob("components-*.safetensors"):
        for key, tensor in load_file(file).items():
            stored[key.split(":")[0] + "." + key.rsplit("/", 1)[1]] = tensor
    # The tiny config's root keeps one block (and resizes the position embedding to 16 px).
    assert "encoderblock_0.mlp.fc1.weight" in stored and set(stored) <= set(shipped)
    same_shape = [k for k in stored if stored[k].shape == shipped[k].shape]
    assert len(same_shape) >= len(stored) - 1
    assert all(torch.equal(stored[k].float(), shipped[k].float()) for k in same_shape)
