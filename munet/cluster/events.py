"""Progress of the agents of a launch: one event per committed state, as one line each.

Every agent, whatever its kind, commits its work through the store, so a store that reports each
commit gives one event per finished generation (an intermediate state) and per finished cycle
(an end-of-cycle state) without hooks in the agents.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from typing import Any

from munet.system import Population, StateRef, SystemStore

Event = dict[str, Any]


def _best_fields(population: Population) -> dict[str, Any]:
    best = population.get_best_path()
    if best is None:
        return {"best": None}
    metrics = best.metrics
    return {
        "best": best.full_id,
        "quality": metrics.get("quality"),
        "test_quality": metrics.get("test_quality"),
        "score": population.score(best),
    }


class ReportingStore(SystemStore):
    """A `SystemStore` that sends an event after each committed state.

    Args:
        root: the state dir.
        send: called with each event (a JSON-able dict).
        **kwargs: as for `SystemStore`.
    """

    def __init__(self, root: str, send: Callable[[Event], None], **kwargs: Any) -> None:
        super().__init__(root, **kwargs)
        self._send = send
        self._last = time.monotonic()
        #: Added to every commit's event (the run's totals, once the agent is built).
        self.event_fields: dict[str, Any] = {}

    def save_state(self, population: Population, cycle: int, generation: int, *args, **kwargs):
        state: StateRef = super().save_state(population, cycle, generation, *args, **kwargs)
        now = time.monotonic()
        event = {
            "kind": "cycle" if generation == 0 else "generation",
            "agent_id": population.agent_id,
            "cycle": cycle,
            "generation": generation,
            "seconds": now - self._last,
            **self.event_fields,
            **process_fields(),
            **_best_fields(population),
        }
        self._last = now
        self._send(event)
        return state


def process_fields() -> dict[str, Any]:
    return {"host": socket.gethostname(), "pid": os.getpid()}


def _number(value: Any) -> str:
    return "-" if value is None else f"{value:.4f}"


def _of(done: int, total: Any) -> str:
    """``3/8``, or ``3`` when the event has no total (an older worker's)."""
    return f"{done}/{total}" if total is not None else str(done)


def event_line(event: Event, detail: str = "generation") -> str | None:
    """The line ``munet launch`` prints for an event, or None where ``detail`` leaves it out
    (``cycle``, ``launch -q``: no generation lines)."""
    if detail == "cycle" and event.get("kind") == "generation":
        return None
    return format_event(event)


def format_event(event: Event) -> str:
    """One line for an event."""
    agent = event.get("agent_id", "?")
    where = f"pid {event.get('pid')} on {event.get('host')}"
    kind = event.get("kind")
    cycles = event.get("cycles_total")
    if kind == "generation":
        # A commit of generation g in cycle c means generation g of cycle c + 1 finished.
        return (
            f"[{agent}] cycle {_of(event['cycle'] + 1, cycles)} gen "
            f"{_of(event['generation'], event.get('generations_per_cycle'))} done: best "
            f"{event.get('best')} quality {_number(event.get('quality'))} "
            f"({event.get('seconds', 0):.1f}s, {where})"
        )
    if kind == "cycle":
        return (
            f"[{agent}] cycle {_of(event['cycle'], cycles)} done: best {event.get('best')} quality "
            f"{_number(event.get('quality'))} test quality "
            f"{_number(event.get('test_quality'))} ({event.get('seconds', 0):.1f}s, {where})"
        )
    if kind == "start":
        state = event.get("state") or "no state yet"
        return f"[{agent}] started from {state} ({where})"
    if kind == "finished":
        return (
            f"[{agent}] finished: {event.get('cycle')} cycles; best {event.get('best')} "
            f"test quality {_number(event.get('test_quality'))}"
        )
    if kind == "failed":
        return f"[{agent}] FAILED: {event.get('error')}"
    return f"[{agent}] {event}"
