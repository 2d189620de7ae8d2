"""An agent warns before it selects on a validation split under 200 examples."""

import warnings

import numpy as np
import pytest

from munet.agents.runner import make_agent
from munet.config import apply_overrides


def _npz(path, per_class):
    rng = np.random.default_rng(0)
    n = 4 * per_class
    np.savez(path, x=rng.integers(0, 256, (n, 8, 8), dtype=np.uint8), y=np.arange(n) % 4)
    return path


def test_an_agent_warns_on_a_small_validation_split(state_dir, tiny_config, tmp_path):
    small = apply_overrides(tiny_config, [f"data=npz:{_npz(tmp_path / 's.npz', 30)}"])
    with pytest.warns(UserWarning, match=r"task 'mine': its validation split has 24 examples"):
        make_agent(small, "mine", state_dir, progress=False, quiet=True)
    # 2,000 images: the own-data rule carves 200, and nothing is said.
    large = apply_overrides(tiny_config, [f"data=npz:{_npz(tmp_path / 'l.npz', 500)}"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        agent = make_agent(large, "large", state_dir, progress=False, quiet=True)
    assert agent.task.source.num_examples("validation") == 200
