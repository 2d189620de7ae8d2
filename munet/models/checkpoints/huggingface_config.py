"""A Hugging Face ViT's `config.json`: read, checked against what munet's ViT computes, and
applied to a checkpoint read from its weight file (munet.models.checkpoints.huggingface)."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path

from munet.models.checkpoints.common import CheckpointError, RawCheckpoint
from munet.models.vit import LAYER_NORM_EPS

logger = logging.getLogger("munet.models.checkpoints.huggingface")

CONFIG_FILE = "config.json"

# transformers' ViTConfig defaults, for fields a config.json leaves out.
_CONFIG_DEFAULTS = {
    "hidden_size": 768,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "patch_size": 16,
    "num_channels": 3,
    "hidden_act": "gelu",
    "layer_norm_eps": 1e-12,
    "qkv_bias": True,
}
# The same function as munet's tanh GELU (transformers spells it several ways).
_TANH_GELU = ("gelu_pytorch_tanh", "gelu_python_tanh", "gelu_new", "gelu_fast", "gelu_accurate")
_EXACT_GELU = ("gelu", "gelu_python")


def read_config(path: Path) -> dict:
    """Reads a transformers `config.json`.

    Raises:
        CheckpointError: unreadable, not a JSON object.
    """
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CheckpointError(f"{path}: not a readable config.json ({error})") from error
    if not isinstance(config, dict):
        raise CheckpointError(f"{path}: expected a JSON object, got {type(config).__name__}")
    return config


def check_config(config: Mapping, where: str) -> dict[str, tuple[str, int]]:
    """Checks a ViT config against what munet's ViT computes.

    Returns:
        The shapes it states (hidden_size, num_attention_heads, intermediate_size,
        patch_size) as `RawCheckpoint.declared`, which `load_checkpoint` checks against the
        architecture before any tensor. A different
    function (activation other than GELU, other than 3 input channels, another model type) is
    an error; exact GELU and another LayerNorm eps are warnings naming the difference.

    Raises:
        CheckpointError: the config describes a model munet's ViT cannot compute.
    """
    model_type = config.get("model_type")
    if model_type != "vit":
        raise CheckpointError(
            f"{where}: model_type {model_type!r}: munet reads transformers' ViT ('vit': "
            f"ViTModel, ViTForImageClassification) only"
        )

    def value(name: str):
        return config.get(name, _CONFIG_DEFAULTS[name])

    if value("num_channels") != 3:
        raise CheckpointError(
            f"{where}: num_channels {value('num_channels')!r}: munet's ViT reads RGB (3)"
        )
    activation = value("hidden_act")
    if activation in _EXACT_GELU:
        logger.warning(
            "%s: hidden_act %r is the exact (erf) GELU; munet computes Flax's tanh GELU, so "
            "outputs differ slightly from transformers' on these weights",
            where,
            activation,
        )
    elif activation not in _TANH_GELU:
        raise CheckpointError(
            f"{where}: hidden_act {activation!r}: munet's ViT computes GELU (tanh form); "
            f"expected one of {list(_TANH_GELU + _EXACT_GELU)}"
        )
    eps = value("layer_norm_eps")
    if eps != LAYER_NORM_EPS:
        logger.warning(
            "%s: layer_norm_eps %g; munet's LayerNorms use %g (Flax's), so outputs differ "
            "slightly from transformers' on these weights",
            where,
            eps,
            LAYER_NORM_EPS,
        )
    if not value("qkv_bias"):
        logger.info("%s: qkv_bias false: q/k/v biases load as zeros", where)
    return {
        field: (f"{where} {name}", value(name))
        for field, name in (
            ("width", "hidden_size"),
            ("num_heads", "num_attention_heads"),
            ("mlp_dim", "intermediate_size"),
            ("patch_size", "patch_size"),
        )
    }


def apply_config(raw: RawCheckpoint, config_path: Path) -> RawCheckpoint:
    """Checks `config_path` (`check_config`) and records what it states in `raw`.

    Raises:
        CheckpointError: unreadable config, or one munet's ViT cannot compute.
    """
    raw.declared = check_config(read_config(config_path), str(config_path))
    raw.num_heads = raw.declared["num_heads"][1]
    return raw


