"""Checkpoint edges: timm files without q/k/v biases or pooling by the patch-token mean, a
missing tensor named by the file's own key, and the `Vit` / `VitB` presets' roots built from a
file (one block of the real width each: the file layout and shapes of the full model, a
fraction of its bytes)."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file, save_file

from munet.models import (
    AssembledVit,
    CheckpointError,
    VitArch,
    load_checkpoint,
    save_npz,
    save_safetensors,
)
from tests.models.conftest import TINY, TINY_IMAGE, random_components, random_images


def _timm_file(tmp_path, components, drop=(), add=None):
    path = tmp_path / "timm.safetensors"
    save_safetensors(path, components, naming="timm")
    state = load_file(str(path))
    for key in [k for k in state if any(k.endswith(d) or k == d for d in drop)]:
        del state[key]
    state.update(add or {})
    save_file(state, str(path))
    return path


def _logits(components):
    return AssembledVit(TINY, TINY_IMAGE, components)(random_images(2, TINY_IMAGE))


def test_timm_without_qkv_bias_loads_as_zero_biases(tmp_path, tiny_components):
    path = _timm_file(tmp_path, tiny_components, drop=["attn.qkv.bias"])
    loaded = load_checkpoint(path, TINY, TINY_IMAGE)
    for block in ("encoderblock_0", "encoderblock_1"):
        assert not loaded[block]["attn.qkv.bias"].any()
        assert torch.equal(loaded[block]["attn.qkv.weight"],
                           tiny_components[block]["attn.qkv.weight"])
    zero_bias = {name: dict(tensors) for name, tensors in tiny_components.items()}
    for block in ("encoderblock_0", "encoderblock_1"):
        zero_bias[block]["attn.qkv.bias"] = torch.zeros_like(
            zero_bias[block]["attn.qkv.bias"]
        )
    assert torch.equal(_logits(loaded), _logits(zero_bias))


def test_timm_fc_norm_model_is_refused_naming_the_pooling(tmp_path, tiny_components):
    # global_pool='avg' with timm's default fc_norm: `norm` is an identity, `fc_norm` the
    # norm before the head.
    norm = tiny_components["encoder_norm"]
    path = _timm_file(tmp_path, tiny_components, drop=["norm.weight", "norm.bias"],
                      add={"fc_norm.weight": norm["weight"], "fc_norm.bias": norm["bias"]})
    with pytest.raises(CheckpointError, match=r"fc_norm \(global_pool='avg'.*cls token"):
        load_checkpoint(path, TINY, TINY_IMAGE)


@pytest.mark.parametrize("pool_in", ["top", "model_args"])
def test_timm_avg_pool_without_fc_norm_is_told_apart_by_its_config(
    tmp_path, tiny_components, pool_in
):
    """global_pool='avg', fc_norm=False: the keys are a cls-token ViT's; timm's config.json
    (save_pretrained / push_to_hub) is what says how it pools."""
    path = _timm_file(tmp_path, tiny_components)
    config = {"architecture": "vit_tiny_patch16_224", "num_classes": 5}
    if pool_in == "top":
        config["global_pool"] = "avg"
    else:
        config["model_args"] = {"global_pool": "avg", "fc_norm": False}
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="global_pool 'avg'.*different function"):
        load_checkpoint(path, TINY, TINY_IMAGE)
    folder = tmp_path / "folder"  # the same as a save_pretrained folder
    folder.mkdir()
    path.rename(folder / "model.safetensors")
    (tmp_path / "config.json").rename(folder / "config.json")
    with pytest.raises(CheckpointError, match="global_pool 'avg'"):
        load_checkpoint(folder, TINY, TINY_IMAGE)
    (folder / "config.json").write_text(json.dumps({**config, "global_pool": "token",
                                                    "model_args": {}}))
    assert torch.equal(_logits(load_checkpoint(folder, TINY, TINY_IMAGE)),
                       _logits(tiny_components))


def test_a_missing_tensor_is_named_by_the_files_key(tmp_path, tiny_components):
    path = _timm_file(tmp_path, tiny_components, drop=["blocks.1.mlp.fc2.bias"])
    with pytest.raises(CheckpointError, match=r"missing key 'blocks.1.mlp.fc2.bias' "
                                              r"\(munet's encoderblock_1.mlp.fc2.bias"):
        load_checkpoint(path, TINY, TINY_IMAGE)
    path = _timm_file(tmp_path, tiny_components, drop=["norm.weight"])
    with pytest.raises(CheckpointError, match="missing key 'norm.weight'"):
        load_checkpoint(path, TINY, TINY_IMAGE)
    with pytest.raises(CheckpointError, match="missing blocks.2.norm1.weight"):
        load_checkpoint(path, TINY.replace(num_layers=3), TINY_IMAGE)


@pytest.mark.parametrize(
    "preset, writer",
    [("Vit", "npz"), ("VitB", "timm")],
)
def test_the_vit_and_vitb_roots_are_built_from_a_file(tmp_path, preset, writer):
    """The preset's root from a file of its model size (L/16, B/16) in the layout its docs
    name: the full width and file layout, one encoder block (`--set num_layers=1`) so that
    the file stays a few tens of MB."""
    from munet.agents.root import create_root_model
    from munet.config import apply_overrides, get_preset

    base = get_preset(preset)
    image = int(base.hparams_defaults["ds_image_size"])
    arch = VitArch.from_size(base.model, num_layers=1, num_classes=0)
    components = random_components(arch, 224, seed=3)  # files are 224 px: resized on load
    path = tmp_path / ("root.npz" if writer == "npz" else "root.safetensors")
    if writer == "npz":
        save_npz(path, components, arch)
    else:
        save_safetensors(path, components, naming="timm")
    config = apply_overrides(base, [f"checkpoint_path={path}", "num_layers=1"])
    root = create_root_model(config, str(tmp_path / "state"), "checkpoint")
    tensors = {c.name: c.tensors for c in root.components}
    assert tensors["encoderblock_0"]["attn.qkv.weight"].shape == (3 * arch.width, arch.width)
    for name in ("embedding", "cls", "encoderblock_0", "encoder_norm"):
        for key, value in components[name].items():
            assert torch.equal(tensors[name][key], value), (name, key)
    grid = image // arch.patch_size
    assert tensors["posembed_input"]["pos_embedding"].shape == (1, 1 + grid * grid, arch.width)
    assert "head" not in tensors  # headless root: each task gets its own head
