import dataclasses
import json

import pytest

from munet.cli import main
from munet.cli.pretrain import SPEC_OPTIONS
from munet.pretrain.spec import PretrainSpec

TINY = ["--classes", "3", "--batch-size", "4", "--image-size", "8", "--no-progress",
        "--eval-examples", "8", "--threads", "1"]  # fmt: skip


def test_pretrain_writes_a_root_and_card_and_resumes(tmp_path, capsys):
    out = str(tmp_path / "run")
    assert main(["pretrain", "--agent", "VitCpu", "--steps", "2", "--out", out, *TINY]) == 0
    card = json.loads((tmp_path / "run" / "card.json").read_text())
    assert card["steps"] == 2 and card["recipe"]["image_size"] == 8
    assert card["command"] == (
        f"munet pretrain --agent VitCpu --steps 2 --out {out} --classes 3 --batch-size 4 "
        "--image-size 8"
    )
    assert "pretrained VitCpu (fractal, 3 classes): 2/2 steps" in capsys.readouterr().out
    # Rerun of the same command: already done, same root.
    assert main(["pretrain", "--agent", "VitCpu", "--steps", "2", "--out", out, *TINY]) == 0
    assert json.loads((tmp_path / "run" / "card.json").read_text())["sha256"] == card["sha256"]
    # Another budget on the same work dir: state exists (4).
    assert main(["pretrain", "--agent", "VitCpu", "--steps", "3", "--out", out, *TINY]) == 4


def test_every_spec_field_the_preset_does_not_set_is_an_option_with_the_specs_default(
    tmp_path,
):
    from_preset = {"preset", "model", "num_layers", "image_size"}
    fields = {f.name for f in dataclasses.fields(PretrainSpec)} - from_preset
    assert sorted(field for _, field, _ in SPEC_OPTIONS) == sorted(fields)
    # Given no option, a run's spec is the spec's defaults (and the command names none).
    out = str(tmp_path / "run")
    assert main(["pretrain", "--agent", "VitCpu", "--steps", "1", "--out", out, "--no-progress",
                 "--image-size", "8", "--eval-examples", "8", "--threads", "1"]) == 0  # fmt: skip
    card = json.loads((tmp_path / "run" / "card.json").read_text())
    defaults = PretrainSpec(preset="VitCpu", model="mu/4", num_layers=4, image_size=8)
    assert card["recipe"] == dataclasses.asdict(defaults)
    assert card["command"] == f"munet pretrain --agent VitCpu --steps 1 --out {out} --image-size 8"


@pytest.mark.parametrize(
    "flag, field, good, bad, error",
    [
        ("--instances", "instances", "3", "0", "instances 0"),
        ("--thumbnail", "thumbnail", "2", "9", "thumbnail 9"),  # 9: larger than the 8 px image
        ("--label-smoothing", "label_smoothing", "0.0", "1.5", "label_smoothing 1.5"),
        ("--weight-decay", "weight_decay", "0.1", "-1", "weight_decay -1.0"),
        ("--warmup-ratio", "warmup_ratio", "0.2", "1.5", "warmup_ratio 1.5"),
    ],
)
def test_a_weight_deciding_option_reaches_the_card_and_its_command(
    tmp_path, capsys, flag, field, good, bad, error
):
    out = str(tmp_path / "run")
    args = ["pretrain", "--agent", "VitCpu", "--steps", "1", "--out", out, flag]
    assert main([*args, good, *TINY]) == 0
    card = json.loads((tmp_path / "run" / "card.json").read_text())
    assert card["recipe"][field] == type(card["recipe"][field])(good)
    assert f"{flag} {good}" in card["command"]
    assert main([*args, bad, *TINY]) == 2
    assert error in capsys.readouterr().err


def test_the_removed_options_are_gone(tmp_path, capsys):
    # Tried once each and shipped in no root (experiments/pretrain_log.md): not options now.
    args = ["pretrain", "--agent", "VitCpu", "--steps", "1", "--out", str(tmp_path / "run")]
    for option in ("--hog", "--contrastive", "--view-jitter", "--pre-logits",
                   "--head-decay-mult", "--multi-label"):  # fmt: skip
        with pytest.raises(SystemExit) as exit_info:
            main([*args, option, "2"])
        assert exit_info.value.code == 2
        assert f"unrecognized arguments: {option}" in capsys.readouterr().err


def test_pretrain_bad_input_is_exit_2(tmp_path, capsys):
    out = str(tmp_path / "x")
    assert main(["pretrain", "--agent", "MultiVitCpu", "--steps", "1", "--out", out]) == 2
    assert main(["pretrain", "--agent", "Nope", "--steps", "1", "--out", out]) == 2
    assert main(["pretrain", "--agent", "VitCpu", "--steps", "1", "--out", out,
                 "--recipe", "nope"]) == 2  # fmt: skip
    assert "'nope'" in capsys.readouterr().err
    # A recipe munet pretrain once had (an old card's command): refused, saying so.
    assert main(["pretrain", "--agent", "VitCpu", "--steps", "1", "--out", out,
                 "--recipe", "fractal_ex+contours_ex+noise"]) == 2  # fmt: skip
    assert "'+' mixes were removed" in capsys.readouterr().err


