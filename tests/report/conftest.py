import pytest

from munet.agents.root import create_root_model
from munet.agents.runner import make_agent, resolve_config
from munet.agents.singlepath import SinglepathAgent
from munet.config import apply_overrides, get_preset
from munet.system import SystemStore
from tests.agents.conftest import TINY_OVERRIDES
from tests.report.systems import build_system


@pytest.fixture(scope="session")
def synthetic_state(tmp_path_factory):
    """Root, two singlepath-like agents and a multipath agent, written with the store API.
    Read only: tests that change it copy it first."""
    root = tmp_path_factory.mktemp("report") / "state"
    build_system(root)
    return root


@pytest.fixture(scope="session")
def grown_state(tmp_path_factory):
    """A tiny system grown by the real agents: singlepath digits 2 cycles, synth/shape 1, then
    a multipath agent on digits, 1 cycle."""
    root = tmp_path_factory.mktemp("grown") / "state"
    config = apply_overrides(get_preset("VitCpu"), TINY_OVERRIDES)
    create_root_model(config, root, "random_init")
    store = SystemStore(str(root))
    for cycle, tasks in ((1, ("digits", "synth/shape")), (2, ("digits",))):
        for task in tasks:
            SinglepathAgent(config, task, store, progress=False, echo=lambda _: None).run(cycle)
    # The multipath preset keeps its own architecture and image sizes (as the CLI tests do).
    multi = [o for o in TINY_OVERRIDES if "num_layers" not in o and "ds_image_size" not in o]
    config = resolve_config("MultiVitCpu", multi, store, "digits")
    make_agent(config, "digits", store, progress=False, echo=lambda _: None).run(1)
    return root
