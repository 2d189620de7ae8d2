"""Task data bindings read from a state dir's stored configs."""

import dataclasses

import numpy as np
import pytest

from munet.agents.task_data import bind_task_data, task_bindings, task_source_label
from munet.cli import main
from munet.config import ConfigError
from munet.system import SystemStore

from .conftest import TINY_OVERRIDES

SETS = [arg for item in TINY_OVERRIDES for arg in ("--set", item)]


@pytest.fixture
def bound_state(tmp_path, tiny_config):
    npz = tmp_path / "data.npz"
    rng = np.random.default_rng(0)
    np.savez(npz, x=rng.integers(0, 256, (80, 8, 8), dtype=np.uint8), y=np.arange(80) % 2)
    state = tmp_path / "state"
    assert main(["root", "--agent", "VitCpu", "-d", str(state), *SETS, "-q"]) == 0
    assert main(["run", "--agent", "VitCpu", "--task", "pairs", "--data", f"npz:{npz}",
                 "--cycles", "1", "-d", str(state), *SETS, "-q"]) == 0  # fmt: skip
    return SystemStore(state), npz


def test_bindings_are_found_for_other_readers(bound_state, tiny_config):
    store, npz = bound_state
    (binding,) = task_bindings(store, "pairs")
    # Your own data gets munet's own-data split rule when no split is asked for.
    assert (binding.data, binding.split_rule) == (f"npz:{npz}", "own-data")
    assert binding.state == "VitCpu~pairs/state_1_0"
    # A config without data (another agent class, another machine) adopts the recorded one.
    config = bind_task_data(tiny_config, "pairs", store)
    assert (config.data, config.data_split) == (f"npz:{npz}", "own-data")
    # Tasks nobody bound keep no data.
    assert bind_task_data(tiny_config, "digits", store).data == ""


def test_a_different_source_is_refused_however_it_is_given(bound_state, tiny_config, tmp_path):
    store, npz = bound_state
    with pytest.raises(ConfigError, match=f"already reads npz:{npz}.*npz:{tmp_path}/other.npz"):
        bind_task_data(tiny_config, "pairs", store, data=f"npz:{tmp_path}/other.npz")
    via_set = dataclasses.replace(tiny_config, data=f"npz:{tmp_path}/other.npz")
    with pytest.raises(ConfigError, match="already reads"):
        bind_task_data(via_set, "pairs", store)
    # The same file, spelled relatively, is the same source.
    same = bind_task_data(tiny_config, "pairs", store, data=f"npz:{npz.parent}/./{npz.name}")
    assert same.data == f"npz:{npz}"


def test_source_labels():
    assert task_source_label("digits") == "embedded"
    assert task_source_label("synth/shape") == "embedded"
    assert task_source_label("cifar100") == "tfds"
    assert task_source_label("root_model/random_init") == "-"
    assert task_source_label("flowers", "folder:/x") == "folder:/x"


