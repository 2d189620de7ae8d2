"""Hugging Face transformers ViT checkpoints and `torch.save`d state dicts: files written by
transformers itself (`save_pretrained`, `torch.save(model.state_dict())`), loaded by munet and
compared with transformers' own forward on the same images."""

import json
import logging
import os

import pytest
import torch
from safetensors.torch import load_file
from transformers import ViTConfig, ViTForImageClassification, ViTModel

from munet.models import CheckpointError, VitArch, build_model, load_checkpoint, read_checkpoint
from munet.models.posembed import resize_posembed
from tests.models.conftest import random_images

# transformers' ViT made to compute munet's function (Flax's tanh GELU, LayerNorm eps 1e-6).
CONFIG = dict(
    hidden_size=32,
    num_hidden_layers=3,
    num_attention_heads=2,
    intermediate_size=64,
    image_size=16,
    patch_size=4,
    num_labels=5,
    hidden_act="gelu_pytorch_tanh",
    layer_norm_eps=1e-6,
)
ARCH = VitArch(width=32, num_layers=3, num_heads=2, mlp_dim=64, patch_size=4, num_classes=5)
IMAGE = 16


def hf_model(model_class=ViTForImageClassification, seed=0, **overrides):
    """A transformers ViT with every parameter random (its init zeroes biases and sets
    LayerNorms to 1, which would hide mapping mistakes)."""
    model = model_class(ViTConfig(**{**CONFIG, **overrides}))
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.3)
    return model.eval()


def hf_logits(model, images):
    with torch.no_grad():
        output = model(pixel_values=images)
    if isinstance(model, ViTModel):
        return output.last_hidden_state[:, 0]  # the normalised cls token
    return output.logits


def munet_logits(components, arch=ARCH, image_size=IMAGE, images=None):
    images = random_images(3, image_size) if images is None else images
    with torch.no_grad():
        return build_model(arch, image_size, components)(images)


def assert_matches(model, components, arch=ARCH):
    images = random_images(3, IMAGE)
    torch.testing.assert_close(
        munet_logits(components, arch, images=images),
        hf_logits(model, images),
        atol=1e-5,
        rtol=1e-5,
    )


def as_pytorch_model_bin(folder):
    """Turns a save_pretrained folder into the pre-safetensors form (what transformers 4 wrote
    with safe_serialization=False): the same state dict, torch.save'd as pytorch_model.bin."""
    state = load_file(str(folder / "model.safetensors"))
    os.remove(folder / "model.safetensors")
    torch.save(state, folder / "pytorch_model.bin")


@pytest.mark.parametrize("weights", ["safetensors", "pytorch_model.bin", "sharded"])
def test_image_classification_folder_gives_transformers_logits(tmp_path, weights):
    model = hf_model()
    folder = tmp_path / "vit"
    if weights == "sharded":
        model.save_pretrained(folder, max_shard_size="20KB")
        assert (folder / "model.safetensors.index.json").is_file()
    else:
        model.save_pretrained(folder)
    if weights == "pytorch_model.bin":
        as_pytorch_model_bin(folder)
        # transformers itself reads the folder back to the same model.
        reloaded = ViTForImageClassification.from_pretrained(folder).eval()
        images = random_images(2, IMAGE)
        assert torch.equal(hf_logits(reloaded, images), hf_logits(model, images))
    raw = read_checkpoint(folder)
    assert raw.layout.startswith("huggingface(") and raw.depth == 3 and raw.num_heads == 2
    assert_matches(model, load_checkpoint(folder, ARCH, IMAGE))


def test_vit_model_folder_gives_the_normalised_cls_token_and_drops_the_pooler(tmp_path, caplog):
    model = hf_model(ViTModel)  # with its pooler (Dense + tanh), which munet has no place for
    model.save_pretrained(tmp_path / "vit")
    assert "pooler.dense.weight" in load_file(str(tmp_path / "vit" / "model.safetensors"))
    headless = ARCH.replace(num_classes=0)
    with caplog.at_level(logging.INFO, logger="munet.models.checkpoints"):
        components = load_checkpoint(tmp_path / "vit", headless, IMAGE)
    assert "head" not in components
    assert "pooler.dense.weight" in caplog.text
    assert_matches(model, components, headless)


