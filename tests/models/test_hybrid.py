"""The hybrid ViT's own pieces: its architecture, the stem's layers, init, FLOPs and sharing.

Equality with timm's forward on real-library models is in test_hybrid_checkpoints.py."""

import math

import pytest
import torch
import torch.nn.functional as F

from munet.models import VitArch, component_names, component_shapes, init_components
from munet.models.arch import StemArch, vit_size
from munet.models.components import AssembledVit, build_model, init_component
from munet.models.flops import analytic_flops, count_flops
from munet.models.stem import (
    BottleneckUnit,
    StemRoot,
    same_padding,
    standardize_weight,
    stem_component_names,
)

TINY_STEM = StemArch(8, stages=(1, 2), root_kernel=3, root_stride=1, root_pool=False, groups=4)


def tiny_hybrid(num_classes: int = 3, stem: StemArch = TINY_STEM) -> VitArch:
    return VitArch(32, 2, 2, 64, patch_size=2, num_classes=num_classes, stem=stem)


def seeded(arch: VitArch, image_size: int, seed: int = 0):
    return init_components(arch, image_size, torch.Generator().manual_seed(seed))


# Architecture --------------------------------------------------------------------------------
def test_published_hybrids_have_vit_jax_strides():
    # R+Ti/16: root stride 2 and a stride-2 pool (x4), then 8 x 8 patches over the feature map.
    assert VitArch.from_size("R+Ti/16").stride == 32
    # R50+B/16: 2^(1 + 3) = 16 with 1 x 1 patches; R26+S/32 and R50+L/32: 32.
    assert VitArch.from_size("R50+B/16").stride == 16
    assert VitArch.from_size("R26+S/32").stride == 32
    assert VitArch.from_size("R50+L/32").stride == 32
    assert vit_size("R50+B/16").stem.out_channels == 1024  # 4 x 64 x 2^2
    assert vit_size("R+Ti/16").stem.out_channels == 64


def test_an_image_size_off_the_stride_is_refused_naming_it():
    arch = tiny_hybrid()  # stride 2 (patch) x 2 (the second stage) = 4
    assert arch.grid_size(16) == 4
    with pytest.raises(ValueError, match=r"18.*stride 4 \(patch 2 x stem reduction 2\)"):
        arch.grid_size(18)


def test_the_arch_round_trips_through_json_and_a_plain_one_has_no_stem_key():
    arch = tiny_hybrid()
    assert VitArch.from_dict(arch.to_dict()) == arch
    assert arch.to_dict()["stem"]["stages"] == [1, 2]
    plain = VitArch.from_size("mu/4", num_classes=2)
    assert "stem" not in plain.to_dict()
    assert VitArch.from_dict(plain.to_dict()) == plain
    assert hash(arch) == hash(VitArch.from_dict(arch.to_dict()))


@pytest.mark.parametrize(
    "fields,message",
    [
        ({"width": 6, "groups": 4}, "groups 4 does not divide"),
        ({"stages": (0,)}, r"stages\[\] must be an int >= 1"),
        ({"root_pool": 1}, "root_pool must be a bool"),
        ({"root_stride": 0}, "root_stride must be an int >= 1"),
    ],
)
def test_bad_stems_are_refused_naming_the_value(fields, message):
    with pytest.raises(ValueError, match=message):
        StemArch(**fields)


def test_unknown_stem_fields_are_refused():
    with pytest.raises(ValueError, match="unknown StemArch fields"):
        VitArch.from_dict({**tiny_hybrid().to_dict(), "stem": {"width": 8, "depth": 3}})


# Layers --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "size,kernel,stride,expected",
    [(8, 7, 2, (2, 3)), (9, 7, 2, (3, 3)), (8, 3, 2, (0, 1)), (8, 3, 1, (1, 1)), (8, 1, 2, (0, 0))],
)
def test_same_padding_is_xlas(size, kernel, stride, expected):
    # XLA: total = max((ceil(size / stride) - 1) * stride + kernel - size, 0), the odd one after.
    assert same_padding(size, kernel, stride) == expected


def test_weight_standardisation_per_output_channel():
    weight = torch.randn(4, 3, 3, 3, generator=torch.Generator().manual_seed(0)) * 5 + 2
    standard = standardize_weight(weight)
    assert torch.allclose(standard.mean(dim=(1, 2, 3)), torch.zeros(4), atol=1e-6)
    std = standard.std(dim=(1, 2, 3), unbiased=False)
    assert torch.allclose(std, torch.ones(4), atol=1e-4)
    # The kernel's scale is standardised away (up to the eps added to the std).
    assert torch.allclose(standardize_weight(weight * 7), standard, atol=1e-5)


def test_the_root_pools_with_same_padding_that_never_wins():
    stem = StemArch(width=4, root_kernel=1, root_stride=1, root_pool=True, groups=1)
    root = StemRoot(stem)
    with torch.no_grad():
        root.conv.weight.copy_(torch.randn(4, 3, 1, 1))
    images = torch.randn(2, 3, 6, 6)
    out = root(images)
    assert out.shape == (2, 4, 3, 3)
    # By hand: ReLU output >= 0, padded (0, 1) on each axis with -inf, 3 x 3 stride-2 max.
    activated = F.relu(root.gn(root.conv(images)))
    padded = F.pad(activated, (0, 1, 0, 1), value=-math.inf)
    assert torch.equal(out, F.max_pool2d(padded, 3, 2))


