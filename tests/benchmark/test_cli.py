"""`munet benchmark`'s refusals: one `munet: error:` line, exit 2, before any work."""

import json
import re

import pytest

from munet.benchmark.cells import SETTINGS_FILE
from munet.cli import main


def _without_start_line(err: str) -> str:
    """stderr less ``munet benchmark: started ...`` (munet.cli.status_lines), which comes
    before the command's own work: a refusal is then the one line left."""
    return re.sub(r"^munet benchmark: started[^\n]*\n", "", err)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--methods", "system,lora"], "unknown method 'lora'"),
        (["--tasks", "digits,synth/shap"], "unknown task 'synth/shap' (did you mean 'synth/shape'"),
        (["--seeds", "0,x"], "--seeds '0,x': expected comma-separated non-negative integers"),
        (["--seeds", "1,1"], "expected distinct non-negative integers"),
        (["--seeds", "-1"], "expected distinct non-negative integers"),
        (["--steps", "0"], "--steps 0: expected a positive number"),
        (["--workers", "0"], "--workers 0: expected at least 1"),
        (["--set", "no_such_key=1"], "no_such_key"),
        (["--adapter-bottleneck", "0"], "adapter bottleneck 0: expected a positive width"),
        (["--system-budget", "0"], "--system-budget 0: expected a whole number of task budgets"),
        (["--agent", "VitT"], "--agent 'VitT' (did you mean 'VitT3'"),
        (["--agent", "VitT3", "--set", "no_such_key=1"], "no_such_key"),
    ],
)
def test_bad_requests_end_in_one_error_line(tmp_path, capsys, args, message):
    out = tmp_path / "out"
    assert main(["benchmark", "--out", str(out), *args]) == 2
    err = _without_start_line(capsys.readouterr().err).strip()
    assert err.startswith("munet: error: ") and "\n" not in err
    assert message in err
    assert not out.exists()  # refused before any work


def test_an_out_folder_of_another_configuration_is_refused_naming_the_mismatch(tmp_path, capsys):
    from munet.benchmark import make_settings

    out = tmp_path / "out"
    out.mkdir()
    stored = make_settings(methods=["linear"], tasks=["digits"], seeds=[0], steps=64)
    (out / SETTINGS_FILE).write_text(json.dumps(stored.to_dict()))
    code = main(["benchmark", "--out", str(out), "--methods", "linear", "--tasks", "digits",
                 "--seeds", "0", "--steps", "128"])  # fmt: skip
    assert code == 2
    err = _without_start_line(capsys.readouterr().err).strip()
    assert err.startswith("munet: error: --out ") and "\n" not in err
    assert "another configuration (steps 64 there, 128 now)" in err
    assert sorted(p.name for p in out.iterdir()) == [SETTINGS_FILE]


def test_help_lists_the_command(capsys):
    with pytest.raises(SystemExit):
        main(["benchmark", "--help"])
    assert "--workers" in capsys.readouterr().out


def test_a_root_that_is_not_a_file_is_refused(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["benchmark", "--out", str(out), "--root", str(tmp_path / "nope.safetensors")]) == 2
    err = _without_start_line(capsys.readouterr().err).strip()
    assert "--root '" in err and "nope.safetensors': no such file" in err and "\n" not in err
    assert not out.exists()
