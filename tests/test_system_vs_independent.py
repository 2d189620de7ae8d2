"""benchmarks/system_vs_independent.py: the table, the ratios and the plot from per-seed
results (fast), and a --quick run end to end (slow)."""

import json
import re
import sys
import types

import pytest

from tests.test_benchmark_scripts import load_script

SETTINGS = {"tasks": ["a", "b"], "budget_steps_per_task": {"a": 96, "b": 96}}


def result(seed, system, independent, search, system_params=150, root=100):
    def method(accuracies, params_added, total, model="singlepath"):
        tasks = {
            task: {"test_quality": acc, "params_added": added, "model": model}
            for task, acc, added in zip(("a", "b"), accuracies, params_added, strict=True)
        }
        return {"tasks": tasks, "total_params": total, "wall_s": 10.0 + seed}

    return {
        "seed": seed,
        "settings": SETTINGS,
        "methods": {
            "system": {**method(system, (20, 30), system_params), "root_params_held": root},
            "independent": method(independent, (100, 100), 200),
            "random_search": method(search, (50, 150), 200),
        },
    }


@pytest.fixture(scope="module")
def report():
    return load_script("system_vs_independent_report")


def test_ratios_are_the_issues_definitions(report):
    results = [
        result(0, (0.8, 0.6), (0.9, 0.7), (0.5, 0.5)),
        result(1, (0.6, 0.6), (0.9, 0.9), (1.0, 1.0), system_params=50),
    ]
    quality, params = report.ratios(results)
    # System mean 0.65; baselines: independent 0.85, random search 0.75 -> the best is 0.85.
    assert quality == pytest.approx(0.65 / 0.85)
    assert params == pytest.approx(100 / 200)  # Mean system total 100 over 200.


def test_the_table_has_a_row_per_task_and_the_totals(report):
    results = [
        result(0, (0.8, 0.6), (0.9, 0.7), (0.5, 0.5)),
        result(1, (0.6, 0.6), (0.9, 0.9), (1, 1)),
    ]
    table = report.format_table(results)
    assert "budget: 96 train steps per task and method; seeds 0, 1" in table
    row_a = next(line for line in table.splitlines() if line.startswith("a "))
    assert row_a.split() == [
        "a",
        "0.700±0.141",
        "(20)",
        "0.900±0.000",
        "(100)",
        "0.750±0.354",
        "(50)",
    ]
    assert re.search(r"^total params\s+150\s+200\s+200", table, flags=re.M)
    assert "root components held (shared, counted once): 100 params" in table


def test_results_of_other_settings_or_a_seed_twice_do_not_combine(report):
    other = result(1, (0.6, 0.6), (0.9, 0.9), (1, 1))
    other["settings"] = {**SETTINGS, "budget_steps_per_task": {"a": 48, "b": 48}}
    with pytest.raises(SystemExit, match="seed 1 ran with other settings than seed 0"):
        report.check_compatible([result(0, (1, 1), (1, 1), (1, 1)), other])
    with pytest.raises(SystemExit, match=r"a seed appears twice in the results: \[0, 0\]"):
        report.check_compatible([result(0, (1, 1), (1, 1), (1, 1))] * 2)


