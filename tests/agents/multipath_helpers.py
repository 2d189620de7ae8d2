"""What the multipath agent tests (tests/agents/test_multipath_*.py) share: the tiny multipath
overrides, the agent ids they name, and an agent built on a state dir. Their fixtures (a grown
system, configs) are in tests/agents/conftest.py."""

from munet.agents.demo import multipath_overrides
from munet.agents.multipath import MultipathAgent
from tests.agents.conftest import TINY_OVERRIDES

COMMON = multipath_overrides(TINY_OVERRIDES)
SP = "VitCpu~digits"
ROOT = "VitCpu~root_model~random_init"


def quiet(*_):
    pass


def agent_for(config, state, task="digits"):
    return MultipathAgent(config, task, state, progress=False, echo=quiet)
