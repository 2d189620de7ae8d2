"""The launch's scheduler: which agent's Ray task runs when, and what the driver shows of it.

`AgentTasks` starts one agent's task (its resources, retries, environment and arguments);
`AgentScheduler` submits the agents, holds back multipath agents until the agents they combine
have finished a cycle (munet.cluster.waits), relays every progress event as a line and on the
bar, collects each task's summary or failure into the `LaunchResult`, and on a stop asks every
agent to stop and waits for them. munet.cluster.launch sets Ray up and runs one of each.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from munet.cluster.events import Event, event_line, format_event
from munet.cluster.specs import AgentSpec
from munet.cluster.waits import Wait, release
from munet.cluster.worker import AgentStopped


@dataclass
class AgentTasks:
    """How an agent's Ray task starts: the task function, what every agent shares, and the
    Ray options of the agent's resources.

    Attributes:
        remote: the Ray remote function (munet.cluster.agent_task.task_body).
        state_dir: the store every agent runs against.
        cycles: total cycles per agent.
        overrides: launch-wide ``key=value`` config overrides (the agent's own follow).
        queue: the progress events' Ray queue.
        launch_id: this launch (a retried attempt waits out its earlier attempt's lease).
        lease_ttl: agents' lease ttl on fsspec stores (None: the default).
        stop_flag: the Ray actor every agent watches to stop.
        tracking: the workers' tracker settings, or None.
        env_vars: environment variables set in every worker.
        max_retries: times Ray reruns an agent whose worker or node died.
    """

    remote: Any
    state_dir: str
    cycles: int
    overrides: Sequence[str]
    queue: Any
    launch_id: str
    lease_ttl: float | None
    stop_flag: Any
    tracking: Any
    env_vars: dict[str, str]
    max_retries: int

    def submit(self, spec: AgentSpec) -> Any:
        """Start the agent's task; returns its Ray object ref."""
        options: dict[str, Any] = {
            "num_cpus": spec.num_cpus,
            "num_gpus": spec.num_gpus,
            "max_retries": self.max_retries,
            "retry_exceptions": False,
            "name": f"munet:{spec.agent_id}",
        }
        if self.env_vars:
            options["runtime_env"] = {"env_vars": self.env_vars}
        return self.remote.options(**options).remote(
            spec.agent_class,
            spec.task,
            self.state_dir,
            self.cycles,
            [*self.overrides, *spec.overrides],
            self.queue,
            self.launch_id,
            self.lease_ttl,
            self.stop_flag,
            self.tracking,
        )


class AgentScheduler:
    """Runs one launch's agents to the end (or until stopped), filling ``result``.

    Args:
        ray: the ray module (imported by the launch).
        tasks: how each agent's task starts.
        specs: every agent of the launch.
        waits_for: per multipath agent held back, what it waits for (munet.cluster.waits).
        result: the launch's result (munet.cluster.launch.LaunchResult), filled in place.
        bar: the bar of every agent's generations (grows as agents announce theirs).
        echo: where lines go (above the bar).
        detail: which events make lines (munet.cluster.events.event_line).
        on_event: also called with every event, or None.
    """

    def __init__(
        self,
        ray: Any,
        tasks: AgentTasks,
        specs: Sequence[AgentSpec],
        waits_for: dict[str, Wait],
        result: Any,
        bar: Any,
        echo: Callable[[str], None],
        detail: str,
        on_event: Callable[[Event], None] | None,
    ) -> None:
        from ray.util.queue import Empty

        self.ray = ray
        self.tasks = tasks
        self.waits_for = waits_for
        self.result = result
        self.bar = bar
        self.echo = echo
        self.detail = detail
        self.on_event = on_event
        self._empty = Empty
        self.pending: dict[Any, AgentSpec] = {}
        self.deferred = {s.agent_id: s for s in specs if s.agent_id in waits_for}
        self.starting = [s for s in specs if s.agent_id not in self.deferred]
        # Per agent, generations still to run (a retried agent announces its own again).
        self.left: dict[str, int] = {}

    def start(self) -> None:
        """Submit every agent that waits for nothing."""
        for spec in self.starting:
            self._submit(spec)

    def run(self) -> None:
        """Relay events and collect results until every agent has ended.

        Raises:
            ray.exceptions.RayActorError: the progress queue is gone (the cluster is lost).
            KeyboardInterrupt: a stop (Ctrl-C, SIGTERM): then call :meth:`stop`.
        """
        while self.pending or self.deferred:
            if not self.pending:  # Only waiting agents left (what they wait for is gone).
                for waiter in list(self.waits_for):
                    del self.waits_for[waiter]
                    self._submit(self.deferred.pop(waiter))
                continue
            ready, _ = self.ray.wait(list(self.pending), num_returns=1, timeout=0.25)
            self.drain()
            self._collect(ready)
        self.drain()

    def stop(self, stop_flag: Any, timeout: float) -> None:
        """After a stop: start no waiting agent, ask every running one to stop (each watches
        ``stop_flag``: it stops at once where it trains, at its next commit otherwise; no
        ``ray.cancel``, which can abort the driver), wait up to ``timeout`` seconds, then kill
        what is left."""
        for spec in self.deferred.values():
            self.result.failures[spec.agent_id] = "not started (interrupted)"
        self.deferred.clear()
        self.waits_for.clear()
        stop_flag.set.remote()
        deadline = time.monotonic() + timeout
        try:
            while self.pending and time.monotonic() < deadline:
                ready, _ = self.ray.wait(list(self.pending), num_returns=1, timeout=0.25)
                self.drain()
                self._collect(ready)
        except KeyboardInterrupt:
            pass
        for ref in list(self.pending):
            self.ray.cancel(ref, force=True)
            self.result.failures[self.pending.pop(ref).agent_id] = "killed (did not stop in time)"

    def drain(self) -> None:
        """Relay every event queued so far."""
        queue = self.tasks.queue
        while True:
            try:
                events = queue.get_nowait_batch(max(1, queue.qsize()))
            except self._empty:
                return
            if not events:
                return
            for event in events:
                self._relay(event)

    def _relay(self, event: Event) -> None:
        self.result.events.append(event)
        agent_id = event.get("agent_id", "")
        kind = event.get("kind")
        if kind == "start":
            now_left = int(event.get("generations_left") or 0)
            self.bar.total += now_left - self.left.get(agent_id, 0)
            self.left[agent_id] = now_left
            self.bar.refresh()
        elif kind in ("generation", "cycle"):
            self.left[agent_id] = max(0, self.left.get(agent_id, 0) - 1)
            self.bar.update(1)
        line = event_line(event, self.detail)
        if line is not None:
            self.echo(line)
        if kind == "cycle":
            self._release_waiting(event["agent_id"], finished_cycle=True)
        if self.on_event is not None:
            self.on_event(event)

    def _submit(self, spec: AgentSpec) -> None:
        self.pending[self.tasks.submit(spec)] = spec

    def _release_waiting(self, agent_id: str, finished_cycle: bool) -> None:
        """Submit the multipath agents that waited for this agent and now wait no more."""
        for waiter in release(self.waits_for, agent_id, finished_cycle):
            self._submit(self.deferred.pop(waiter))

    def _collect(self, ready: list[Any]) -> None:
        for ref in ready:
            spec = self.pending.pop(ref)
            self._release_waiting(spec.agent_id, finished_cycle=False)  # it ended: wait no more
            try:
                summary = self.ray.get(ref)
            except (self.ray.exceptions.TaskCancelledError, KeyboardInterrupt):
                self.result.failures[spec.agent_id] = "stopped (interrupted)"
                continue
            except Exception as e:  # noqa: BLE001 - one failed agent does not stop the rest
                self._failed(spec, getattr(e, "cause", None) or e)
                continue
            self.result.summaries[spec.agent_id] = summary
            self.drain()
            self.echo(format_event({"kind": "finished", **summary}))

    def _failed(self, spec: AgentSpec, cause: Any) -> None:
        if isinstance(cause, AgentStopped):
            self.result.failures[spec.agent_id] = "stopped (interrupted)"
            return
        self.result.failures[spec.agent_id] = f"{type(cause).__name__}: {cause}"
        if isinstance(cause, BaseException):
            self.result.failure_errors[spec.agent_id] = cause
        self.drain()
        self.echo(
            format_event(
                {
                    "kind": "failed",
                    "agent_id": spec.agent_id,
                    "error": self.result.failures[spec.agent_id],
                }
            )
        )
