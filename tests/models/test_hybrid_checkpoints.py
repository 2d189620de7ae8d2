"""Hybrid (R+ViT) checkpoints: timm's own hybrid ViTs, built by the real library with random
weights, saved as safetensors and loaded by munet, give timm's logits; augreg-layout `.npz`
files written by munet load in timm's own augreg loader and in munet alike, with the same
logits; the writers round-trip; a plain checkpoint for a hybrid arch (and the reverse, and
another stem) is refused.

timm is installed without torchvision (tests/models/timm_stub.py says why and what is
stubbed). timm's hybrids compute vit_jax's function up to two epsilons and the GELU: its
group norms use eps 1e-5 (vit_jax 1e-6), its weight standardisation divides by
sqrt(var + 1e-8) (vit_jax: std + 1e-5), and its MLP uses exact GELU (vit_jax: tanh). The
models here are built with timm's `act_layer='gelu_tanh'`, so what remains is the epsilons
and float rounding: at most ~7e-6 of the largest logit on these models. TOLERANCE (1e-4 of
the largest logit) allows that with margin, and `test_tolerance_catches_a_wrong_stem` shows
that a wrong mapping or padding misses it by more than two orders of magnitude.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from munet.cli import main
from munet.models import (
    CheckpointError,
    VitArch,
    build_model,
    load_checkpoint,
    save_npz,
    save_safetensors,
    vit_size,
)
from munet.models.arch import StemArch
from tests.models.conftest import random_components, random_images
from tests.models.timm_stub import import_timm

try:
    timm = import_timm()
except ImportError as error:  # `make test` installs timm (Makefile); a bare venv may not have it
    pytest.skip(f"timm is not installed: {error}", allow_module_level=True)

from timm.models.vision_transformer_hybrid import (  # noqa: E402
    _create_vision_transformer_hybrid,
    _resnetv2,
)

TOLERANCE = 1e-4  # of the largest logit (see the module docstring)
# Transformer shapes of the tiny models (timm's embed_dim, depth, num_heads, mlp_ratio 2).
WIDTH, DEPTH, HEADS, CLASSES = 32, 2, 2, 5
# Model kinds: (timm builder, munet arch, image size). The root-only stem is timm's registered
# R+Ti/16 (vit_tiny_r_s16_p8_224) with 2 x 2 patches; the staged one timm's ResNetV2 with two
# stages (1 and 2 units), built by the helper timm's R26/R50 hybrids use.
ROOT = VitArch(WIDTH, DEPTH, HEADS, 2 * WIDTH, 2, CLASSES, StemArch(64))
STAGED = VitArch(WIDTH, DEPTH, HEADS, 2 * WIDTH, 1, CLASSES, StemArch(64, stages=(1, 2)))
KINDS = {"root": (ROOT, 72), "stages": (STAGED, 64)}  # 72: uneven "SAME" padding in the root


def timm_model(kind: str, seed: int = 0) -> torch.nn.Module:
    """A timm hybrid of `kind` with every parameter random (timm's init sets group norms to
    1 / 0 and zero biases, which would hide mapping mistakes), in eval mode."""
    arch, image = KINDS[kind]
    common = dict(
        img_size=image, embed_dim=WIDTH, depth=DEPTH, num_heads=HEADS, mlp_ratio=2,
        num_classes=CLASSES, act_layer="gelu_tanh",
    )  # fmt: skip
    if kind == "root":
        model = timm.create_model("vit_tiny_r_s16_p8_224", pretrained=False, patch_size=2, **common)
    else:
        model = _create_vision_transformer_hybrid(
            "vit_small_r26_s32_224", backbone=_resnetv2(arch.stem.stages), **common
        )
    randomise(model, seed)
    return model.eval()


def randomise(model: torch.nn.Module, seed: int) -> None:
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            noise = torch.randn(parameter.shape, generator=generator)
            if parameter.dim() == 1 and "norm" in name and name.endswith("weight"):
                parameter.copy_(1 + 0.5 * noise)  # norm scales around 1
            elif parameter.dim() >= 2 and name not in ("cls_token", "pos_embed"):
                parameter.copy_(noise * parameter[0].numel() ** -0.5)  # fan-in scaled
            else:
                parameter.copy_(0.5 * noise)


def timm_logits(model: torch.nn.Module, images: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return model(images)


def munet_logits(arch: VitArch, image: int, components, images: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return build_model(arch, image, components)(images)


def relative_error(ours: torch.Tensor, reference: torch.Tensor) -> float:
    return float((ours - reference).abs().max() / reference.abs().max())


def save_timm_state(model: torch.nn.Module, path) -> None:
    """timm's own state dict, as a safetensors file (what `save_file(model.state_dict())`
    and timm's `save_pretrained` write)."""
    save_file({key: value.contiguous() for key, value in model.state_dict().items()}, str(path))


