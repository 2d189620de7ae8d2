"""The benchmark suite's task names (placeholder).

The suite branch replaces this module with the VTAB-1k-style embedded tasks (``1k/...``);
until then ``munet benchmark`` runs on the embedded tasks that exist today.
"""

from __future__ import annotations

SUITE_TASKS: tuple[str, ...] = ("digits", "synth/shape", "synth/color", "synth/count")
QUICK_SUITE_TASKS: tuple[str, ...] = ("digits", "synth/shape")
