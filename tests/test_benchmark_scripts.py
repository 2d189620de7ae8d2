"""Tiny CPU runs of the speed benchmarks: they run end to end and print their ratio lines.

(No timing is asserted; the figures come from running the scripts, see docs/speed.md.)
"""

import importlib.util
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load_script(name):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module


@pytest.fixture
def restore_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def ratios(text):
    return [float(v) for v in re.findall(r"^ratio: ([0-9.]+)", text, flags=re.M)]


def test_gpu_train_smoke_on_cpu_with_a_jpeg_folder(tmp_path, capsys, restore_threads):
    rng = np.random.default_rng(0)
    for label in ("a", "b"):
        (tmp_path / "jpegs" / label).mkdir(parents=True)
        for i in range(12):
            pixels = rng.integers(0, 256, size=(24, 24, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(tmp_path / "jpegs" / label / f"{i}.jpg")
    torch.set_num_threads(1)
    load_script("gpu_train").main(
        [
            "--device", "cpu", "--workloads", "tiny=mu/4,1,16,4", "--augment",
            "--rounds", "1", "--steps", "2", "--warmup", "0",
            "--jpeg-folder", str(tmp_path / "jpegs"),
        ]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert "[tiny] agents" in out and "TFLOP/s" in out
    assert "[decode] parallel" in out
    assert len(ratios(out)) == 2 and all(r > 0 for r in ratios(out))


@pytest.mark.slow
def test_train_throughput_and_threads_smoke(capsys, restore_threads):
    small = ["--preset", "VitCpu", "--num-layers", "1", "--image-size", "8", "--batch", "4"]
    small += ["--eval-batch", "8", "--threads", "2", "--rounds", "1", "--steps", "1"]
    load_script("train_throughput").main(
        [*small, "--eval-batches", "1", "--loads", "idle,busy", "--busy-procs", "1"]
    )
    out = capsys.readouterr().out
    assert "[busy] train munet fp32/1thread" in out
    # munet/plain x 2 kinds x 2 precisions x 2 thread settings, bf16/fp32 x 2 kinds,
    # policy/1thread x 2 kinds x 2 precisions; for each of 2 loads.
    assert len(ratios(out)) == 2 * (8 + 2 + 4)
    load_script("train_threads").main([*small, "--eval-batches", "1", "--busy-procs", "1"])
    out = capsys.readouterr().out
    assert len(ratios(out)) == 1 and "train 1thread" in out


def test_es_devices_smoke_on_cpu(monkeypatch, capsys, restore_threads):
    argv = ["es_devices", "--problem", "influence", "--truncation", "2", "--min-particles", "4",
            "--max-particles", "8", "--threads", "1", "--rounds", "1"]  # fmt: skip
    monkeypatch.setattr(sys, "argv", argv)
    load_script("es_devices").main()
    out = capsys.readouterr().out
    # Sharded / one thread at 4 and 8 particles; no GPU here, said so.
    shard_ratios = re.findall(r"^ratio: cpu x2 / cpu 1t at \d+ particles = ([0-9.]+)$", out, re.M)
    assert len(shard_ratios) == 2 and all(float(r) > 0 for r in shard_ratios)
    if not torch.cuda.is_available():
        assert "GPU part not run" in out


def test_search_parallel_smoke_on_nasbench(monkeypatch, capsys):
    argv = ["search_parallel", "--skip-vit", "--repeats", "1", "--budget", "20000"]
    monkeypatch.setattr(sys, "argv", argv)
    load_script("search_parallel").main()
    out = capsys.readouterr().out
    for strategy in ("petridish (loop)", "regularized_evolution", "random"):
        assert strategy in out


def test_patch_embed_smoke(capsys, restore_threads):
    load_script("patch_embed").main(
        ["--preset", "VitCpu", "--num-layers", "1", "--image-size", "8", "--batch", "4",
         "--eval-batch", "8", "--rounds", "1", "--steps", "1", "--eval-batches", "1"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert len(ratios(out)) == 4 and "train bf16 matmul/conv" in out


# Four munet subprocesses, then the CNN for as long again: about 40 s on an idle 2-core machine.
@pytest.mark.slow
def test_own_data_vs_cnn_quick_runs_the_readme_commands_and_scores_held_out(
    tmp_path, capsys, restore_threads
):
    out = tmp_path / "result.json"
    work = tmp_path / "work"
    load_script("own_data_vs_cnn").main(["--quick", "--work", str(work), "--out", str(out)])
    text = capsys.readouterr().out
    assert len(ratios(text)) == 1
    result = json.loads(out.read_text())
    munet, cnn = result["munet"], result["cnn"]
    # 4 held-out images per class, new ones (another seed), scored by `munet predict`.
    assert munet["images"] == cnn["images"] == 20
    assert 0.0 <= munet["accuracy"] <= 1.0 and 0.0 <= cnn["accuracy"] <= 1.0
    # munet's validation accuracy is the exported path's recorded quality, and printed.
    assert munet["validation"] == munet["exported"]["metrics"]["quality"]
    assert f"validation accuracy {munet['validation']:.4f}" in text
    # The choice draw: 3 new images per class, scored by `munet predict` like the held-out ones.
    assert munet["choice_images"] == 15 and 0.0 <= munet["choice"] <= 1.0
    assert f"choice-draw accuracy {munet['choice']:.4f} (15 images)" in text
    for folder in ("held_out", "choice"):
        assert sorted(p.name for p in (work / folder).iterdir()) == sorted(
            p.name for p in (work / "train").iterdir()
        )
    # Three draws, three seeds: their first images differ.
    first = {
        f: (work / f / "circle" / "0000.png").read_bytes() for f in ("train", "held_out", "choice")
    }
    assert len(set(first.values())) == 3
    assert (work / "export" / "model.safetensors").is_file()
    # The CNN is the ~56k-parameter one and trains at least as long as munet took.
    assert 50_000 < cnn["params"] < 60_000 and cnn["steps"] > 0
    assert cnn["seconds"] >= munet["seconds"]
    assert result["ratio"] == pytest.approx(munet["accuracy"] / cnn["accuracy"])


# The same subprocesses on VitT3 at the benchmark's CPU path shape: about 30 s.
@pytest.mark.slow
def test_own_data_vs_cnn_runs_vitt3_from_its_root_at_the_cpu_path_shape(
    tmp_path, capsys, restore_threads
):
    out = tmp_path / "result.json"
    script = load_script("own_data_vs_cnn")
    script.main(["--quick", "--agent", "VitT3", "--root", "pretrained", "--out", str(out)])
    text = capsys.readouterr().out
    assert "VitT3.safetensors" in text and "--set batch_size=32" in text
    munet = json.loads(out.read_text())["munet"]
    assert munet["agent"] == "VitT3" and munet["images"] == 20
    provenance = munet["exported"]["provenance"]
    assert provenance["agent_id"] == "VitT3~shapes"
    assert provenance["parent"].startswith("VitT3~root_model~checkpoint")


# Two arms of root, run, export and predict subprocesses: about 30 s on an idle 2-core machine.
@pytest.mark.slow
def test_own_data_split_rule_quick_reports_validation_held_out_and_the_gap(
    tmp_path, capsys, restore_threads
):
    out = tmp_path / "split.json"
    load_script("own_data_split_rule").main(
        ["--quick", "--root", "random_init", "--work", str(tmp_path / "work"), "--out", str(out)]
    )
    text = capsys.readouterr().out
    result = json.loads(out.read_text())
    assert [r["arm"] for r in result["runs"]] == ["seed-rule", "own-data"]
    for run in result["runs"]:
        assert 0.0 <= run["validation"] <= 1.0 and 0.0 <= run["held_out"] <= 1.0
        assert run["gap"] == pytest.approx(run["validation"] - run["held_out"])
    assert set(result["summary"]) == {"seed-rule", "own-data"}
    assert len(ratios(text)) == 1 and "own-data / seed-rule" in text
