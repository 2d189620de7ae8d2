"""The body of one agent's Ray task: build the agent against the store and run it.

Nothing here imports ray; the launcher wraps `run_agent` in a remote function. A retried task
(the first attempt's worker or node died) runs this again: the agent resumes from its last
committed state, after the dead attempt's lease expires (fsspec stores; an flock on local disk
is freed by the kernel at once).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from munet.cluster.events import Event, ReportingStore, process_fields


def run_agent(
    agent_class: str,
    task: str,
    state_dir: str,
    cycles: int,
    overrides: Sequence[str],
    send: Callable[[Event], None],
    lease_tag: str | None = None,
    lease_ttl: float | None = None,
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

    Returns:
        A summary: agent id, cycles, best path and its qualities, seconds, host and pid.
    """
    from munet.agents.runner import make_agent, resolve_config

    start = time.perf_counter()
    store = ReportingStore(state_dir, send, lease_tag=lease_tag, lease_ttl=lease_ttl)
    config = resolve_config(agent_class, overrides, store, task)
    # The agent's own summaries are not needed: the store reports each commit.
    agent = make_agent(config, task, store, progress=False, echo=lambda _line: None)
    latest = store.latest_state(agent.agent_id)
    send(
        {
            "kind": "start",
            "agent_id": agent.agent_id,
            "state": latest.name if latest is not None else None,
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