def test_the_plot_is_written(report, tmp_path):
    results = [result(0, (0.8, 0.6), (0.9, 0.7), (0.5, 0.5))]
    report.write_plot(results, str(tmp_path / "img" / "plot.png"))
    assert (tmp_path / "img" / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_quick_run_end_to_end_then_combined(tmp_path, capsys):
    script = load_script("system_vs_independent")
    out = tmp_path / "out"
    script.main(["--quick", "--out", str(out), "--plot", str(tmp_path / "plot.png")])
    text = capsys.readouterr().out
    assert re.search(r"^budget: 16 train steps per task and method", text, flags=re.M)
    quality = re.findall(r"^quality ratio: ([0-9.]+)$", text, flags=re.M)
    params = re.findall(r"^params ratio: ([0-9.]+)$", text, flags=re.M)
    assert len(quality) == 1 and len(params) == 1
    assert float(quality[0]) > 0 and float(params[0]) > 0
    assert (tmp_path / "plot.png").stat().st_size > 0
    # Multipath against the best singlepath path of the same system, paired.
    assert re.search(r"^ratio: [0-9.]+ \(multipath / best singlepath path", text, flags=re.M)
    saved = json.loads((out / "seed_0.json").read_text())
    for method in ("system", "independent", "linear_probe", "random_search"):
        tasks = saved["methods"][method]["tasks"]
        assert list(tasks) == ["digits", "synth/shape"]
        assert all(0.0 <= t["test_quality"] <= 1.0 for t in tasks.values())
        assert all(t["steps"] == 16 for t in tasks.values()), method  # The same budget.
    # Combining the saved result prints the same figures.
    script.main(["--combine", str(out / "seed_0.json"), "--plot", str(tmp_path / "again.png")])
    again = capsys.readouterr().out
    assert f"quality ratio: {quality[0]}" in again and f"params ratio: {params[0]}" in again


def test_multipath_against_singlepath_is_paired_over_seeds(report):
    results = [result(0, (0.8, 0.6), (0.9, 0.7), (0.5, 0.5)), result(1, (1, 1), (1, 1), (1, 1))]
    assert report.multipath_vs_singlepath(results) == ([], None)  # No multipath stage.
    pairs = {0: {"a": (0.9, 0.8), "b": (0.5, 0.6)}, 1: {"a": (0.7, 0.8), "b": (0.7, 0.6)}}
    for r in results:
        for task, (multi, single) in pairs[r["seed"]].items():
            info = r["methods"]["system"]["tasks"][task]
            info["multipath_test_quality"], info["singlepath_test_quality"] = multi, single
    lines, ratio = report.multipath_vs_singlepath(results)
    assert ratio == pytest.approx((0.9 + 0.5 + 0.7 + 0.7) / (0.8 + 0.6 + 0.8 + 0.6))
    row_a = next(line for line in lines if line.strip().startswith("a "))
    assert "multipath 0.800 singlepath 0.800 (difference +0.000; multipath better in 1/2)" in row_a


def test_a_linear_probe_arm_is_a_baseline_when_present(report):
    results = [result(0, (0.8, 0.6), (0.7, 0.7), (0.5, 0.5))]
    probe = {"tasks": {t: {"test_quality": 0.9, "params_added": 5} for t in ("a", "b")},
             "total_params": 110, "wall_s": 1.0}  # fmt: skip
    results[0]["methods"]["linear_probe"] = probe
    quality, _ = report.ratios(results)
    assert quality == pytest.approx(0.7 / 0.9)
    header = report.format_table(results).splitlines()[2].split()
    assert header == ["task", "system", "independent", "linear_probe", "random_search"]


def test_root_source_resolves_names_and_files(tmp_path, monkeypatch):
    roots = load_script("root_source")
    assert roots.resolve_root("random_init", "VitCpu").kind == "random_init"
    file = tmp_path / "root.safetensors"
    file.write_bytes(b"x")
    resolved = roots.resolve_root(str(file), "VitCpu")
    assert (resolved.kind, resolved.checkpoint) == ("checkpoint", str(file))
    assert resolved.cli_args == ["--root", "checkpoint", "--set", f"checkpoint_path={file}"]
    with pytest.raises(SystemExit, match="expected random_init, pretrained or an existing"):
        roots.resolve_root(str(tmp_path / "missing.safetensors"), "VitCpu")
    # `pretrained`: the preset's built-in root, or a clear error where there is none.
    monkeypatch.setitem(sys.modules, "munet.pretrain.roots", None)  # Import fails.
    with pytest.raises(SystemExit, match="no built-in pretrained roots"):
        roots.resolve_root("pretrained", "VitCpu")
    fake = types.SimpleNamespace(builtin_root=lambda preset: None, verify_root=lambda root: None)
    monkeypatch.setitem(sys.modules, "munet.pretrain.roots", fake)
    with pytest.raises(SystemExit, match="munet ships no pretrained root for VitCpu"):
        roots.resolve_root("pretrained", "VitCpu")
    fake.builtin_root = lambda preset: types.SimpleNamespace(file=file)
    assert roots.resolve_root("pretrained", "VitCpu").checkpoint == str(file)


@pytest.mark.slow
def test_transfer_steps_quick_prints_a_ratio_per_budget(tmp_path, capsys):
    import torch

    from munet.config import get_preset
    from munet.models import VitArch, init_components
    from munet.models.checkpoints import save_safetensors

    arch = VitArch.from_size(get_preset("VitCpu").model, num_layers=1, num_classes=0)
    checkpoint = tmp_path / "other.safetensors"
    save_safetensors(checkpoint, init_components(arch, 8, torch.Generator().manual_seed(3)))
    script = load_script("transfer_steps")
    out = tmp_path / "out"
    script.main(["--quick", "--roots", "random_init", str(checkpoint), "--out", str(out)])
    text = capsys.readouterr().out
    lines = re.findall(r"^ratio: [0-9.]+ \((\d+) steps: other / random_init", text, flags=re.M)
    assert lines == ["4", "8"]
    script.main(["--combine", str(out / "random_init.json"), str(out / "other.json")])
    assert re.findall(r"^ratio: .*$", capsys.readouterr().out, flags=re.M) == re.findall(
        r"^ratio: .*$", text, flags=re.M
    )
