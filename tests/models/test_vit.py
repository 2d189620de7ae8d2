import numpy as np
import pytest
import torch

from munet.models import VisionTransformer, VitArch, build_model, save_npz, vit_size
from tests.models.conftest import (
    TINY,
    TINY_IMAGE,
    flax_reference_logits,
    random_components,
    random_images,
)


def test_model_matches_an_independent_flax_semantics_forward(tmp_path):
    components = random_components(TINY, TINY_IMAGE)
    path = tmp_path / "ref.npz"
    save_npz(path, components, TINY)
    with np.load(path, allow_pickle=False) as npz:
        arrays = dict(npz)
    images = random_images(3, TINY_IMAGE)
    expected = flax_reference_logits(arrays, images)
    got = build_model(TINY, TINY_IMAGE, components)(images).detach().double().numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_exact_gelu_would_be_detected_by_the_reference(tmp_path):
    # Guards the test above: the tanh/erf GELU difference is larger than its tolerance.
    x = torch.linspace(-3, 3, 101)
    gap = (torch.nn.functional.gelu(x) - torch.nn.functional.gelu(x, approximate="tanh")).abs()
    assert gap.max() > 1e-4


@pytest.mark.parametrize("num_layers", [0, 1, 3])
@pytest.mark.parametrize("image_size", [8, 12, 20])
def test_any_depth_and_image_size(num_layers, image_size):
    arch = TINY.replace(num_layers=num_layers)
    model = VisionTransformer(arch, image_size)
    assert model(random_images(2, image_size)).shape == (2, arch.num_classes)
    blocks = [name for name, _ in model.named_children() if name.startswith("encoderblock_")]
    assert blocks == [f"encoderblock_{i}" for i in range(num_layers)]


def test_headless_model_returns_normalised_cls_representation():
    arch = TINY.replace(num_classes=0)
    model = build_model(arch, TINY_IMAGE, random_components(arch, TINY_IMAGE))
    out = model(random_images(4, TINY_IMAGE))
    assert out.shape == (4, arch.width)
    assert model.head is None
    # Without a head the output is LayerNorm-ed: per row mean ~ bias mean, not arbitrary.
    norm = model.encoder_norm
    whitened = (out - norm.bias) / norm.weight
    torch.testing.assert_close(whitened.mean(-1), torch.zeros(4), atol=1e-4, rtol=0)


def test_image_size_must_be_a_multiple_of_the_patch():
    with pytest.raises(ValueError, match="image size 18 .* patch size 4"):
        VisionTransformer(TINY, 18)


@pytest.mark.parametrize(
    "name,width,depth,heads,mlp",
    [
        ("Ti/16", 192, 12, 3, 768),
        ("S/16", 384, 12, 6, 1536),
        ("B/16", 768, 12, 12, 3072),
        ("L/16", 1024, 24, 16, 4096),
    ],
)
def test_standard_sizes(name, width, depth, heads, mlp):
    size = vit_size(name)
    assert (size.width, size.depth, size.num_heads, size.mlp_dim, size.patch_size) == (
        width,
        depth,
        heads,
        mlp,
        16,
    )
    assert VitArch.from_size(name).num_layers == depth
    assert VitArch.from_size(name, num_layers=depth + 1).num_layers == depth + 1
    with pytest.raises(ValueError, match=f"expected 0..{depth + 1}"):
        VitArch.from_size(name, num_layers=depth + 2)


def test_arch_is_hashable_and_json_round_trips():
    import json

    arch = VitArch.from_size("mu/4", num_layers=2, num_classes=10)
    again = VitArch.from_dict(json.loads(json.dumps(arch.to_dict())))
    assert again == arch and hash(again) == hash(arch)
    with pytest.raises(ValueError, match="unknown VitArch fields"):
        VitArch.from_dict({**arch.to_dict(), "depth": 3})


def test_bad_arch_and_unknown_size_errors():
    with pytest.raises(KeyError, match="unknown ViT size 'Ti/15'; known: Ti/16"):
        vit_size("Ti/15")
    with pytest.raises(ValueError, match="width 10 is not divisible by num_heads 3"):
        VitArch(width=10, num_layers=1, num_heads=3, mlp_dim=8, patch_size=2)
    with pytest.raises(ValueError, match="num_layers must be an int >= 0"):
        VitArch(width=8, num_layers=-1, num_heads=2, mlp_dim=8, patch_size=2)


def test_reset_parameters_uses_the_seed_init():
    model = VisionTransformer(TINY, TINY_IMAGE).reset_parameters(torch.Generator().manual_seed(0))
    assert torch.count_nonzero(model.head.weight) == 0
    assert torch.count_nonzero(model.cls.token) == 0
    again = VisionTransformer(TINY, TINY_IMAGE).reset_parameters(torch.Generator().manual_seed(0))
    assert torch.equal(model.embedding.weight, again.embedding.weight)


def test_register_custom_size(monkeypatch):
    from munet.models import VitSize, arch, register_vit_size, vit_sizes

    monkeypatch.setattr(arch, "_SIZES", dict(arch._SIZES))  # keep the registry clean

    size = VitSize(width=48, depth=2, num_heads=3, mlp_dim=96, patch_size=4)
    register_vit_size("test/4", size)
    assert "test/4" in vit_sizes()
    assert VitArch.from_size("test/4", num_classes=2).width == 48
    with pytest.raises(ValueError, match="already registered"):
        register_vit_size(
            "test/4", VitSize(width=64, depth=2, num_heads=2, mlp_dim=96, patch_size=4)
        )
    with pytest.raises(ValueError, match="not divisible"):
        register_vit_size(
            "bad/4", VitSize(width=50, depth=2, num_heads=3, mlp_dim=96, patch_size=4)
        )


@pytest.mark.parametrize(("patch", "image_size"), [(16, 32), (4, 12), (2, 2), (4, 14)])
def test_patch_embedding_matmul_equals_the_strided_convolution(patch, image_size):
    from munet.models.vit import embed_patches

    # float64: the two sum 3 * patch**2 products in different orders, and in float32 that
    # rounding alone (about 2e-5 at patch 16, depending on the kernels chosen) can exceed 1e-5.
    generator = torch.Generator().manual_seed(0)
    f64 = {"generator": generator, "dtype": torch.float64}
    images = torch.randn(3, 3, image_size, image_size, **f64)
    weight = torch.randn(8, 3, patch, patch, **f64, requires_grad=True)
    bias = torch.randn(8, **f64, requires_grad=True)
    ours = embed_patches(images, weight, bias)
    conv = torch.nn.functional.conv2d(images, weight, bias, stride=patch).flatten(2).transpose(1, 2)
    torch.testing.assert_close(ours, conv, atol=1e-10, rtol=1e-10)
    upstream = torch.randn(ours.shape, **f64)
    grads = torch.autograd.grad(ours, (weight, bias), upstream)
    conv_grads = torch.autograd.grad(conv, (weight, bias), upstream)
    for grad, conv_grad in zip(grads, conv_grads, strict=True):
        torch.testing.assert_close(grad, conv_grad, atol=1e-10, rtol=1e-10)
