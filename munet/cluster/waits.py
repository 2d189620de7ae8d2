"""Which agents of a launch a multipath agent waits for before it is submitted.

A multipath agent combines its task's singlepath path with paths of *other* agents of the
singlepath class (munet.agents.subpath_choice). So it cannot start before its task's
singlepath agent committed a cycle, nor before some other drawable agent did: another
singlepath agent of the class, or a root model it may route through (a checkpoint root; a
``random_init`` root only with ``multipath_random_root=true``). Where the store already holds
what it needs it starts at once; where the launch holds the agents that will make it, it is
submitted once they have (so it holds no resources while waiting); where neither does, it
starts anyway and fails with the agent's own clear error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from munet.agents.subpath_choice import may_draw
from munet.system import SystemStore, format_agent_id


@dataclass
class Wait:
    """What one multipath agent still waits for."""

    main: str | None  # its task's singlepath agent, until it finished a cycle
    others: set[str] = field(default_factory=set)  # any one of these finishing a cycle will do

    @property
    def over(self) -> bool:
        return self.main is None and not self.others

    def describe(self) -> str:
        parts = [self.main] if self.main else []
        if self.others:
            parts.append(f"one of {', '.join(sorted(self.others))}")
        return " and ".join(parts)


def multipath_waits(
    specs: list[Any], configs: dict[str, Any], store: SystemStore
) -> dict[str, Wait]:
    """Multipath agent id -> what it waits for, for the agents of this launch that must wait."""
    ids = {s.agent_id for s in specs}
    stored = [a for a in store.agent_ids() if store.latest_state(a, end_of_cycle=True)]
    waits = {}
    for spec in specs:
        config = configs[spec.agent_id]
        if not getattr(config, "is_multipath", False):
            continue
        singlepath_class = config.singlepath_agent
        main = format_agent_id(singlepath_class, spec.task)
        allowed = bool(config.multipath_random_root)
        wait = Wait(main if main in ids and main not in stored else None)
        drawable = {
            a for a in {*ids, *stored}
            if a != main and may_draw(a, singlepath_class, allowed, spec.task)
        }  # fmt: skip
        if not drawable & set(stored):
            wait.others = drawable & ids
        if not wait.over:
            waits[spec.agent_id] = wait
    return waits


def release(waits: dict[str, Wait], agent_id: str, finished_cycle: bool) -> list[str]:
    """Updates ``waits`` after ``agent_id`` finished a cycle (``finished_cycle``) or ended
    (finished or failed); the multipath agents whose waiting is over, removed from ``waits``.

    An agent that ended stops being waited for: if it was the last one a multipath agent
    could wait for, that agent is released and reports what it lacks itself.
    """
    done = []
    for waiter, wait in list(waits.items()):
        if wait.main == agent_id:
            wait.main = None
        if agent_id in wait.others:
            wait.others = set() if finished_cycle else wait.others - {agent_id}
        if wait.over:
            del waits[waiter]
            done.append(waiter)
    return done