def test_a_split_is_stored_with_the_binding_reused_and_a_different_one_refused(
    tmp_path, tiny_config, capsys
):
    from munet.tasks import get_task

    npz = tmp_path / "data.npz"
    rng = np.random.default_rng(0)
    np.savez(npz, x=rng.integers(0, 256, (80, 8, 8), dtype=np.uint8), y=np.arange(80) % 2)
    state = tmp_path / "state"
    assert main(["root", "--agent", "VitCpu", "-d", str(state), *SETS, "-q"]) == 0
    assert main(["run", "--agent", "VitCpu", "--task", "pairs", "--data", f"npz:{npz}",
                 "--val-split", "0.25", "--test-split", "8", "--cycles", "1", "-d", str(state),
                 *SETS, "-q"]) == 0  # fmt: skip
    store = SystemStore(state)
    (binding,) = task_bindings(store, "pairs")
    assert binding.split_rule == "validation=0.25,test=8"
    # Another agent class or a rerun without flags adopts the recorded split.
    config = bind_task_data(tiny_config, "pairs", store)
    assert config.data_split == "validation=0.25,test=8"
    task = get_task("pairs", data=config.data, split_rule=config.data_split, batch_size=8)
    assert (task.num_train_examples, task.num_test_examples) == (52, 8)
    assert task.sizing.num_validation_examples_total == 20
    capsys.readouterr()
    assert main(["tasks", "show", "pairs", "-d", str(state)]) == 0
    shown = capsys.readouterr().out
    assert "split rule validation=0.25,test=8" in shown
    assert "stratified split of the train pool: test 8, validation 0.25" in shown
    # Sized as the agent on the task is (2 validation batches of 8: 16 of the 20 used).
    assert "train 52, validation 20 (used 16), test 8" in shown
    # The same split asked again is fine; a different one is refused, showing both.
    same = bind_task_data(tiny_config, "pairs", store, split="test=8,validation=0.25")
    assert same.data_split == "validation=0.25,test=8"
    capsys.readouterr()
    assert main(["run", "--agent", "VitCpu", "--task", "pairs", "--val-split", "0.3",
                 "--cycles", "1", "-d", str(state), *SETS, "-q"]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert "split rule validation=0.25,test=8" in err and "asked for is validation=0.3" in err
    # A bad size is one line naming the flag, exit 2.
    assert main(["run", "--agent", "VitCpu", "--task", "pairs", "--test-split", "1.5",
                 "--cycles", "1", "-d", str(state), *SETS, "-q"]) == 2  # fmt: skip
    assert "--test-split 1.5: a fraction must be in (0, 1)" in capsys.readouterr().err


def test_a_split_of_munets_own_task_binds_the_task_to_itself(tmp_path, tiny_config):
    store = SystemStore(tmp_path / "state")
    config = bind_task_data(tiny_config, "digits", store, split="validation=0.1")
    assert (config.data, config.data_split) == ("digits", "validation=0.1")
    with pytest.raises(ConfigError, match="split rule .* for task 'flowers' needs its data"):
        bind_task_data(tiny_config, "flowers", store, split="validation=0.1")


# 80 examples leave a tiny validation split: its warning is expected here.
@pytest.mark.filterwarnings("ignore:task 'pairs'")
def test_the_python_api_takes_a_split_rule_in_the_config(tmp_path, tiny_config):
    import munet
    from munet.agents.runner import make_agent

    npz = tmp_path / "data.npz"
    rng = np.random.default_rng(0)
    np.savez(npz, x=rng.integers(0, 256, (80, 8, 8), dtype=np.uint8), y=np.arange(80) % 2)
    config = munet.apply_overrides(
        tiny_config, [f"data=npz:{npz}", f"data_split={munet.split_rule(test=0.1)}"]
    )
    agent = make_agent(config, "pairs", tmp_path / "state")
    assert agent.task.num_test_examples == 8  # ceil(0.1 * 80), stratified
    assert agent.task.source.labels("test").tolist().count(0) == 4
    with pytest.raises(ConfigError, match="data_split='test=80.5'"):
        munet.apply_overrides(tiny_config, ["data_split=test=80.5"])


def test_a_state_grown_on_the_seeds_rule_keeps_it(bound_state, tiny_config):
    store, npz = bound_state
    # A state recorded before own-data was the default holds "default": it stays.
    assert main(["run", "--agent", "VitCpu", "--task", "old", "--data", f"npz:{npz}",
                 "--set", "data_split=default", "--cycles", "1", "-d", str(store.root), *SETS,
                 "-q"]) == 0  # fmt: skip
    config = bind_task_data(tiny_config, "old", store)
    assert (config.data, config.data_split) == (f"npz:{npz}", "default")
    with pytest.raises(ConfigError, match="already reads .*split rule default.*own-data"):
        bind_task_data(tiny_config, "old", store, split="own-data")
