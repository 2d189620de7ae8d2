"""munet.pretrain: roots that know something, pretrained offline on procedural images.

- :mod:`munet.pretrain.generators`: formula-driven image classes (``fractal``: FractalDB's
  iterated function systems, one module per recipe in :mod:`munet.pretrain.recipes`),
  rendered in batches on the fly on the training device, disjoint from every evaluation task.
- :mod:`munet.pretrain.objectives`: what the head is asked (the class, a colour thumbnail),
  one module per objective.
- :mod:`munet.pretrain.loop`: :func:`pretrain` (resumable, locked, deterministic for a seed)
  writes a headless root (safetensors, munet component names) and its card
  (:mod:`munet.pretrain.card`); :mod:`munet.pretrain.spec` holds what decides the weights.
- :mod:`munet.pretrain.roots`: the built-in roots shipped for the presets (``VitCpu``,
  ``VitT3``): :func:`builtin_root`, :func:`builtin_roots`, :func:`verify_root`.

`munet pretrain --agent PRESET` runs the loop; `munet root` starts from the preset's built-in
root by default (docs/pretrain.md). How the shipped roots were chosen (the measurements, the
scripts, the log) is the lab's: experiments/README.md.
"""

from munet.pretrain.roots import BuiltinRoot, builtin_root, builtin_roots, verify_root

__all__ = ["BuiltinRoot", "builtin_root", "builtin_roots", "verify_root"]