@pytest.mark.parametrize("kind", list(KINDS))
def test_timm_hybrid_safetensors_loads_equal_to_timm_forward(tmp_path, kind):
    arch, image = KINDS[kind]
    model = timm_model(kind)
    path = tmp_path / "timm.safetensors"
    save_timm_state(model, path)
    images = random_images(3, image)
    loaded = load_checkpoint(path, arch, image)
    error = relative_error(munet_logits(arch, image, loaded, images), timm_logits(model, images))
    assert error < TOLERANCE
    assert list(loaded)[: len(arch.stem.stages) + 1] == [
        "stem_root", *(f"stem_block{index + 1}" for index in range(len(arch.stem.stages)))
    ]


def test_timm_state_dict_names_are_the_documented_ones(tmp_path):
    root_only = set(timm_model("root").state_dict())
    staged = set(timm_model("stages").state_dict())
    assert {"patch_embed.backbone.conv.weight", "patch_embed.backbone.norm.bias"} <= root_only
    assert {
        "patch_embed.backbone.stem.conv.weight",
        "patch_embed.backbone.stem.norm.weight",
        "patch_embed.backbone.stages.0.blocks.0.downsample.conv.weight",
        "patch_embed.backbone.stages.1.blocks.1.norm3.bias",
        "patch_embed.proj.weight",
    } <= staged
    assert not any(".blocks.1.downsample" in key for key in staged)  # only first units project


