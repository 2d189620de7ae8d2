"""A run refused for its settings writes nothing (no agent folder, no `.lock`), and its message
names the values that were set: here a mutation range that does not hold the root model's
num_layers (the seed steps along the range, so the run would stop at its first such mutation,
after taking its lock and committing states)."""

from __future__ import annotations

from munet.cli import main


def test_a_range_without_the_roots_value_is_refused_before_the_lock(tmp_path, capsys):
    state = str(tmp_path / "state")
    assert main(["root", "--agent", "VitCpu", "--state-dir", state, "--root", "random_init"]) == 0
    capsys.readouterr()
    code = main(["run", "--agent", "VitCpu", "--task", "digits", "--cycles", "1", "-d", state,
                 "--set", "num_layers=0", "--set", "hparams_mutation_ranges.num_layers=[0]"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "hparams_mutation_ranges.num_layers=[0]" in err and "num_layers=0" in err, err
    assert "num_layers=4 of path VitCpu~root_model~random_init:0" in err, err
    assert not (tmp_path / "state" / "VitCpu~digits").exists()  # no folder, no .lock