def test_weight_file_alone_is_read_and_its_folders_config_checked(tmp_path):
    model = hf_model()
    model.save_pretrained(tmp_path / "vit")
    file = tmp_path / "vit" / "model.safetensors"
    assert_matches(model, load_checkpoint(file, ARCH, IMAGE))
    assert read_checkpoint(file).declared["mlp_dim"][1] == 64
    with pytest.raises(CheckpointError, match="intermediate_size is 64, the arch expects mlp_dim"):
        load_checkpoint(file, ARCH.replace(mlp_dim=48), IMAGE)


def test_torch_saved_state_dicts_with_transformers_module_names(tmp_path):
    model = hf_model()
    state = model.state_dict()
    # transformers >= 5 names blocks differently in memory than in its saved files.
    assert any(".attention.q_proj." in key for key in state)
    plain, wrapped, ddp = tmp_path / "vit.pth", tmp_path / "ckpt.pt", tmp_path / "ddp.bin"
    torch.save(state, plain)
    torch.save({"model": state, "epoch": 3, "note": "x"}, wrapped)
    torch.save({f"module.{key}": value for key, value in state.items()}, ddp)
    for path in (plain, wrapped, ddp):
        assert read_checkpoint(path).layout == "torch(huggingface)"
        assert_matches(model, load_checkpoint(path, ARCH, IMAGE))


def test_fewer_layers_than_the_file_equals_transformers_with_fewer_layers(tmp_path):
    model = hf_model()
    model.save_pretrained(tmp_path / "vit")
    one_layer = ARCH.replace(num_layers=1)
    components = load_checkpoint(tmp_path / "vit", one_layer, IMAGE)
    assert [name for name in components if name.startswith("encoderblock_")] == ["encoderblock_0"]
    truncated = ViTForImageClassification.from_pretrained(tmp_path / "vit", num_hidden_layers=1)
    assert_matches(truncated.eval(), components, one_layer)
    with pytest.raises(CheckpointError, match="asks for 4 encoder blocks, the checkpoint has 3"):
        load_checkpoint(tmp_path / "vit", ARCH.replace(num_layers=4), IMAGE)


def test_position_embedding_resized_to_the_image_size(tmp_path):
    model = hf_model()
    model.save_pretrained(tmp_path / "vit")
    components = load_checkpoint(tmp_path / "vit", ARCH, 24)  # grid 4x4 -> 6x6
    posembed = model.vit.embeddings.position_embeddings.detach()
    expected = resize_posembed(posembed, 6)
    assert torch.equal(components["posembed_input"]["pos_embedding"], expected)
    assert munet_logits(components, image_size=24).shape == (3, 5)


def test_head_replaced_unless_the_class_count_matches(tmp_path):
    model = hf_model()
    model.save_pretrained(tmp_path / "vit")
    kept = load_checkpoint(tmp_path / "vit", ARCH, IMAGE)
    assert torch.equal(kept["head"]["weight"], model.classifier.weight.detach())
    other = load_checkpoint(tmp_path / "vit", ARCH.replace(num_classes=7), IMAGE)
    assert other["head"]["weight"].shape == (7, 32) and not other["head"]["weight"].any()
    assert "head" not in load_checkpoint(tmp_path / "vit", ARCH.replace(num_classes=0), IMAGE)


def test_shapes_that_do_not_fit_name_the_config_field_or_the_first_key(tmp_path):
    model = hf_model()
    model.save_pretrained(tmp_path / "vit")
    with pytest.raises(CheckpointError, match="hidden_size is 32, the arch expects width 16"):
        load_checkpoint(tmp_path / "vit", ARCH.replace(width=16), IMAGE)
    with pytest.raises(CheckpointError, match="num_attention_heads is 2, the arch expects"):
        load_checkpoint(tmp_path / "vit", ARCH.replace(num_heads=4), IMAGE)
    # Without a config, the first tensor that does not fit is named with both shapes.
    torch.save(model.state_dict(), tmp_path / "vit.pth")
    with pytest.raises(
        CheckpointError,
        match=r"key 'vit.layers.0.mlp.fc1.weight' gives encoderblock_0.mlp.fc1.weight of "
        r"shape \(64, 32\), expected \(48, 32\)",
    ):
        load_checkpoint(tmp_path / "vit.pth", ARCH.replace(mlp_dim=48), IMAGE)


