"""munet.cluster: run a system's agents on a Ray cluster against one shared store.

Public API:

- `AgentSpec(agent_class, task, num_cpus=1, num_gpus=0)`; `agent_specs(agents, tasks,
  cpus_per_agent, gpus_per_agent)` parses `--agent A --tasks t1,t2 ...` groups.
- `launch(specs, state_dir, cycles, ...) -> LaunchResult`: every agent a Ray task, one
  progress line per finished generation and cycle, the final leaderboard.
- `init_ray(address=None, num_cpus=None)`: connect, or start a local Ray on 127.0.0.1.
- `run_agent(...)`: the body of an agent's task (no Ray needed; for tests and custom runners).

Ray is an optional dependency (`pip install 'munet-evolve[ray]'`), imported only when launching.
"""

from munet.cluster.events import ReportingStore, format_event
from munet.cluster.launch import LaunchResult, launch
from munet.cluster.ray_setup import init_ray
from munet.cluster.specs import AgentSpec, agent_specs
from munet.cluster.worker import run_agent

__all__ = [
    "AgentSpec",
    "LaunchResult",
    "ReportingStore",
    "agent_specs",
    "format_event",
    "init_ray",
    "launch",
    "run_agent",
]
