"""The checked values and JSON forms a search strategy works with: its options (ints,
probabilities, flags, choices), the objectives it is told, and the parts of its state that go
into a JSON checkpoint (candidate keys, the random generator's state)."""

from __future__ import annotations

import json
import math
import numbers
import random
import warnings
from collections.abc import Hashable
from typing import Any


def key_token(key: Hashable) -> str:
    """Canonical string of a candidate key, so seen keys survive a JSON checkpoint.

    Raises:
        TypeError: the key is not a JSON value.
    """
    try:
        return json.dumps(key, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as error:
        raise TypeError(
            f"space.key() returned {key!r}, which is not JSON-serialisable; "
            "expected a str, a number, or a tuple/list of them"
        ) from error


def rng_state_to_json(rng: random.Random) -> list[Any]:
    """`random.Random` state as JSON: [version, [625 ints], gauss_next]."""
    version, internal, gauss_next = rng.getstate()
    return [version, list(internal), gauss_next]


def rng_state_from_json(obj: list[Any]) -> tuple[Any, ...]:
    """Inverse of `rng_state_to_json`, ready for `random.Random.setstate`."""
    version, internal, gauss_next = obj
    return (version, tuple(internal), gauss_next)


def check_int(name: str, value: Any, *, minimum: int | None = None) -> int:
    """Return `value` if it is an int >= minimum, else raise a ValueError naming it."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an int, got {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    return int(value)


def check_probability(name: str, value: Any) -> float:
    """Return `value` as a float if it is in [0, 1], else raise a ValueError naming it."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= value <= 1:
        raise ValueError(f"{name} must be a probability in [0, 1], got {value!r}")
    return float(value)


def check_bool(name: str, value: Any) -> bool:
    """Return `value` if it is a bool, else raise a ValueError naming it."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return value


def check_choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    """Return `value` if it is one of `choices`, else raise a ValueError listing them."""
    if value not in choices:
        raise ValueError(f"unknown {name} {value!r}; known: {', '.join(choices)}")
    return value


def check_objective(trial_id: int, objective: Any) -> float | None:
    """A told objective as a float; None for a failure (None, or a non-finite number, which
    warns).

    Raises:
        ValueError: not a number.
    """
    if objective is None:
        return None
    if isinstance(objective, bool) or not isinstance(objective, numbers.Real):
        raise ValueError(
            f"objective of trial {trial_id} must be a number or None (failed), got {objective!r}"
        )
    if not math.isfinite(objective):
        warnings.warn(
            f"trial {trial_id} reported objective {objective!r}; treating it as a failure",
            RuntimeWarning,
            stacklevel=3,
        )
        return None
    return float(objective)