def test_exact_gelu_and_other_eps_load_with_a_warning_naming_the_difference(tmp_path, caplog):
    model = hf_model(hidden_act="gelu", layer_norm_eps=1e-12)  # transformers' defaults
    model.save_pretrained(tmp_path / "vit")
    with caplog.at_level(logging.WARNING, logger="munet.models.checkpoints"):
        components = load_checkpoint(tmp_path / "vit", ARCH, IMAGE)
    assert "hidden_act 'gelu' is the exact (erf) GELU" in caplog.text
    assert "layer_norm_eps 1e-12" in caplog.text
    images = random_images(3, IMAGE)
    ours = munet_logits(components, images=images)
    assert not torch.allclose(ours, hf_logits(model, images), atol=1e-5, rtol=1e-5)
    # The difference is those two settings only: transformers with munet's reproduces it.
    as_munet = ViTForImageClassification.from_pretrained(
        tmp_path / "vit", hidden_act="gelu_new", layer_norm_eps=1e-6
    ).eval()
    torch.testing.assert_close(ours, hf_logits(as_munet, images), atol=1e-5, rtol=1e-5)


def test_no_qkv_bias_loads_as_zero_biases(tmp_path):
    model = hf_model(qkv_bias=False)
    model.save_pretrained(tmp_path / "vit")
    components = load_checkpoint(tmp_path / "vit", ARCH, IMAGE)
    assert not components["encoderblock_1"]["attn.qkv.bias"].any()
    assert_matches(model, components)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"model_type": "deit"}, "model_type 'deit'"),
        ({"hidden_act": "relu"}, "hidden_act 'relu'"),
        ({"num_channels": 1}, "num_channels 1"),
    ],
)
def test_configs_munet_cannot_compute_are_refused(tmp_path, change, message):
    hf_model().save_pretrained(tmp_path / "vit")
    config_path = tmp_path / "vit" / "config.json"
    config = json.loads(config_path.read_text())
    config_path.write_text(json.dumps({**config, **change}))
    with pytest.raises(CheckpointError, match=message):
        read_checkpoint(tmp_path / "vit")


def test_missing_and_unknown_keys_are_named(tmp_path):
    model = hf_model()
    model.save_pretrained(tmp_path / "vit")
    file = tmp_path / "vit" / "model.safetensors"
    state = load_file(str(file))
    from safetensors.torch import save_file

    del state["vit.encoder.layer.1.attention.attention.key.weight"]
    save_file(state, str(file))
    with pytest.raises(
        CheckpointError, match="missing key 'vit.encoder.layer.1.attention.attention.key.weight'"
    ):
        read_checkpoint(tmp_path / "vit")
    state = load_file(str(file)) | {"vit.encoder.layer.0.layer_scale.weight": torch.ones(32)}
    save_file(state, str(file))
    with pytest.raises(CheckpointError, match="no place for.*layer_scale"):
        read_checkpoint(tmp_path / "vit")