def test_a_fresh_unit_is_its_shortcut():
    # vit_jax zero-initialises each unit's last group-norm scale.
    arch = tiny_hybrid()
    tensors = init_component("stem_block2", arch, 16, torch.Generator().manual_seed(0))
    assert torch.equal(tensors["unit1.gn3.weight"], torch.zeros(64))
    assert torch.equal(tensors["unit2.gn3.weight"], torch.zeros(64))
    unit = BottleneckUnit(32, 16, stride=2, groups=4, project=True)
    unit.load_state_dict({k.removeprefix("unit1."): v for k, v in tensors.items() if "unit1" in k})
    x = torch.randn(2, 32, 8, 8)
    assert torch.equal(unit(x), F.relu(unit.gn_proj(unit.conv_proj(x))))


# Components ----------------------------------------------------------------------------------
def test_the_stem_components_come_first_and_init_matches_one_by_one():
    arch = tiny_hybrid()
    names = component_names(arch)
    assert names[:3] == ["stem_root", "stem_block1", "stem_block2"]
    assert names[3] == "embedding"
    assert stem_component_names(None) == []
    together = seeded(arch, 16, seed=3)
    generator = torch.Generator().manual_seed(3)
    for name in names:
        alone = init_component(name, arch, 16, generator)
        assert alone.keys() == together[name].keys()
        assert all(torch.equal(alone[k], together[name][k]) for k in alone)


def test_only_the_position_embedding_depends_on_the_image_size():
    arch = tiny_hybrid()
    small, large = component_shapes(arch, 8), component_shapes(arch, 32)
    assert [n for n in small if small[n] != large[n]] == ["posembed_input"]
    assert small["embedding"]["weight"] == (32, 64, 2, 2)  # over the stem's 64 channels


def test_the_model_runs_at_every_size_on_the_stride_and_headless():
    arch = tiny_hybrid()
    for image_size in (8, 12, 16):
        model = build_model(arch, image_size, seeded(arch, image_size))
        assert model(torch.randn(2, 3, image_size, image_size)).shape == (2, 3)
    headless = arch.replace(num_classes=0)
    model = build_model(headless, 8, seeded(headless, 8))
    assert model(torch.randn(2, 3, 8, 8)).shape == (2, 32)


def test_a_frozen_shared_stem_gives_two_paths_the_same_features_and_gets_no_gradient():
    arch = tiny_hybrid()
    first, second = seeded(arch, 16, seed=0), seeded(arch.replace(num_classes=5), 16, seed=1)
    for name in stem_component_names(arch.stem):
        second[name] = first[name]  # the same tensor objects, frozen (requires_grad False)
    for name, tensors in second.items():
        if not name.startswith("stem_"):
            for tensor in tensors.values():
                tensor.requires_grad_(True)
    model_a = AssembledVit(arch, 16, first)
    model_b = AssembledVit(arch.replace(num_classes=5), 16, second)
    images = torch.randn(3, 3, 16, 16)

    def stem_features(model: AssembledVit) -> torch.Tensor:
        x = images
        for name in stem_component_names(arch.stem):
            x = getattr(model.module, name)(x)
        return x

    assert torch.equal(stem_features(model_a), stem_features(model_b))
    model_b(images).sum().backward()
    stem_tensors = [t for n in stem_component_names(arch.stem) for t in first[n].values()]
    assert all(t.grad is None for t in stem_tensors)
    assert second["embedding"]["weight"].grad is not None
    assert len(model_b.frozen_tensors()) == sum(
        len(first[n]) for n in stem_component_names(arch.stem)
    )


# FLOPs ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "arch,image_size",
    [
        (tiny_hybrid(), 16),
        (VitArch.from_size("R+Ti/16", num_layers=1, num_classes=10), 64),
        (VitArch.from_size("R26+S/32", num_layers=1, num_classes=10), 64),
        (VitArch.from_size("R50+B/16", num_layers=1), 48),
        (tiny_hybrid(stem=StemArch(8, (1,), 7, 2, True, 4)), 24),
    ],
)
def test_counted_flops_equal_the_closed_form(arch, image_size):
    assert count_flops(arch, image_size) == analytic_flops(arch, image_size)


def test_the_stem_adds_its_convolutions_to_a_plain_models_flops():
    hybrid = tiny_hybrid()
    plain = VitArch(32, 2, 2, 64, patch_size=4, num_classes=3)  # the same tokens at 16 px
    root = 2 * 16 * 16 * 8 * 3 * 9
    block1 = 2 * 256 * (8 * 8 + 8 * 8 * 9 + 32 * 8 + 32 * 8)  # conv1, conv2, conv3, proj
    block2 = 2 * 256 * 32 * 16 + 2 * 64 * (16 * 16 * 9 + 64 * 16 + 64 * 32)  # unit 1
    block2 += 2 * 64 * (64 * 16 + 16 * 16 * 9 + 64 * 16)  # unit 2
    embedding_change = 2 * 16 * 32 * (64 * 4 - 3 * 16)
    expected = count_flops(plain, 16) + root + block1 + block2 + embedding_change
    assert count_flops(hybrid, 16) == expected
