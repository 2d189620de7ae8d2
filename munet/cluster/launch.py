"""`munet launch`: run many agents at once on a Ray cluster against one shared store.

Each agent is one Ray task with its CPUs and GPUs; agents run asynchronously and see each
other's published states at their cycle starts, exactly as separate `munet run` processes do:
the store is the only coordination. Ray retries a task whose worker or node died (the agent
resumes from its last committed state); the driver prints one line per finished generation and
cycle of every agent, then the leaderboard. Ctrl-C cancels the tasks (each agent stops, keeping
what it committed) and still prints the leaderboard.

This module is the driver: it checks the request, sets Ray up and runs the launch's scheduler
(munet.cluster.scheduler); getting Ray is munet.cluster.ray_setup, and what runs in each
agent's worker is munet.cluster.agent_task.
"""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from munet.cluster.agent_task import StopFlag, task_body
from munet.cluster.events import Event
from munet.cluster.ray_setup import import_ray, init_ray
from munet.cluster.scheduler import AgentScheduler, AgentTasks
from munet.cluster.specs import AgentSpec
from munet.cluster.waits import multipath_waits
from munet.interrupts import Terminated, defer_sigint, interruption_point, resume_sigint
from munet.progress import bars_enabled, progress_bar, write_line

# import_ray and init_ray live in munet.cluster.ray_setup; they are re-exported here, so
# importing them from munet.cluster.launch works too.
__all__ = ["FORWARDED_ENV", "ClusterLostError", "LaunchResult", "import_ray", "init_ray", "launch"]


class ClusterLostError(RuntimeError):
    """The launch lost the Ray cluster under it (its head node, or the driver's own node,
    went): it cannot go on; every agent keeps what it committed."""

#: Settings forwarded to the workers when set here (no secrets: credentials normally come from
#: the nodes themselves; forward more with `env_names`).
FORWARDED_ENV = (
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "AWS_DEFAULT_REGION",
    "AWS_REGION",
    "MUNET_LEASE_TTL",
    # W&B's settings (not its API key: forward that with --env WANDB_API_KEY when needed).
    "WANDB_MODE",
    "WANDB_DIR",
    "WANDB_ENTITY",
    "WANDB_BASE_URL",
)


def _overrides(spec: AgentSpec, overrides: Sequence[str]) -> list[str]:
    """The launch-wide overrides, then the agent's own."""
    return [*overrides, *spec.overrides]


@dataclass
class LaunchResult:
    """What a launch did.

    Attributes:
        summaries: per finished agent id, its summary (cycles, best path, qualities, ...).
        failures: per failed agent id, the error.
        failure_errors: per agent id that failed with an exception, the exception itself
            (the command's exit code is the kind of these: 3 for a locked agent, ...).
        interrupted: stopped by Ctrl-C (or SIGTERM in ``munet launch``).
        terminated: the stop was SIGTERM (``munet.interrupts.Terminated``).
        rows: the final leaderboard rows.
        events: every progress event received, in order.
    """

    summaries: dict[str, dict[str, Any]] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    failure_errors: dict[str, BaseException] = field(default_factory=dict)
    interrupted: bool = False
    terminated: bool = False
    rows: list[dict[str, Any]] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)


