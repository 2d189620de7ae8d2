"""The body of one agent's Ray task: build the agent against the store and run it.

Nothing here imports ray; the launcher wraps `run_agent` in a remote function. A retried task
(the first attempt's worker or node died) runs this again: the agent resumes from its last
committed state, after the dead attempt's lease expires (fsspec stores; an flock on local disk
is freed by the kernel at once).

Stopping: on Ctrl-C the launcher raises a stop flag. Each agent checks it before it starts and
after every commit, and stops there with `AgentStopped`; and the task around it
(munet.cluster.agent_task) watches the flag while the agent trains and interrupts it there,
as Ctrl-C would (best-effort: it lands when the task's thread runs Python).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from munet.cluster.events import Event, ReportingStore, process_fields


class AgentStopped(Exception):
    """The launch asked this agent to stop; everything it committed is kept."""


def run_agent(
    agent_class: str,
    task: str,
    state_dir: str,
    cycles: int,
    overrides: Sequence[str],
    send: Callable[[Event], None],
    lease_tag: str | None = None,
    lease_ttl: float | None = None,
    should_stop: Callable[[], bool] | None = None,
    tracking: Any = None,
) -> dict[str, Any]:
    """Run (or resume) one agent until it completed `cycles` cycles.

    Args:
        agent_class: the preset.
        task: the task.
        state_dir: the system state (local path every node mounts, or an fsspec URL).
        cycles: total cycles to reach.
        overrides: ``key=value`` config overrides.
        send: where progress events go.
        lease_tag: the launch id (a retried attempt waits out its dead predecessor's lease).
        lease_ttl: the lease ttl (seconds; fsspec stores).
        should_stop: asked before the agent starts and after each of its commits; True stops
            the agent there (`AgentStopped`).
        tracking: a `munet.tracking.TrackingSettings` (TensorBoard under its log dir, one
            subdir per agent; W&B), or None.

    Returns:
        A summary: agent id, cycles, best path and its qualities, seconds, host and pid.

    Raises:
        AgentStopped: `should_stop` said so.
    """
    from munet.agents.runner import make_agent, resolve_config

    start = time.perf_counter()
    stop_requested = should_stop or (lambda: False)

    def send_then_check(event: Event) -> None:
        send(event)
        if stop_requested():
            # Raised after the commit the event reports: the agent's lock is released on the
            # way out, and the run resumes from this state.
            raise AgentStopped(f"{event['agent_id']}: stopped after {event['kind']} commit")

    if stop_requested():
        raise AgentStopped(f"{agent_class} on {task}: stopped before it started")
    store = ReportingStore(state_dir, send_then_check, lease_tag=lease_tag, lease_ttl=lease_ttl)
    config = resolve_config(agent_class, overrides, store, task)
    # The agent's own summaries are not needed: the store reports each commit.
    agent = make_agent(config, task, store, quiet=True, tracker=tracking)
    latest = store.latest_state(agent.agent_id)
    per_cycle = agent.num_generations
    store.event_fields = {"cycles_total": cycles, "generations_per_cycle": per_cycle}
    send(
        {
            "kind": "start",
            "agent_id": agent.agent_id,
            "state": latest.name if latest is not None else None,
            # The generations this run has left (the launch's overall bar adds them up).
            "generations_left": max(
                0,
                cycles * per_cycle
                - (latest.cycle * per_cycle + latest.generation if latest is not None else 0),
            ),
            **store.event_fields,
            **process_fields(),
        }
    )
    report = agent.run(cycles)
    best = report.best
    return {
        "agent_id": report.agent_id,
        "cycle": report.cycle,
        "best": best.full_id if best is not None else None,
        "quality": best.metrics.get("quality") if best is not None else None,
        "test_quality": best.metrics.get("test_quality") if best is not None else None,
        "seconds": time.perf_counter() - start,
        **process_fields(),
    }
