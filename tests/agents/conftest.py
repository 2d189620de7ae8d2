import shutil

import pytest

from munet.agents.root import create_root_model
from munet.config import apply_overrides, get_preset

# A VitCpu preset shrunk to a few steps of a 1-2 block ViT on 8-16 px images.
TINY_OVERRIDES = [
    "batch_size=8",
    "num_train_examples_between_validations_max=16",
    "num_validations_per_path_training=2",
    "num_validation_examples_max=16",
    "num_samples_per_cycle=2",
    "max_task_population_size=2",
    "hparams_mutation_ranges.num_layers=[0, 1, 2]",
    "num_layers=1",
    "hparams_mutation_ranges.ds_image_size=[8, 16]",
    "ds_image_size=8",
]


@pytest.fixture
def tiny_config():
    return apply_overrides(get_preset("VitCpu"), TINY_OVERRIDES)


@pytest.fixture
def state_dir(tmp_path, tiny_config):
    """A state dir holding a random-init root model of the tiny config."""
    create_root_model(tiny_config, tmp_path / "state", "random_init")
    return tmp_path / "state"


# The multipath agent tests (test_multipath_*.py) -------------------------------------------
@pytest.fixture(scope="session")
def multipath_system(tmp_path_factory):
    """A system of a random-init root and two singlepath agents (digits at 8 px, synth/color
    at 16 px), one cycle each; built once, copied by `state`."""
    from munet.agents.runner import make_agent
    from tests.agents.multipath_helpers import quiet

    directory = tmp_path_factory.mktemp("grown") / "state"
    sp = apply_overrides(get_preset("VitCpu"), TINY_OVERRIDES)
    create_root_model(sp, directory, "random_init")
    make_agent(sp, "digits", directory, progress=False, echo=quiet).run(1)
    color = apply_overrides(sp, ["ds_image_size=16"])
    make_agent(color, "synth/color", directory, progress=False, echo=quiet).run(1)
    return directory


@pytest.fixture
def state(multipath_system, tmp_path):
    """A copy of `multipath_system` this test may change."""
    copy = tmp_path / "state"
    shutil.copytree(multipath_system, copy)
    return copy


@pytest.fixture
def mp_config():
    """The seed's rules: the random-init root qualifies as a subpath (the scripted draws in
    test_multipath_subpaths.py replay the seed's decisions)."""
    from tests.agents.multipath_helpers import COMMON

    return apply_overrides(get_preset("MultiVitCpu"), [*COMMON, "multipath_random_root=true"])


@pytest.fixture
def default_config():
    """munet's default: a random-init root is never a subpath."""
    from tests.agents.multipath_helpers import COMMON

    return apply_overrides(get_preset("MultiVitCpu"), COMMON)
