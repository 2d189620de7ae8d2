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
    assert (binding.data, binding.split_rule) == (f"npz:{npz}", "default")
    assert binding.state == "VitCpu~pairs/state_1_0"
    # A config without data (another agent class, another machine) adopts the recorded one.
    config = bind_task_data(tiny_config, "pairs", store)
    assert (config.data, config.data_split) == (f"npz:{npz}", "default")
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
