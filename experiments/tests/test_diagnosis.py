"""Tiny runs of the lab's diagnosis scripts (experiments/diagnosis): why munet trailed a small
CNN on the own-data task, and why the system lost on some tasks."""

import json
import re

import pytest

from experiments.tests.scripts import DIAGNOSIS, load_script


def ratios(text):
    return [float(v) for v in re.findall(r"^ratio: ([0-9.]+)", text, flags=re.M)]


@pytest.mark.slow
def test_own_data_levers_quick_scores_every_arm_on_the_same_held_out_images(
    tmp_path, capsys, restore_threads
):
    out = tmp_path / "levers.json"
    load_script(DIAGNOSIS, "own_data_levers").main(
        ["--quick", "--roots", "random_init", "pretrained", "--out", str(out),
         "--arm", "default=", "--arm", "flip=ds_flip_left_right=true"]
    )  # fmt: skip
    text = capsys.readouterr().out
    results = json.loads(out.read_text())["results"]
    assert list(results) == [
        "cnn 48px", "cnn 16px", "vit random_init default", "vit random_init flip",
        "vit pretrained default", "vit pretrained flip",
    ]  # fmt: skip
    assert results["vit pretrained flip"]["overrides"] == ["ds_flip_left_right=true"]
    assert all(0.0 <= r["accuracy"] <= 1.0 for r in results.values())
    # One ratio per arm against the CNN at the images' own size.
    assert len(ratios(text)) == len(results) - 1
    assert "ratio: " in text and "/ cnn 48px, held-out" in text


@pytest.mark.slow
@pytest.mark.parametrize("root", ["random_init", "pretrained"])
def test_diagnosis_runs_its_chains_and_curve(capsys, root):
    tiny = ["batch_size=8", "num_train_examples_between_validations_max=16"]
    tiny += ["num_validation_examples_max=16", "num_layers=1"]
    tiny += ["hparams_mutation_ranges.num_layers=[0, 1, 2]"]
    args = ["--tasks", "synth/shape", "--links", "2", "--link-steps", "4", "--curve", "4"]
    args += ["--root", root]
    for override in tiny:
        args += ["--set", override]
    load_script(DIAGNOSIS, "system_vs_independent_diagnosis").main(args)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 8
    assert lines[0].startswith(f"root {root}")
    if root == "pretrained":  # The built-in root's file, named with its hash.
        assert "VitCpu.safetensors" in lines[0] and "sha256" in lines[0]
    assert re.search(r"2 x 4 restarted, all trainable\s+test 0\.\d{3}, 0\.\d{3}$", lines[2])
    assert "posembed_input+encoderblock_0 frozen" in lines[3]
    assert re.match(r"ratio: synth/shape restarted / one run \(test accuracy\) = \d", lines[5])
    assert re.match(r"ratio: synth/shape frozen / all trainable \(test accuracy\) = \d", lines[6])
    assert re.search(r"plain 4 steps: validation 0\.\d{3} test 0\.\d{3}$", lines[7])