def test_checkpoint_list_shows_the_builtin_roots(capsys):
    assert main(["checkpoint", "list"]) == 0
    out = capsys.readouterr().out
    assert "built-in pretrained roots" in out
    for name in ("VitCpu", "VitT3"):
        assert any(line.startswith(f"root {name} ") and "source:" in line
                   for line in out.splitlines())  # fmt: skip


def test_root_defaults_to_the_pretrained_root_and_random_init_stays(tmp_path, capsys):
    state = str(tmp_path / "state")
    assert main(["root", "--agent", "VitCpu", "-d", state]) == 0
    assert "VitCpu~root_model~pretrained" in capsys.readouterr().out
    assert main(["root", "--agent", "VitCpu", "-d", state, "--root", "random_init"]) == 0
    assert "VitCpu~root_model~random_init" in capsys.readouterr().out


def test_a_second_process_on_the_same_out_exits_3(tmp_path, capsys):
    import subprocess
    import sys

    out = tmp_path / "run"
    out.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from pathlib import Path\n"
         "from munet.pretrain.workdir import WorkDirLock\n"
         f"with WorkDirLock(Path({str(out)!r})):\n"
         "    print('locked', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "locked"
        code = main(["pretrain", "--agent", "VitCpu", "--steps", "1", "--out", str(out), *TINY])
        assert code == 3
        err = capsys.readouterr().err
        assert "another process" in err and "use another --out" in err
        assert str(holder.pid) in err and not (out / "state.json").exists()
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    # Once the holder is gone (its lock died with it) the same command runs.
    assert main(["pretrain", "--agent", "VitCpu", "--steps", "1", "--out", str(out), *TINY]) == 0


def test_a_short_run_checkpoints_within_itself_and_a_rerun_says_it_starts_over(
    tmp_path, capsys, caplog
):
    import logging

    caplog.set_level(logging.INFO, logger="munet.pretrain")
    out = tmp_path / "run"
    out.mkdir()  # as a run killed before its first checkpoint leaves it
    assert main(["pretrain", "--agent", "VitCpu", "--steps", "20", "--out", str(out),
                 "--checkpoint-every", "100", *TINY]) == 0  # fmt: skip
    assert "starting over at step 0" in caplog.text
    assert "checkpointing every 2 steps" in caplog.text
    card = json.loads((out / "card.json").read_text())
    assert [h["step"] for h in card["history"]] == list(range(2, 21, 2))
    caplog.clear()
    assert main(["pretrain", "--agent", "VitCpu", "--steps", "1", "--out", str(tmp_path / "new"),
                 *TINY]) == 0  # fmt: skip
    assert "new pretraining run" in caplog.text and "starting over" not in caplog.text


def test_the_card_records_recipe_device_precision_and_empty_figures(tmp_path, capsys):
    out = tmp_path / "run"
    args = [
        "pretrain",
        "--agent",
        "VitCpu",
        "--steps",
        "2",
        "--out",
        str(out),
        "--recipe",
        "fractal",
        "--device",
        "cpu",
        "--precision",
        "fp32",
        "--render",
        "process",
        *TINY,
    ]
    args[args.index("--classes") + 1] = "7"
    assert main(args) == 0  # fmt: skip
    card = json.loads((out / "card.json").read_text())
    assert card["recipes"] == [{"recipe": "fractal", "classes": 7}]
    assert card["device"] == "cpu" and card["precision"] == "fp32"
    assert card["render"] == "process"
    assert card["validation"] == {} and card["test"] == {}
    assert "--recipe" not in card["command"]  # the default
    assert "--precision fp32" in card["command"]
    assert "7 classes" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_info:
        main([*args[:5], str(out / "bad"), "--render", "gpu"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'gpu'" in capsys.readouterr().err


def test_device_cuda_without_a_gpu_is_bad_input_not_a_crash(tmp_path, capsys, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    out = str(tmp_path / "run")
    assert main(["pretrain", "--agent", "VitCpu", "--steps", "1", "--out", out, "--device",
                 "cuda", *TINY]) == 2  # fmt: skip
    assert "sees no CUDA device" in capsys.readouterr().err


def test_auto_precision_is_bf16_on_a_gpu_and_the_presets_on_a_cpu(monkeypatch):
    from munet.cli import pretrain as cli
    from munet.training import precision

    monkeypatch.setattr(precision, "native_bf16", lambda device: str(device).startswith("cuda"))
    assert cli._precision("auto", "fp32", "cuda") == "bf16"
    assert cli._precision("auto", "fp32", "cpu") == "fp32"
    assert cli._precision("fp32", "auto", "cuda") == "fp32"
