"""The built-in pretrained roots shipped with munet (package data in ``munet/pretrain/roots``).

Each preset with one has ``roots/<PRESET>.safetensors`` (munet component names, headless) and
``roots/<PRESET>.json``, its card (:func:`munet.pretrain.loop.make_card`): the command that
made it, steps, seed, wall time, machine load, sha256 of the file and transfer figures.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOTS_DIR = Path(__file__).resolve().parent / "roots"


@dataclass(frozen=True)
class BuiltinRoot:
    """A shipped root: its preset, weights file and card."""

    preset: str
    file: Path
    card_file: Path

    def card(self) -> dict[str, Any]:
        return json.loads(self.card_file.read_text())


def builtin_roots(directory: Path | None = None) -> dict[str, BuiltinRoot]:
    """The shipped roots by preset name (those with both a weights file and a card) in
    ``directory`` (default: :data:`ROOTS_DIR`)."""
    roots = {}
    for card_file in sorted(Path(directory or ROOTS_DIR).glob("*.json")):
        file = card_file.with_suffix(".safetensors")
        if file.is_file():
            roots[card_file.stem] = BuiltinRoot(card_file.stem, file, card_file)
    return roots


def builtin_root(preset: str) -> BuiltinRoot | None:
    """The shipped root of ``preset``, or None when it has none."""
    return builtin_roots().get(preset)


def verify_root(root: BuiltinRoot) -> None:
    """Checks the weights file against its card's sha256.

    Raises:
        ValueError: the file's hash differs from the card's (a damaged or replaced file).
    """
    expected = root.card().get("sha256")
    actual = sha256_file(root.file)
    if actual != expected:
        raise ValueError(
            f"built-in root {root.file}: sha256 {actual} differs from its card's {expected}"
        )


def sha256_file(path: str | Path) -> str:
    """The hex sha256 of a file (read in 1 MiB blocks)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
