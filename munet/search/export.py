"""A model found by a `vit:` search as a standalone export folder (`munet.models.export`).

    folder, model = export_search_model("runs/vit", "exports/vit-best")           # the best
    folder, model = export_search_model("runs/vit", "exports/vit-7", trial=7)     # one trial

A search's folder holds its state (`state.json`) and each trained model as a safetensors file
with its architecture in the metadata (`models/`): Petridish's pool models, and the ask/tell
strategies' trials. The export folder is the one `munet export` writes for a published path
(`model.safetensors`, `config.json`, `README.md`), so `munet predict` and
`munet.load_exported` use it as they use any other.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from .run_state import STATE_FILE


@dataclass(frozen=True)
class SearchModel:
    """One trained model of a search run."""

    trial: int  # Petridish: the pool model's job id; ask/tell: the trial id.
    weights: str  # Absolute path of its safetensors file.
    candidate: dict[str, Any]
    accuracy: float  # Validation accuracy.
    cost: float


def _models(state: dict[str, Any], run_dir: str) -> list[SearchModel]:
    """The run's trained models that kept their weights."""
    out = []
    if "pool" in state:  # Petridish loop
        rows = [(p["id"], p.get("weights"), p["candidate"], 1.0 - p["error"], p["cost"])
                for p in state["pool"]]  # fmt: skip
    else:  # ask/tell driver
        rows = [(r["trial"], r.get("weights"), r["candidate"], r["objective"], r["cost"])
                for r in state.get("results", []) if r.get("failure") is None]  # fmt: skip
    for trial, weights, candidate, accuracy, cost in rows:
        if weights:
            path = weights if os.path.isabs(weights) else os.path.join(run_dir, weights)
            out.append(SearchModel(int(trial), path, candidate, float(accuracy), float(cost)))
    return out


def read_search_state(run_dir: str | os.PathLike) -> dict[str, Any]:
    """The state of a search run folder, checked to be a `vit:` search.

    Raises:
        ValueError: no search there, or one of another objective (naming it).
    """
    run_dir = os.fspath(run_dir)
    path = os.path.join(run_dir, STATE_FILE)
    if not os.path.isfile(path):
        raise ValueError(f"{run_dir!r} is not a search folder: it has no {STATE_FILE}")
    try:
        with open(path) as handle:
            state = json.load(handle)
    except (OSError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: unreadable search state ({error})") from None
    kind = (state.get("objective") or {}).get("kind") if isinstance(state, dict) else None
    if kind != "vit":
        raise ValueError(
            f"{path}: a search of objective {kind!r}; only vit: searches train models to export"
        )
    return state


def find_search_model(run_dir: str | os.PathLike, trial: int | None = None) -> SearchModel:
    """The run's best model (highest validation accuracy, then lowest cost), or trial `trial`.

    Raises:
        ValueError: not a vit search, no such trial, or a trial without a saved model.
    """
    run_dir = os.path.abspath(os.fspath(run_dir))
    state = read_search_state(run_dir)
    models = _models(state, run_dir)
    if trial is None:
        if not models:
            raise ValueError(f"search {run_dir!r} has no trained model with saved weights yet")
        return max(models, key=lambda m: (m.accuracy, -m.cost, -m.trial))
    for model in models:
        if model.trial == trial:
            return model
    known = ", ".join(str(m.trial) for m in sorted(models, key=lambda m: m.trial)) or "none"
    raise ValueError(
        f"search {run_dir!r} has no trained model of trial {trial}; trials with a model: "
        f"{known} (a search job, a failed trial, or a run from before munet kept ask/tell "
        "trials' weights has none)"
    )


def export_search_model(
    run_dir: str | os.PathLike, out_dir: str | os.PathLike, trial: int | None = None
) -> tuple[str, SearchModel]:
    """Writes a `vit:` search's model as an export folder (see the module docstring).

    Class names and the images' storage size come from the task's data; when it cannot be read
    here the folder is still written, without class names and with inputs resized straight to
    the model's image size (as `munet export` does).

    Returns:
        (the folder, the model exported).

    Raises:
        ValueError: see :func:`find_search_model`; a weights file missing or not a search
            model. munet.models.export.ExportError: `out_dir` not empty.
    """
    import torch

    from munet.models.export import Preprocessing, save_exported

    from .objectives.vit import VitObjective, load_weights

    state = read_search_state(run_dir)
    found = find_search_model(run_dir, trial)
    if not os.path.isfile(found.weights):
        raise ValueError(f"the model of trial {found.trial} is missing: {found.weights}")
    model = load_weights(found.weights)
    objective = VitObjective.from_json(state["objective"])
    class_names, storage = None, None
    try:
        task = objective._task()
        class_names = list(task.class_names) if task.class_names else None
        first = task.source.images("train", torch.tensor([0]))
        storage = (int(first.shape[-2]), int(first.shape[-1]))
    except (ValueError, ImportError, NotImplementedError, OSError) as error:
        import logging

        logging.getLogger(__name__).warning(
            "the data of task %r cannot be read here (%s): exporting without class names, "
            "inputs resized straight to the image size",
            objective.task,
            error,
        )
    node = {"type": "vit", "arch": model.arch.to_dict(), "image_size": model.image_size}
    folder = save_exported(
        out_dir,
        node,
        model.state_dict(),
        preprocessing=Preprocessing(model.image_size, storage),
        class_names=class_names,
        provenance={
            "search": os.path.abspath(os.fspath(run_dir)),
            "strategy": state.get("strategy", "petridish"),
            "trial": found.trial,
            "task_name": objective.task,
            "source": objective.task,
            "candidate": found.candidate,
            "weights": found.weights,
        },
        metrics={"quality": found.accuracy, "flops": found.cost},
    )
    return str(folder), found
