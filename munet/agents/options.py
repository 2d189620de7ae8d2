"""How an agent runs (devices, lines, bars, tracking, data checks), apart from what it evolves
(its :class:`munet.config.AgentConfig`).

Every agent constructor and :func:`munet.agents.make_agent` take these as keyword arguments
(``SinglepathAgent(config, "digits", store, quiet=True)``) or as one object
(``SinglepathAgent(config, "digits", store, options=RunOptions(quiet=True))``); both forms
build a :class:`RunOptions`, so a new option is one field here.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import torch

    from munet.tracking import Tracker, TrackingSettings

_Function = TypeVar("_Function", bound=Callable[..., Any])

#: The values of ``RunOptions.detail``: the default, then more lines, then fewer.
DETAIL_LEVELS = ("generation", "full", "cycle")


@dataclass(frozen=True)
class RunOptions:
    """How an agent runs.

    Attributes:
        devices: devices to train on (default: every local GPU, else the CPU).
        progress: show progress bars (an overall one per run, with cycles, generations and
            ETA, and one per generation's training); None: in a terminal or a notebook.
        echo: where the run's lines go (default: ``print``).
        detail: which lines: ``"generation"`` (a start-of-run block, then one line per
            generation and per cycle; the default of the Python API and of ``munet run``),
            ``"full"`` (also every sampled path's parent, quality, score and verdict, and the
            generation's times; ``munet run -v``) or ``"cycle"`` (one line per cycle;
            ``munet run -q``).
        quiet: no lines and (unless ``progress=True``) no bars; warnings still show.
        tracker: where learning curves, generations and cycles are logged: a
            ``munet.tracking.TrackingSettings`` (each ``run`` opens and closes its trackers)
            or a ``munet.tracking.Tracker`` the caller owns; None logs nothing.
        skip_bad_files: the task's ``folder:`` data leaves out image files that cannot be read
            (with a warning) instead of being refused.
    """

    devices: Sequence[torch.device] | None = None
    progress: bool | None = None
    echo: Callable[[str], None] | None = None
    detail: str = "generation"
    quiet: bool = False
    tracker: Tracker | TrackingSettings | None = None
    skip_bad_files: bool = False

    def __post_init__(self) -> None:
        if self.detail not in DETAIL_LEVELS:
            raise ValueError(
                f"detail {self.detail!r}: expected one of {', '.join(DETAIL_LEVELS)}"
            )

    @classmethod
    def of(cls, options: RunOptions | None = None, **overrides: Any) -> RunOptions:
        """``options`` (default: all defaults) with the keyword ``overrides`` applied.

        Raises:
            TypeError: an override that is not an option (named, with the known ones).
            ValueError: a bad ``detail``.
        """
        known = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise TypeError(
                f"unknown agent option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
            )
        base = options if options is not None else cls()
        if not isinstance(base, cls):
            raise TypeError(f"options must be a RunOptions, got {type(base).__name__}")
        return dataclasses.replace(base, **overrides) if overrides else base


def takes_run_options(function: _Function) -> _Function:
    """Shows ``function``'s ``**option_values`` as the keyword-only options of
    :class:`RunOptions` (with their defaults) to ``help()``, ``inspect.signature`` and
    notebook completion, so the signature stays explicit while the options live in one place.

    Args:
        function: a callable ending in ``*, options=None, **option_values``.

    Returns:
        ``function`` itself, with ``__signature__`` set.
    """
    signature = inspect.signature(function)
    parameters = [
        p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD
    ]
    for field in dataclasses.fields(RunOptions):
        parameters.append(
            inspect.Parameter(
                field.name,
                inspect.Parameter.KEYWORD_ONLY,
                default=field.default,
                annotation=field.type,
            )
        )
    function.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    return function


__all__ = ["DETAIL_LEVELS", "RunOptions", "takes_run_options"]