def test_folders_and_torch_files_that_are_not_checkpoints(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("x")
    with pytest.raises(CheckpointError, match=r"save_pretrained folder with config.json.*notes"):
        read_checkpoint(tmp_path / "empty")
    (tmp_path / "empty" / "config.json").write_text("{}")
    with pytest.raises(CheckpointError, match="no weight file; expected one of"):
        read_checkpoint(tmp_path / "empty")
    (tmp_path / "garbage.pt").write_bytes(b"not a torch file")
    with pytest.raises(CheckpointError, match="not a torch state dict"):
        read_checkpoint(tmp_path / "garbage.pt")
    torch.save(torch.nn.Linear(2, 2), tmp_path / "module.pth")  # a pickled module: refused
    with pytest.raises(CheckpointError, match="Unsupported global.*never a pickled model"):
        read_checkpoint(tmp_path / "module.pth")
    torch.save({"weights": [1, 2]}, tmp_path / "list.pth")
    with pytest.raises(CheckpointError, match="key 'weights' holds a list, not a tensor"):
        read_checkpoint(tmp_path / "list.pth")
    torch.save({"backbone.conv.weight": torch.zeros(2)}, tmp_path / "other.pth")
    with pytest.raises(
        CheckpointError, match=r"unknown state-dict layout.*timm.*huggingface.*munet.*backbone"
    ):
        read_checkpoint(tmp_path / "other.pth")


def test_checkpoint_inspect_shows_what_munet_reads(tmp_path, capsys):
    from munet.cli import main

    hf_model().save_pretrained(tmp_path / "vit")
    assert main(["checkpoint", "inspect", str(tmp_path / "vit")]) == 0
    out = capsys.readouterr().out
    assert "layout: huggingface(model.safetensors)" in out and "encoder blocks: 3" in out
    assert "stated: mlp_dim 64" in out and "head: 5 classes" in out
    assert "(96, 32)" in out and "attention.attention.{query,key,value}.weight" in out
    assert "encoderblock_1" not in out  # block 0 stands for all
    assert main(["checkpoint", "inspect", str(tmp_path / "missing")]) == 2
    (tmp_path / "garbage.bin").write_bytes(b"nope")
    assert main(["checkpoint", "inspect", str(tmp_path / "garbage.bin")]) == 2
    assert "not a torch state dict" in capsys.readouterr().err


def test_a_wrong_q_k_v_inner_width_names_the_key_and_both_shapes(tmp_path):
    from safetensors.torch import save_file

    hf_model().save_pretrained(tmp_path / "vit")
    file = tmp_path / "vit" / "model.safetensors"
    state = load_file(str(file))
    state["vit.encoder.layer.1.attention.attention.key.weight"] = torch.ones(32, 16)
    save_file(state, str(file))
    with pytest.raises(
        CheckpointError,
        match=r"key 'vit.encoder.layer.1.attention.attention.key.weight' has shape \(32, 16\), "
        r"expected \(32, 32\) as 'vit.encoder.layer.1.attention.attention.query.weight'",
    ):
        load_checkpoint(tmp_path / "vit", ARCH, IMAGE)
    state["vit.encoder.layer.1.attention.attention.key.weight"] = torch.ones(32, 32)
    state["vit.encoder.layer.1.attention.attention.value.bias"] = torch.ones(16)
    save_file(state, str(file))
    with pytest.raises(CheckpointError, match=r"value.bias' has shape \(16,\), expected \(32,\)"):
        load_checkpoint(tmp_path / "vit", ARCH, IMAGE)


def test_a_missing_tensor_is_named_by_the_files_key(tmp_path):
    from safetensors.torch import save_file

    model = hf_model()
    model.save_pretrained(tmp_path / "vit")
    file = tmp_path / "vit" / "model.safetensors"
    state = load_file(str(file))
    del state["vit.encoder.layer.1.layernorm_before.weight"]
    save_file(state, str(file))
    with pytest.raises(CheckpointError, match=r"missing key 'vit.encoder.layer.1."
                                              r"layernorm_before.weight' \(munet's encoderblock_1"):
        load_checkpoint(tmp_path / "vit", ARCH, IMAGE)
    # transformers >= 5 in-memory names, no `vit.` prefix (a ViTModel's torch.save).
    headless = hf_model(ViTModel)
    state = {k: v for k, v in headless.state_dict().items() if not k.startswith("layernorm.")}
    torch.save(state, tmp_path / "vit.pth")
    with pytest.raises(CheckpointError, match="missing key 'layernorm.weight'"):
        load_checkpoint(tmp_path / "vit.pth", ARCH.replace(num_classes=0), IMAGE)
