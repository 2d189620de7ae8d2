"""A root comparison stored in a card (root_compare.py's ``--card``): writing it, and joining a
later run's fine-tuning budgets to it.

A later budget joins a stored comparison (:func:`merge_comparisons`: the 1,152-step column
measured after the choice) only when both runs compared the same roots, by sha256, on the same
tasks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from munet.pretrain.card import MEASURED_KEYS
from munet.pretrain.workdir import atomic_write


def update_card(card_file: str | Path, key: str, value: Any) -> dict[str, Any]:
    """Stores ``value`` under ``key`` (``validation``, ``test`` or ``transfer``) in a card.

    Raises:
        ValueError: another key (the rest of a card describes how the root was made).
    """
    if key not in MEASURED_KEYS:
        raise ValueError(f"card key {key!r}: expected one of {', '.join(MEASURED_KEYS)}")
    path = Path(card_file)
    card = json.loads(path.read_text())
    card[key] = value
    atomic_write(path, lambda tmp: Path(tmp).write_text(json.dumps(card, indent=1) + "\n"))
    return card


def _root_identity(comparison: dict[str, Any], role: str) -> str | None:
    """A compared root by content: its sha256, or ``random_init`` (the seed's initialisation,
    the same every run); None when a comparison names neither."""
    if comparison.get(role) == "random_init":
        return "random_init"
    return comparison.get(f"{role}_sha256")


def check_same_comparison(stored: dict[str, Any], added: dict[str, Any]) -> None:
    """Raises ValueError unless ``added`` (a root_compare.py summary, or just the fields read
    here) measured what ``stored`` did: the same roots by content (a comparison that names no
    sha256 cannot be matched), the same example counts per task and the same tasks."""
    for role in ("old", "new"):
        known, now = _root_identity(stored, role), _root_identity(added, role)
        if known is None or known != now:
            raise ValueError(
                f"the {role} root: the stored comparison measured {known!r}, this run {now!r}: "
                f"expected the same root, named by its sha256 in both"
            )
    for key in ("max_train", "max_eval"):
        if stored.get(key) is None or stored[key] != added.get(key):
            raise ValueError(
                f"{key}: the stored comparison has {stored.get(key)!r}, this run "
                f"{added.get(key)!r}: expected the same number of examples, named in both"
            )
    if set(stored["tasks"]) != set(added["tasks"]):
        raise ValueError(
            f"tasks {sorted(added['tasks'])}: expected the stored comparison's "
            f"{sorted(stored['tasks'])}"
        )


def merge_comparisons(stored: dict[str, Any], added: dict[str, Any]) -> dict[str, Any]:
    """One comparison out of two runs of root_compare.py: ``added``'s fine-tune
    budgets joined, task by task, to those of ``stored``. The probe and its delta stay
    ``stored``'s (both runs measured the same probe); the methods and wall times add up.

    Raises:
        ValueError: other roots or tasks (``check_same_comparison``), or ``added`` holds a
            budget already stored.
    """
    check_same_comparison(stored, added)
    merged = json.loads(json.dumps(stored))  # a deep copy: ``stored`` stays as it was
    for which in ("results", "old_results"):
        for task, figures in added[which].items():
            budgets = merged[which][task]["finetune"]
            again = sorted(set(budgets) & set(figures["finetune"]), key=int)
            if again:
                raise ValueError(
                    f"fine-tune budget(s) {again} on {task}: already stored; expected only "
                    f"budgets the stored comparison lacks"
                )
            budgets.update(figures["finetune"])
    merged["method"] = f"{stored['method']} | {added['method']}"
    merged["wall_s"] = round(stored.get("wall_s", 0) + added.get("wall_s", 0), 1)
    return merged
