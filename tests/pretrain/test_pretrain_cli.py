import json

from munet.cli import main

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
    assert "pretrained VitCpu (fractal): 2 steps" in capsys.readouterr().out
    # Rerun of the same command: already done, same root.
    assert main(["pretrain", "--agent", "VitCpu", "--steps", "2", "--out", out, *TINY]) == 0
    assert json.loads((tmp_path / "run" / "card.json").read_text())["sha256"] == card["sha256"]
    # Another budget on the same work dir: state exists (4).
    assert main(["pretrain", "--agent", "VitCpu", "--steps", "3", "--out", out, *TINY]) == 4


def test_pretrain_bad_input_is_exit_2(tmp_path, capsys):
    out = str(tmp_path / "x")
    assert main(["pretrain", "--agent", "MultiVitCpu", "--steps", "1", "--out", out]) == 2
    assert main(["pretrain", "--agent", "Nope", "--steps", "1", "--out", out]) == 2
    assert main(["pretrain", "--agent", "VitCpu", "--steps", "1", "--out", out,
                 "--recipe", "nope"]) == 2  # fmt: skip
    assert "'nope'" in capsys.readouterr().err


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
