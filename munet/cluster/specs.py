"""What a launch runs: agents (preset + task) and the resources each needs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from munet.system import format_agent_id


@dataclass(frozen=True)
class AgentSpec:
    """One agent of a launch.

    Attributes:
        agent_class: the preset (``VitCpu``, ``VitT3``, ``MultiVitCpu``, ...).
        task: the task name.
        num_cpus: CPUs Ray reserves for it.
        num_gpus: GPUs Ray reserves for it (fractions share a GPU).
        overrides: ``key=value`` config overrides of this agent (after the launch-wide ones).
    """

    agent_class: str
    task: str
    num_cpus: float = 1.0
    num_gpus: float = 0.0
    overrides: tuple[str, ...] = ()

    @property
    def agent_id(self) -> str:
        return format_agent_id(self.agent_class, self.task)


def _per_group(values: Sequence[float] | None, groups: int, what: str, default: float):
    """One value per group: none given -> the default, one -> for all, else one each."""
    if not values:
        return [default] * groups
    if len(values) == 1:
        return list(values) * groups
    if len(values) != groups:
        raise ValueError(
            f"{what}: got {len(values)} values for {groups} --agent groups; give one for all "
            "or one per --agent"
        )
    return list(values)


def agent_specs(
    agents: Sequence[str],
    tasks: Sequence[str],
    cpus_per_agent: Sequence[float] | None = None,
    gpus_per_agent: Sequence[float] | None = None,
    preset_overrides: Sequence[tuple[str, str]] = (),
) -> list[AgentSpec]:
    """The agents of `--agent A --tasks t1,t2 [--agent B --tasks t3 ...]`.

    The i-th ``--tasks`` belongs to the i-th ``--agent``; resources are given once for every
    agent or once per ``--agent``.

    Args:
        agents: presets, one per group.
        tasks: comma-separated task lists, one per group.
        cpus_per_agent: CPUs per agent (one value, or one per group; default 1).
        gpus_per_agent: GPUs per agent (one value, or one per group; default 0).
        preset_overrides: ``(preset, "key=value")`` overrides for the agents of one preset
            (``--agent-set PRESET KEY=VALUE``).

    Returns:
        One spec per (preset, task), in the order given, without duplicates.

    Raises:
        ValueError: counts that do not match, an empty task list, a negative resource, an
            agent given twice.
    """
    if not agents:
        raise ValueError("no agents: give --agent PRESET --tasks TASK[,TASK...]")
    if len(tasks) != len(agents):
        raise ValueError(
            f"got {len(agents)} --agent and {len(tasks)} --tasks: each --agent needs its own "
            "--tasks (e.g. --agent VitCpu --tasks digits,synth/shape)"
        )
    unknown = sorted({preset for preset, _ in preset_overrides} - set(agents))
    if unknown:
        raise ValueError(
            f"--agent-set for {', '.join(unknown)}: not an --agent of this launch "
            f"({', '.join(dict.fromkeys(agents))})"
        )
    cpus = _per_group(cpus_per_agent, len(agents), "--cpus-per-agent", 1.0)
    gpus = _per_group(gpus_per_agent, len(agents), "--gpus-per-agent", 0.0)
    specs: list[AgentSpec] = []
    seen: set[str] = set()
    for agent, task_list, num_cpus, num_gpus in zip(agents, tasks, cpus, gpus, strict=True):
        names = [t.strip() for t in task_list.split(",") if t.strip()]
        if not names:
            raise ValueError(f"--tasks {task_list!r} for --agent {agent}: expected task names")
        if num_cpus < 0 or num_gpus < 0:
            raise ValueError(
                f"--agent {agent}: resources must be >= 0 (cpus {num_cpus}, gpus {num_gpus})"
            )
        for task in names:
            own = tuple(o for preset, o in preset_overrides if preset == agent)
            spec = AgentSpec(agent, task, float(num_cpus), float(num_gpus), own)
            if spec.agent_id in seen:
                raise ValueError(f"agent {spec.agent_id} is given twice")
            seen.add(spec.agent_id)
            specs.append(spec)
    return specs
