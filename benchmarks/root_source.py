"""Which root model a benchmark grows from: ``--root random_init|pretrained|FILE``.

- ``random_init``: the preset's freshly initialised root (munet.agents.root);
- ``pretrained``: the preset's built-in pretrained root (munet.pretrain's shipped weights);
- a file: a checkpoint munet reads (augreg ``.npz``, or safetensors with munet's or timm's
  names), as ``munet root --root checkpoint --set checkpoint_path=FILE`` would.

The last two become a ``checkpoint`` root model with ``checkpoint_path`` set, so a benchmark's
agents, baselines and exported models all read the same file.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass


@dataclass(frozen=True)
class RootSource:
    """A resolved ``--root``: the root model kind and the config overrides it needs."""

    spec: str  # What the user gave.
    kind: str  # ``random_init`` or ``checkpoint`` (munet.agents.root.ROOT_KINDS).
    checkpoint: str = ""  # Absolute path of the weights file (checkpoint kind).

    @property
    def overrides(self) -> list[str]:
        return [f"checkpoint_path={self.checkpoint}"] if self.checkpoint else []

    @property
    def cli_args(self) -> list[str]:
        """The arguments of ``munet root`` that create this root."""
        if not self.checkpoint:
            return ["--root", "random_init"]
        return ["--root", "checkpoint", "--set", f"checkpoint_path={self.checkpoint}"]

    def describe(self) -> str:
        """One line naming the root and, for a file, its size and sha256 prefix."""
        if not self.checkpoint:
            return f"root {self.spec}"
        digest = hashlib.sha256()
        with open(self.checkpoint, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        size = os.path.getsize(self.checkpoint)
        sha = digest.hexdigest()[:12]
        return f"root {self.spec}: {self.checkpoint} ({size:,} bytes, sha256 {sha}...)"


def resolve_root(spec: str, preset: str) -> RootSource:
    """The root model ``spec`` names for ``preset``.

    Raises:
        SystemExit: ``pretrained`` where munet has no built-in root for the preset (or no
            munet.pretrain), or a file that does not exist.
    """
    if spec == "random_init":
        return RootSource(spec, "random_init")
    if spec == "pretrained":
        return RootSource(spec, "checkpoint", _builtin_root_file(preset))
    if not os.path.isfile(spec):
        raise SystemExit(
            f"--root {spec!r}: expected random_init, pretrained or an existing checkpoint file "
            "(.safetensors or .npz)"
        )
    return RootSource(spec, "checkpoint", os.path.abspath(spec))


def _builtin_root_file(preset: str) -> str:
    try:
        from munet.pretrain.roots import builtin_root, verify_root
    except ImportError:
        raise SystemExit(
            "--root pretrained: this munet has no built-in pretrained roots (munet.pretrain); "
            "give a checkpoint file instead (--root FILE)"
        ) from None
    root = builtin_root(preset)
    if root is None:
        raise SystemExit(
            f"--root pretrained: munet ships no pretrained root for {preset} (make one with "
            "`munet pretrain`, or give its file: --root FILE)"
        )
    verify_root(root)
    return str(root.file)
