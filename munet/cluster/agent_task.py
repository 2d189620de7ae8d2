"""What runs inside a launch's Ray worker: the agent's task body, which sends its progress
events to the driver's queue and watches the launch's stop flag, and that flag (a Ray actor the
driver sets on Ctrl-C).

The flag stops the agent in two ways: at its next commit (munet.cluster.worker), and, while it
trains between commits, by interrupting the task as Ctrl-C would (munet.job_cancel's
watcher, polling every `STOP_POLL_S`). So the launcher never `ray.cancel`s a running agent:
a cancel landing as the task's reply reaches the driver aborts the driver inside Ray (see
munet.job_cancel).

The agent itself is munet.cluster.worker.run_agent; this module only wires it to Ray.
"""

from __future__ import annotations

import logging
from typing import Any

from munet.cluster.events import Event
from munet.cluster.worker import AgentStopped, run_agent
from munet.job_cancel import JobCancelled, run_watched

log = logging.getLogger("munet.cluster")
# How often a running agent asks the stop flag (one small actor call).
STOP_POLL_S = 0.5


def task_body(
    agent_class: str,
    task: str,
    state_dir: str,
    cycles: int,
    overrides: list[str],
    queue: Any,
    lease_tag: str,
    lease_ttl: float | None,
    stop_flag: Any,
    tracking: Any = None,
) -> dict[str, Any]:
    """Runs inside a Ray worker: the agent, with its events sent to the driver's queue (each
    naming the Ray node it ran on, `node_id`: on one machine several nodes share host and pid
    space, and a retry after a lost node shows where the agent went)."""
    import ray

    node_id = ray.get_runtime_context().get_node_id()

    def send(event: Event) -> None:
        try:
            queue.put({**event, "node_id": node_id}, timeout=30)
        except Exception as e:  # noqa: BLE001 - lost progress lines must not stop the agent
            log.warning("progress event lost: %s", e)

    def should_stop() -> bool:
        try:
            return bool(ray.get(stop_flag.is_set.remote(), timeout=30))
        except Exception as e:  # noqa: BLE001 - an unreachable flag must not stop the agent
            log.warning("stop flag unreachable: %s", e)
            return False

    args = (agent_class, task, state_dir, cycles, overrides, send, lease_tag, lease_ttl,
            should_stop, tracking)  # fmt: skip
    try:
        return run_watched(lambda args: run_agent(*args), args, should_stop, poll_s=STOP_POLL_S)
    except JobCancelled as stopped:
        # Reported as the commit-time stop is: its committed states are kept.
        raise AgentStopped(f"{agent_class} on {task}: {stopped}") from None


class StopFlag:
    """A Ray actor the agents poll after each commit: set once the launch is interrupted."""

    def __init__(self) -> None:
        self._set = False

    def set(self) -> None:
        self._set = True

    def is_set(self) -> bool:
        return self._set
