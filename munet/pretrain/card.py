"""A pretrained root's files: the headless weights and the card that says how they were made.

The card (JSON, next to ``root.safetensors``; shipped roots as ``roots/<PRESET>.json``):

- ``preset``, ``recipe`` (every setting of :class:`munet.pretrain.loop.PretrainSpec`),
  ``recipes`` (the recipe's name and class count), ``steps``, ``planned_steps``,
  ``seed``, ``seconds`` (training wall time over all sessions), ``device``, ``precision``,
  ``render`` (where the batches were rendered: ``thread`` or ``process``), ``threads``,
  ``load_average`` (at the end), ``dtype``, ``file``, ``sha256``,
  ``val_accuracy`` (last held-out accuracy on the pretraining classes), ``history``,
  ``command``;
- ``validation``: figures the root's choice was made on (linear probe and short fine-tuning on
  the *validation* splits of the evaluation tasks, filled by the lab's
  experiments/roots/root_compare.py), ``{}`` until measured;
- ``test``: the same figures on the *test* splits, read once for the final card, ``{}`` until
  then; ``transfer``: the older transfer check (experiments/roots/pretrain_transfer.py).

A rerun of the loop keeps what a script stored under ``validation``, ``test`` and ``transfer``
only if it is the same root (same sha256); a new root starts with them empty.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import torch

from munet.models import save_safetensors
from munet.models.components import split_components
from munet.models.vit import VisionTransformer
from munet.pretrain.roots import sha256_file
from munet.pretrain.workdir import atomic_write

ROOT_FILE = "root.safetensors"
CARD_FILE = "card.json"
ROOT_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
MEASURED_KEYS = ("validation", "test", "transfer")


def root_components(model: VisionTransformer, dtype: torch.dtype) -> dict:
    """The headless components of a pretrained model (its classification head dropped)."""
    components = split_components(model)
    components.pop("head", None)
    return {
        component: {name: t.detach().cpu().to(dtype) for name, t in tensors.items()}
        for component, tensors in components.items()
    }


def write_root(
    work: Path, model: VisionTransformer, spec: Any, meta: dict[str, Any], root_dtype: str,
    command: str,
) -> tuple[Path, Path, dict[str, Any]]:  # fmt: skip
    """Writes ``root.safetensors`` and ``card.json`` in ``work`` (each atomically).

    Returns:
        (root file, card file, card).
    """
    root_file = work / ROOT_FILE
    atomic_write(
        root_file,
        lambda tmp: save_safetensors(tmp, root_components(model, ROOT_DTYPES[root_dtype])),
    )
    card = make_card(spec, meta, root_file, root_dtype, command)
    card_file = work / CARD_FILE
    if card_file.exists():
        try:
            old = json.loads(card_file.read_text())
        except (OSError, json.JSONDecodeError):
            old = {}
        if old.get("sha256") == card["sha256"]:
            card.update({key: old[key] for key in MEASURED_KEYS if old.get(key)})
    atomic_write(card_file, lambda tmp: Path(tmp).write_text(json.dumps(card, indent=1) + "\n"))
    return root_file, card_file, card


def make_card(
    spec: Any, meta: dict[str, Any], root_file: Path, root_dtype: str, command: str
) -> dict[str, Any]:
    """The card of a root (the keys are listed in the module docstring)."""
    history = meta.get("history", [])
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {
        "preset": spec.preset,
        "recipe": dataclasses.asdict(spec),
        "recipes": [{"recipe": spec.recipe, "classes": spec.num_classes}],
        "steps": meta["step"],
        "planned_steps": meta["total_steps"],
        "seed": spec.seed,
        "seconds": round(meta["seconds"], 1),
        "device": meta.get("device", "cpu"),
        "precision": meta.get("precision", "fp32"),
        # Cards from before the render process rendered on a thread.
        "render": meta.get("render", "thread"),
        "threads": meta.get("threads", torch.get_num_threads()),
        "load_average": [round(x, 2) for x in load] if load else None,
        "dtype": root_dtype,
        "file": root_file.name,
        "sha256": sha256_file(root_file),
        "val_accuracy": history[-1]["val_accuracy"] if history else None,
        "history": history,
        "command": command,
        "validation": {},
        "test": {},
        "transfer": {},
    }


def card_beside(root_file: str | Path) -> Path | None:
    """The card of a root file: a run's ``card.json`` next to it, or a shipped root's
    ``PRESET.json``; None when there is neither."""
    root = Path(root_file)
    for card in (root.with_name(CARD_FILE), root.with_suffix(".json")):
        if card.is_file():
            return card
    return None
