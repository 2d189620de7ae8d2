"""Writing components in Google's ViT `.npz` layout (vit_jax augreg or big_vision names, per-layer
or scan-stacked blocks, any known prefix): the inverse of munet.models.checkpoints.augreg_npz.
A hybrid's stem is written with vit_jax's names (`conv_root`, `gn_root`, `block{i}/unit{j}/...`;
kernels HWIO, group-norm scales and biases (C,)).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from munet.models.arch import VitArch
from munet.models.checkpoints.augreg_npz_layout import BLOCK_NAMES, NPZ_PREFIXES, POSEMBED_KEY
from munet.models.components import Components


def save_npz(
    path: str | Path,
    components: Components,
    arch: VitArch,
    *,
    prefix: str = "",
    big_vision_names: bool = False,
    scanned: bool = False,
) -> None:
    """Writes components in Google's `.npz` layout (the inverse of the loader).

    Args:
        path: output file.
        components: a full components mapping of `arch`.
        arch: needed for the head split of the attention kernels.
        prefix: one of NPZ_PREFIXES.
        big_vision_names: use big_vision's block module names.
        scanned: stack blocks under `Transformer/encoderblock/` with a leading depth axis.

    Raises:
        ValueError: unknown prefix, or scanned with zero blocks.
    """
    if prefix not in NPZ_PREFIXES:
        raise ValueError(f"unknown npz prefix {prefix!r}; known: {list(NPZ_PREFIXES)}")
    if scanned and arch.num_layers == 0:
        raise ValueError("a scanned checkpoint needs at least one encoder block")

    def array(tensor: torch.Tensor) -> np.ndarray:
        return tensor.detach().to("cpu", torch.float32).numpy()

    width, heads, head_dim = arch.width, arch.num_heads, arch.head_dim
    out: dict[str, np.ndarray] = {
        "embedding/kernel": array(components["embedding"]["weight"]).transpose(2, 3, 1, 0),
        "embedding/bias": array(components["embedding"]["bias"]),
        "cls": array(components["cls"]["token"]),
        POSEMBED_KEY: array(components["posembed_input"]["pos_embedding"]),
        "Transformer/encoder_norm/scale": array(components["encoder_norm"]["weight"]),
        "Transformer/encoder_norm/bias": array(components["encoder_norm"]["bias"]),
    }
    for component, tensors in components.items():
        if component == "stem_root":
            out["conv_root/kernel"] = array(tensors["conv.weight"]).transpose(2, 3, 1, 0)
            out["gn_root/scale"] = array(tensors["gn.weight"])
            out["gn_root/bias"] = array(tensors["gn.bias"])
        elif component.startswith("stem_block"):
            stage = component.removeprefix("stem_")
            for name, tensor in tensors.items():
                unit, module, leaf = name.split(".")
                if module.startswith("conv"):
                    value, npz_leaf = array(tensor).transpose(2, 3, 1, 0), "kernel"  # OIHW -> HWIO
                else:
                    value, npz_leaf = array(tensor), "scale" if leaf == "weight" else "bias"
                out[f"{stage}/{unit}/{module}/{npz_leaf}"] = value
    if "head" in components:
        out["head/kernel"] = array(components["head"]["weight"]).T
        out["head/bias"] = array(components["head"]["bias"])
    norm1, attention, norm2, mlp = BLOCK_NAMES[big_vision_names]
    blocks: list[dict[str, np.ndarray]] = []
    for index in range(arch.num_layers):
        block = components[f"encoderblock_{index}"]
        qkv_weight = array(block["attn.qkv.weight"])
        qkv_bias = array(block["attn.qkv.bias"])
        entries = {
            f"{norm1}/scale": array(block["norm1.weight"]),
            f"{norm1}/bias": array(block["norm1.bias"]),
            f"{norm2}/scale": array(block["norm2.weight"]),
            f"{norm2}/bias": array(block["norm2.bias"]),
            f"{attention}/out/kernel": array(block["attn.proj.weight"]).T.reshape(
                heads, head_dim, width
            ),
            f"{attention}/out/bias": array(block["attn.proj.bias"]),
            f"{mlp}/Dense_0/kernel": array(block["mlp.fc1.weight"]).T,
            f"{mlp}/Dense_0/bias": array(block["mlp.fc1.bias"]),
            f"{mlp}/Dense_1/kernel": array(block["mlp.fc2.weight"]).T,
            f"{mlp}/Dense_1/bias": array(block["mlp.fc2.bias"]),
        }
        for part_index, part in enumerate(("query", "key", "value")):
            rows = slice(part_index * width, (part_index + 1) * width)
            entries[f"{attention}/{part}/kernel"] = qkv_weight[rows].T.reshape(
                width, heads, head_dim
            )
            entries[f"{attention}/{part}/bias"] = qkv_bias[rows].reshape(heads, head_dim)
        blocks.append(entries)
    if scanned:
        for name in blocks[0]:
            out[f"Transformer/encoderblock/{name}"] = np.stack([block[name] for block in blocks])
    else:
        for index, entries in enumerate(blocks):
            for name, value in entries.items():
                out[f"Transformer/encoderblock_{index}/{name}"] = value
    np.savez(path, **{prefix + key: np.ascontiguousarray(value) for key, value in out.items()})