@pytest.mark.parametrize("gn_shape", ["flat", "flax-nhwc"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_augreg_npz_loads_equal_in_timm_and_munet(tmp_path, kind, gn_shape):
    """An `.npz` with vit_jax's names, read by timm's own augreg loader (`load_pretrained`)
    and by munet: the same logits. Older Flax stored group-norm scales and biases as
    (1, 1, 1, C) (vit_jax's checkpoint.load squeezes them); both shapes load."""
    arch, image = KINDS[kind]
    components = random_components(arch, image, seed=3)
    path = tmp_path / "R_x.npz"
    save_npz(path, components, arch)
    if gn_shape == "flax-nhwc":
        with np.load(path) as npz:
            arrays = dict(npz)
        for key in [key for key in arrays if "/gn" in f"/{key}" and key[-5:] in ("scale", "/bias")]:
            arrays[key] = arrays[key].reshape(1, 1, 1, -1)
        assert arrays["gn_root/scale"].shape == (1, 1, 1, 64)
        np.savez(path, **arrays)
    model = timm_model(kind, seed=9)  # other values everywhere: the loader must replace them all
    model.load_pretrained(str(path))
    images = random_images(2, image)
    loaded = load_checkpoint(path, arch, image)
    ours = munet_logits(arch, image, loaded, images)
    assert relative_error(ours, timm_logits(model, images)) < TOLERANCE
    assert torch.equal(ours, munet_logits(arch, image, components, images))


def test_augreg_npz_keys_follow_vit_jax(tmp_path):
    components = random_components(STAGED, 64)
    path = tmp_path / "R_x.npz"
    save_npz(path, components, STAGED)
    with np.load(path) as npz:
        shapes = {key: npz[key].shape for key in npz.files}
    assert shapes["conv_root/kernel"] == (7, 7, 3, 64)  # HWIO
    assert shapes["gn_root/scale"] == (64,)
    assert shapes["block1/unit1/conv_proj/kernel"] == (1, 1, 64, 256)
    assert shapes["block2/unit1/conv2/kernel"] == (3, 3, 128, 128)
    assert shapes["block2/unit2/gn3/bias"] == (512,)
    assert shapes["embedding/kernel"] == (1, 1, 512, WIDTH)
    assert "block2/unit2/conv_proj/kernel" not in shapes


@pytest.mark.parametrize("kind", list(KINDS))
def test_timm_naming_writes_timm_state_dicts(tmp_path, kind):
    """save_safetensors(naming="timm") of a hybrid loads into timm's model strictly (every key
    and shape is timm's) and gives munet's logits there."""
    arch, image = KINDS[kind]
    components = random_components(arch, image, seed=4)
    path = tmp_path / "timm.safetensors"
    save_safetensors(path, components, naming="timm")
    model = timm_model(kind)
    model.load_state_dict(load_file(str(path)), strict=True)
    images = random_images(2, image)
    reference = munet_logits(arch, image, components, images)
    assert relative_error(reference, timm_logits(model, images)) < TOLERANCE


def test_inspect_lists_the_stem_first_by_file_key(tmp_path, capsys):
    path = tmp_path / "timm.safetensors"
    save_timm_state(timm_model("stages"), path)
    assert main(["checkpoint", "inspect", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    tensors = [line.split()[0] for line in lines if line.startswith("  ")]
    assert tensors[:3] == ["stem_root.conv.weight", "stem_root.gn.bias", "stem_root.gn.weight"]
    assert tensors.index("stem_block2.unit1.conv1.weight") < tensors.index("embedding.weight")
    assert any("patch_embed.backbone.stages.1.blocks.1.norm3.bias" in line for line in lines)


@pytest.mark.parametrize("writer", ["npz", "timm", "munet"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_round_trip_is_exact(tmp_path, kind, writer):
    arch, image = KINDS[kind]
    components = random_components(arch, image, seed=5)
    if writer == "npz":
        path = tmp_path / "ckpt.npz"
        save_npz(path, components, arch)
    else:
        path = tmp_path / "ckpt.safetensors"
        save_safetensors(path, components, naming=writer)
    loaded = load_checkpoint(path, arch, image)
    assert list(loaded) == list(components)
    for component, tensors in components.items():
        assert list(loaded[component]) == list(tensors)
        for name, tensor in tensors.items():
            assert torch.equal(loaded[component][name], tensor), f"{component}.{name}"


def test_hybrid_loads_at_another_image_size_with_a_resized_posembed(tmp_path):
    model = timm_model("stages")
    path = tmp_path / "timm.safetensors"
    save_timm_state(model, path)
    loaded = load_checkpoint(path, STAGED, 96)  # stride 8: grid 8 -> 12
    assert loaded["posembed_input"]["pos_embedding"].shape == (1, 1 + 12 * 12, WIDTH)
    assert torch.equal(loaded["stem_root"]["conv.weight"], model.state_dict()[
        "patch_embed.backbone.stem.conv.weight"])  # fmt: skip


PLAIN = VitArch(WIDTH, DEPTH, HEADS, 2 * WIDTH, 8, CLASSES)


@pytest.mark.parametrize("writer", ["npz", "timm", "munet"])
def test_plain_checkpoint_for_a_hybrid_arch_is_refused_naming_the_missing_stem(tmp_path, writer):
    components = random_components(PLAIN, 64)
    path = tmp_path / ("plain.npz" if writer == "npz" else "plain.safetensors")
    if writer == "npz":
        save_npz(path, components, PLAIN)
    else:
        save_safetensors(path, components, naming=writer)
    staged_key = {
        "npz": "block1/unit1/conv1/kernel",
        "timm": "patch_embed.backbone.stages.0.blocks.0.conv1.weight",
        "munet": "stem_block1.unit1.conv1.weight",
    }[writer]
    root_key = {
        "npz": "conv_root/kernel",
        "timm": "patch_embed.backbone.conv.weight",
        "munet": "stem_root.conv.weight",
    }[writer]
    with pytest.raises(CheckpointError, match=rf"hybrid ViT.*no stem.*missing key '{staged_key}'"):
        load_checkpoint(path, STAGED, 64)
    with pytest.raises(CheckpointError, match=rf"the root alone.*missing key '{root_key}'"):
        load_checkpoint(path, ROOT, 64)


@pytest.mark.parametrize("writer", ["npz", "timm", "munet"])
def test_hybrid_checkpoint_for_a_plain_arch_is_refused(tmp_path, writer):
    components = random_components(STAGED, 64)
    path = tmp_path / ("hybrid.npz" if writer == "npz" else "hybrid.safetensors")
    if writer == "npz":
        save_npz(path, components, STAGED)
    else:
        save_safetensors(path, components, naming=writer)
    plain = PLAIN.replace(patch_size=1)
    with pytest.raises(CheckpointError, match=r"hybrid ViT checkpoint.*\(1, 2\).*plain arch"):
        load_checkpoint(path, plain, 64)


def test_other_stages_are_refused(tmp_path):
    path = tmp_path / "timm.safetensors"
    save_timm_state(timm_model("stages"), path)
    other = STAGED.replace(stem=StemArch(64, stages=(1, 1)))
    with pytest.raises(CheckpointError, match=r"stem is root \+ stages \(1, 2\).*arch's root \+ "):
        load_checkpoint(path, other, 64)
    with pytest.raises(CheckpointError, match=r"stem is root \+ stages .*the root alone"):
        load_checkpoint(path, STAGED.replace(stem=StemArch(64), patch_size=2), 64)


def test_a_projection_the_arch_has_not_is_refused(tmp_path):
    path = tmp_path / "timm.safetensors"
    state = timm_model("stages").state_dict()
    state["patch_embed.backbone.stages.1.blocks.1.downsample.conv.weight"] = torch.ones(
        512, 512, 1, 1
    )
    save_file({key: value.contiguous() for key, value in state.items()}, str(path))
    with pytest.raises(CheckpointError, match=r"no place for.*stages\.1\.blocks\.1\.downsample"):
        load_checkpoint(path, STAGED, 64)


def test_other_timm_backbones_are_refused_by_key(tmp_path):
    # A pre-activation ResNetV2 (BiT-style) ends in a `norm` the vit_jax stem has not.
    state = timm_model("stages").state_dict()
    state["patch_embed.backbone.norm.weight"] = torch.ones(512)
    path = tmp_path / "timm.safetensors"
    save_file({key: value.contiguous() for key, value in state.items()}, str(path))
    with pytest.raises(CheckpointError, match=r"no place for.*patch_embed\.backbone\.norm\.weight"):
        load_checkpoint(path, STAGED, 64)


def test_tolerance_catches_a_wrong_stem(tmp_path, monkeypatch):
    """The tolerance is far below what a wrong layer costs: each mistake below moves the
    logits by more than 100 x TOLERANCE."""
    import munet.models.stem as stem

    model = timm_model("stages")
    path = tmp_path / "timm.safetensors"
    save_timm_state(model, path)
    images = random_images(3, 64)
    reference = timm_logits(model, images)
    right = load_checkpoint(path, STAGED, 64)

    def error_of(change) -> float:
        components = {name: dict(tensors) for name, tensors in right.items()}
        change(components)
        return relative_error(munet_logits(STAGED, 64, components, images), reference)

    def swap_gn1_gn2(components):
        unit = components["stem_block1"]
        unit["unit1.gn1.weight"], unit["unit1.gn2.weight"] = (
            unit["unit1.gn2.weight"], unit["unit1.gn1.weight"])  # fmt: skip

    def transpose_root_kernel(components):  # HWIO read as WHIO
        components["stem_root"]["conv.weight"] = components["stem_root"]["conv.weight"].mT

    def flip_strided_kernel(components):
        unit = components["stem_block2"]
        unit["unit1.conv2.weight"] = unit["unit1.conv2.weight"].flip(-1)

    assert error_of(lambda components: None) < TOLERANCE
    for change in (swap_gn1_gn2, transpose_root_kernel, flip_strided_kernel):
        assert error_of(change) > 100 * TOLERANCE, change.__name__
    # PyTorch-style padding (the odd pixel before, not after as XLA's "SAME" puts it).
    same_padding = stem.same_padding
    monkeypatch.setattr(stem, "same_padding", lambda *a: same_padding(*a)[::-1])
    assert error_of(lambda components: None) > 100 * TOLERANCE


@pytest.mark.slow
def test_timm_r26_s32_layout_loads_into_munets_r26_stem(tmp_path):
    """timm's registered R26+S/32 (four stages of two units: ~14M stem parameters) with a
    one-block transformer: the published stem's layout, end to end."""
    model = timm.create_model(
        "vit_small_r26_s32_224", pretrained=False, img_size=64, embed_dim=WIDTH, depth=1,
        num_heads=HEADS, mlp_ratio=2, num_classes=CLASSES, act_layer="gelu_tanh",
    )  # fmt: skip
    randomise(model, 0)
    model.eval()
    path = tmp_path / "timm.safetensors"
    save_timm_state(model, path)
    arch = VitArch(WIDTH, 1, HEADS, 2 * WIDTH, 1, CLASSES, vit_size("R26+S/32").stem)
    images = random_images(2, 64)
    loaded = load_checkpoint(path, arch, 64)
    assert relative_error(munet_logits(arch, 64, loaded, images), timm_logits(model, images)) < (
        TOLERANCE
    )
