"""Close-match hints for names a user mistyped (tasks, config keys, presets), one wording
everywhere: ``unknown config key 'opt_lrr' (did you mean 'opt_lr'?)``."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(name: str, names: Iterable[str]) -> str:
    """`` (did you mean 'digits'?)`` for a name close to some of ``names`` (the nearest three,
    best first), else ``""``."""
    close = difflib.get_close_matches(name, list(names), n=3, cutoff=0.6)
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
