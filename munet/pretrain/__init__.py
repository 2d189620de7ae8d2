"""munet.pretrain: roots that know something, pretrained offline on procedural images.

- :mod:`munet.pretrain.generators`: formula-driven image classes (``fractal``: FractalDB-style
  iterated function systems; ``contours``: radial contours), rendered in batches on the fly,
  disjoint from every evaluation task.
- :mod:`munet.pretrain.loop`: :func:`pretrain` (resumable, deterministic for a seed) writes a
  headless root (safetensors, munet component names) and its card (JSON).
- :mod:`munet.pretrain.roots`: the built-in roots shipped for the presets (``VitCpu``,
  ``VitT3``): :func:`builtin_root`, :func:`builtin_roots`, :func:`verify_root`.

`munet pretrain --agent PRESET` runs the loop; `munet root` starts from the preset's built-in
root by default (docs/pretrain.md).
"""

from munet.pretrain.roots import BuiltinRoot, builtin_root, builtin_roots, verify_root

__all__ = ["BuiltinRoot", "builtin_root", "builtin_roots", "verify_root"]
