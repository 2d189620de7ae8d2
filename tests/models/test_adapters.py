"""Bottleneck adapters in a ViT (munet.models.adapters; after a block, munet.models.adapted_vit;
after each sublayer, Houlsby's placement, munet.models.houlsby_vit)."""

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from munet.models import VitArch, count_flops
from munet.models.adapted_vit import (
    AdaptedVisionTransformer,
    AssembledAdaptedVit,
    adapter_block_index,
    adapter_flops,
    adapter_name,
    init_adapter,
)
from munet.models.components import init_components
from munet.models.export_tree import build_module
from munet.models.houlsby_vit import HoulsbyAdaptedVit
from munet.models.vit import VisionTransformer

ARCH = VitArch.from_size("mu/4", num_layers=3, num_classes=5)


def test_names_round_trip():
    assert adapter_name(2) == "adapter_2" and adapter_block_index("adapter_2") == 2
    for other in ("encoderblock_2", "adapter_", "adapterx_1", "head"):
        assert adapter_block_index(other) is None


def test_a_new_adapter_leaves_the_model_unchanged_and_a_trained_one_changes_it():
    torch.manual_seed(0)
    headless = ARCH.replace(num_classes=0)  # vit_jax's head starts at zero: compare features
    plain = VisionTransformer(headless, 16).reset_parameters(torch.Generator().manual_seed(0))
    adapted = AdaptedVisionTransformer(headless, 16, {0: 4, 2: 4})
    adapted.load_state_dict(plain.state_dict(), strict=False)
    adapted.adapter_0.down.weight.data.normal_()
    images = torch.rand(2, 3, 16, 16)
    assert torch.allclose(adapted(images), plain(images), atol=1e-6)  # up is zero
    adapted.adapter_2.up.weight.data.normal_()
    assert not torch.allclose(adapted(images), plain(images), atol=1e-4)
    with pytest.raises(ValueError, match=r"adapters after blocks \[3\]"):
        AdaptedVisionTransformer(ARCH, 16, {3: 4})


def test_flops_follow_the_counter_convention():
    model = AdaptedVisionTransformer(ARCH, 16, {1: 8}).to("meta")
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(torch.empty(1, 3, 16, 16, device="meta"))
    assert counter.get_total_flops() == count_flops(ARCH, 16) + adapter_flops(ARCH, 16, 8)


def test_houlsby_placement_starts_as_its_vit_and_counts_flops_with_the_same_formula():
    headless = ARCH.replace(num_classes=0)
    vit = VisionTransformer(headless, 16).reset_parameters(torch.Generator().manual_seed(0))
    model = HoulsbyAdaptedVit(vit, 4)
    assert len(model.adapters) == 2 * ARCH.num_layers  # one per sublayer
    images = torch.rand(2, 3, 16, 16)
    with torch.no_grad():
        assert torch.allclose(model(images), vit(images), atol=1e-6)  # up is zero
    assert all(p.requires_grad for p in model.parameters())  # freezing is the caller's
    meta = HoulsbyAdaptedVit(VisionTransformer(ARCH, 16), 8).to("meta")
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        meta(torch.empty(1, 3, 16, 16, device="meta"))
    expected = count_flops(ARCH, 16) + 2 * ARCH.num_layers * adapter_flops(ARCH, 16, 8)
    assert counter.get_total_flops() == meta.flops() == expected


def test_assembled_from_components_and_exported_tree_agree():
    components = init_components(ARCH, 16, torch.Generator().manual_seed(1))
    components["head"]["weight"].normal_(0, 0.1, generator=torch.Generator().manual_seed(4))
    adapter = init_adapter(ARCH.width, 4, torch.Generator().manual_seed(2))
    adapter["up.weight"].normal_(0, 0.1, generator=torch.Generator().manual_seed(3))
    components["adapter_1"] = adapter
    assembled = AssembledAdaptedVit(ARCH, 16, components)
    module = build_module(
        {"type": "vit", "arch": ARCH.to_dict(), "image_size": 16, "adapters": {"1": 4}}
    )
    flat = {f"{c}.{n}": t for c, tensors in components.items() for n, t in tensors.items()}
    module.load_state_dict(flat, strict=True)
    images = torch.rand(3, 3, 16, 16)
    logits = assembled(images)
    assert torch.allclose(logits, module(images), atol=1e-6)
    without = {c: t for c, t in components.items() if c != "adapter_1"}
    plain = build_module({"type": "vit", "arch": ARCH.to_dict(), "image_size": 16})
    plain.load_state_dict({f"{c}.{n}": t for c, ts in without.items() for n, t in ts.items()})
    assert not torch.allclose(logits, plain(images), atol=1e-4)  # the adapter counts
    bad = dict(components, adapter_1={**adapter, "up.bias": torch.zeros(3)})
    with pytest.raises(ValueError, match="component 'adapter_1' has tensors"):
        AssembledAdaptedVit(ARCH, 16, bad)