def launch(
    specs: Sequence[AgentSpec],
    state_dir: str,
    cycles: int,
    *,
    overrides: Sequence[str] = (),
    ray_address: str | None = None,
    num_cpus: int | None = None,
    max_retries: int = 3,
    lease_ttl: float | None = None,
    env_names: Sequence[str] = (),
    echo: Callable[[str], None] = print,
    on_event: Callable[[Event], None] | None = None,
    stop_timeout: float = 120.0,
    progress: bool | None = None,
    tracking: Any = None,
    detail: str = "generation",
) -> LaunchResult:
    """Run the agents as Ray tasks until each completed `cycles` cycles.

    Args:
        specs: the agents and their resources.
        state_dir: the system state, a path every node sees or an fsspec URL (``s3://...``).
        cycles: total cycles per agent.
        overrides: ``key=value`` config overrides for every agent.
        ray_address: the cluster; None starts a local Ray on 127.0.0.1 (or uses the Ray this
            process already initialised).
        num_cpus: CPUs of a local Ray instance (default: all).
        max_retries: times Ray reruns an agent whose worker or node died.
        lease_ttl: agents' lease ttl on fsspec stores (default `MUNET_LEASE_TTL` or 30 s): a
            retried agent waits up to this long for its dead attempt's lease.
        env_names: environment variables to forward to the workers besides `FORWARDED_ENV`
            (e.g. credentials, when the nodes have none of their own).
        echo: where the progress lines and the leaderboard go.
        on_event: also called with every progress event (tests, dashboards).
        stop_timeout: seconds to wait for agents to stop after Ctrl-C before killing them.
        progress: an overall bar of every agent's generations, with ETA (None: in a terminal
            or a notebook).
        tracking: a `munet.tracking.TrackingSettings`: every worker logs its agent (TensorBoard
            under ``log_dir/<agent id>``, a path the workers' nodes must see; W&B), or None.
        detail: ``generation`` (a line per finished generation and cycle) or ``cycle``
            (no generation lines; ``munet launch -q``); ``full`` is taken as ``generation``.

    Returns:
        The agents' summaries and failures, and the final leaderboard.

    Raises:
        ValueError: no agents, bad cycles, an agent given twice, a bad override or preset.
        ImportError: Ray is not installed.
    """
    from munet.agents.runner import leaderboard_rows, resolve_config
    from munet.report.leaderboard import format_leaderboard
    from munet.system import SystemStore
    from munet.tasks.registry import check_task_name

    if not specs:
        raise ValueError("no agents to launch")
    if not isinstance(cycles, int) or cycles < 0:
        raise ValueError(f"cycles {cycles!r}: expected an int >= 0")
    ids = [s.agent_id for s in specs]
    if len(set(ids)) != len(ids):
        raise ValueError(f"an agent is given twice: {ids}")
    store = SystemStore(state_dir)
    # Bad presets and overrides fail here, before any worker starts.
    configs = {s.agent_id: resolve_config(s.agent_class, _overrides(s, overrides), store, s.task)
               for s in specs}
    for spec in specs:  # A misspelt task fails here, not in a worker once Ray is up.
        if not configs[spec.agent_id].data:
            check_task_name(spec.task)
    waits_for = multipath_waits(specs, configs, store)
    missing = [name for name in env_names if name not in os.environ]
    if missing:
        raise ValueError(f"--env {', '.join(missing)}: not set in this environment")
    env_vars = {n: os.environ[n] for n in (*FORWARDED_ENV, *env_names) if n in os.environ}

    result = LaunchResult()
    started = False
    # Every agent's generations, added up as agents start (each says how many it has left).
    bar = progress_bar(0, "launch", "gen", bars_enabled(progress))
    shown = echo
    echo = lambda line: write_line(shown, line)  # noqa: E731  (above the bar)
    try:
        # Ctrl-C while Ray loads and starts is taken once it has started (then shut down):
        # raised inside an import or ray.init it crashed the process (see munet.interrupts).
        with defer_sigint():
            interruption_point()
            ray = import_ray(local=not ray_address)
            from ray.util.queue import Queue
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            interruption_point()  # do not start Ray for nothing
            started = init_ray(ray_address, num_cpus)
            # The progress queue and the stop flag live on the driver's node: on another node
            # (Ray may place an actor of no CPUs anywhere) they would die with it, and the
            # driver's next read of the queue would end the launch.
            on_driver = {"num_cpus": 0, "scheduling_strategy": NodeAffinitySchedulingStrategy(
                node_id=ray.get_runtime_context().get_node_id(), soft=False)}
            queue = Queue(actor_options=on_driver)
            stop_flag = ray.remote(StopFlag).options(**on_driver).remote()
        resume_sigint()  # and the caller's deferral: from here Ctrl-C stops the agents
        # One worker process per agent task: a stop (Ctrl-C) interrupts the task wherever it
        # is, an import included, and a reused worker kept the half-imported modules (the
        # next agent on it failed on `aiohttp.http_exceptions`). A fresh process costs about
        # a second against an agent's minutes.
        remote = ray.remote(max_calls=1)(task_body)
        launch_id = f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"
        tasks = AgentTasks(
            remote, state_dir, cycles, overrides, queue, launch_id, lease_ttl, stop_flag,
            tracking, env_vars, max_retries,
        )  # fmt: skip
        scheduler = AgentScheduler(
            ray, tasks, specs, waits_for, result, bar, echo, detail, on_event
        )
        scheduler.start()
        echo(
            f"launched {len(specs)} agents for {cycles} cycles on Ray "
            f"({ray_address or 'local instance'}); state: {state_dir}"
        )
        for agent_id, wait in waits_for.items():
            echo(f"[{agent_id}] starts once {wait.describe()} has finished a cycle")
        try:
            scheduler.run()
        except ray.exceptions.RayActorError as lost:
            # The queue and the stop flag live on the driver's node: they are gone only with
            # it or with the head (the cluster itself).
            raise ClusterLostError(
                f"the launch lost its Ray cluster ({ray_address or 'local instance'}: the head "
                f"node or this driver's node is gone; {type(lost).__name__}); every agent keeps "
                "the states it committed, and its lease expires within the lease ttl once its "
                "worker is gone: rerun the launch to resume each agent from its last committed "
                "state"
            ) from lost
        except KeyboardInterrupt as stop:
            result.interrupted = True
            result.terminated = isinstance(stop, Terminated)
            echo("interrupted: stopping the agents (their committed states are kept) ...")
            scheduler.stop(stop_flag, stop_timeout)
        classes = list(dict.fromkeys(s.agent_class for s in specs))
        result.rows = leaderboard_rows(SystemStore(state_dir), classes)
        bar.close()
        echo("")
        echo(format_leaderboard(result.rows))
        return result
    finally:
        bar.close()
        if started:
            with defer_sigint():  # a shutdown cut short leaves Ray's threads to crash the exit
                ray.shutdown()
