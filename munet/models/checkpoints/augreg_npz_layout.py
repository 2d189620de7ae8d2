"""The key layouts of Google's ViT `.npz` checkpoints (vit_jax augreg, big_vision): the known
key prefixes, block module names and position embedding keys, and telling a file's layout from
its keys. Shared by the reader (munet.models.checkpoints.augreg_npz) and the writer
(munet.models.checkpoints.augreg_npz_writer); the layouts are listed in the reader's docstring.
"""

from __future__ import annotations

from dataclasses import dataclass

from munet.models.checkpoints.common import CheckpointError

NPZ_PREFIXES = ("", "opt/target/", "params/", "params/img/")
BLOCK_NAMES = {
    # (first LayerNorm, attention, second LayerNorm, MLP)
    False: ("LayerNorm_0", "MultiHeadDotProductAttention_1", "LayerNorm_2", "MlpBlock_3"),
    True: ("LayerNorm_0", "MultiHeadDotProductAttention_0", "LayerNorm_1", "MlpBlock_0"),
}
POSEMBED_KEY = "Transformer/posembed_input/pos_embedding"
BIG_VISION_POSEMBED_KEY = "pos_embedding"


@dataclass(frozen=True)
class NpzLayout:
    """A `.npz` key layout (see munet.models.checkpoints.augreg_npz's docstring)."""

    prefix: str = ""
    big_vision_names: bool = False
    scanned: bool = False
    big_vision_posembed: bool = False

    def describe(self) -> str:
        return (
            f"npz(prefix={self.prefix!r}, "
            f"names={'big_vision' if self.big_vision_names else 'vit_jax'}, "
            f"blocks={'scanned' if self.scanned else 'per-layer'}, "
            f"posembed={'top-level' if self.big_vision_posembed else 'Transformer'})"
        )


def detect_npz_layout(keys: set[str], source: str = "checkpoint") -> NpzLayout:
    """Works out the layout of a set of `.npz` keys.

    Raises:
        CheckpointError: no known prefix holds `embedding/kernel`, or the blocks or position
            embedding are in no known form.
    """
    prefixes = [prefix for prefix in NPZ_PREFIXES if f"{prefix}embedding/kernel" in keys]
    if not prefixes:
        sample = sorted(keys)[:8]
        raise CheckpointError(
            f"{source}: unknown checkpoint layout: no 'embedding/kernel' under any known prefix "
            f"{list(NPZ_PREFIXES)}; first keys: {sample}"
        )
    prefix = max(prefixes, key=len)
    block_keys = [key[len(prefix) :] for key in keys if key.startswith(prefix + "Transformer/")]
    scanned = any(key.startswith("Transformer/encoderblock/") for key in block_keys)
    big_vision_names = any("MultiHeadDotProductAttention_0/" in key for key in block_keys)
    if big_vision_names and any("MultiHeadDotProductAttention_1/" in key for key in block_keys):
        raise CheckpointError(f"{source}: mixes vit_jax and big_vision block names")
    if f"{prefix}{POSEMBED_KEY}" in keys:
        big_vision_posembed = False
    elif f"{prefix}{BIG_VISION_POSEMBED_KEY}" in keys:
        big_vision_posembed = True
    else:
        raise CheckpointError(
            f"{source}: missing key {prefix + POSEMBED_KEY!r} "
            f"(nor big_vision's {prefix + BIG_VISION_POSEMBED_KEY!r})"
        )
    return NpzLayout(prefix, big_vision_names, scanned, big_vision_posembed)
