"""Multipath models that combine hybrid ViTs (a ResNet stem first) with plain ones: each path
runs at its own architecture and image size, each connector maps its path's width; what does
not fit is refused naming the path. The export tree holds such a model as it is."""

from __future__ import annotations

import pytest
import torch

from munet.models import AssembledVit, count_flops, merge_components
from munet.models.export import Preprocessing, load_exported, save_exported
from munet.models.multipath import (
    ROUTER,
    MultipathVit,
    count_multipath_flops,
    head_adapter_name,
    init_head_adapter,
    init_router,
)
from tests.models.conftest import TINY, random_components, random_images
from tests.models.test_hybrid_export import HYBRID, POOLED

# A plain ViT of width 16 at 16 px (patch 4), hybrids of width 32 at 8 px (stride 2) and at
# 16 px (stride 8, pooled root): three widths and two image sizes to combine.
PLAIN = (TINY, 16)
SMALL = (HYBRID, 8)
DEEP = (POOLED, 16)


def _assembled(spec, headless, seed):
    arch, size = spec
    arch = arch.replace(num_classes=0) if headless else arch
    return AssembledVit(arch, size, random_components(arch, size, seed=seed))


def _multipath(specs, seed=0):
    """A multipath model over `specs` (the first the main path) with random router and
    connector tensors, and its tensors under export names."""
    paths = [_assembled(spec, index > 0, seed + index) for index, spec in enumerate(specs)]
    classes = paths[0].arch.num_classes
    generator = torch.Generator().manual_seed(seed + 100)
    router = {n: torch.randn(t.shape, generator=generator) for n, t in
              init_router(len(paths), classes, 0.8).items()}  # fmt: skip
    adapters = [
        {n: torch.randn(t.shape, generator=generator) for n, t in
         init_head_adapter(path.arch.width, classes).items()}
        for path in paths[1:]
    ]  # fmt: skip
    model = MultipathVit(paths, router, adapters, 0.5)
    flat = {f"{ROUTER}.{k}": v for k, v in router.items()}
    for index, path in enumerate(paths):
        flat |= {f"path_{index}.{k}": v for k, v in merge_components(path.components).items()}
    for index, adapter in enumerate(adapters, 1):
        flat |= {f"{head_adapter_name(index)}.{k}": v for k, v in adapter.items()}
    return model, flat


def _inputs(specs, batch=3):
    return {size: random_images(batch, size, seed=size) for size in sorted({s for _, s in specs})}


@pytest.mark.parametrize(
    "specs",
    [(SMALL, PLAIN), (PLAIN, SMALL), (PLAIN, SMALL, DEEP), (DEEP, SMALL)],
    ids=["hybrid-main", "hybrid-extra", "plain-and-two-hybrids", "two-hybrids"],
)
def test_hybrid_and_plain_paths_combine(tmp_path, specs):
    model, flat = _multipath(specs)
    inputs = _inputs(specs)
    logits = model(inputs)
    assert logits.shape == (3, specs[0][0].num_classes)
    # The value is the router-weighted sum of the paths' logits (connectors map each width).
    main = model.paths[0](inputs[model.paths[0].image_size])
    weights = model.route(main)
    parts = [main] + [
        torch.nn.functional.linear(path(inputs[path.image_size]), a["weight"], a["bias"])
        for path, a in zip(model.paths[1:], model.head_adapters, strict=True)
    ]
    expected = sum(weights[:, k : k + 1] * part for k, part in enumerate(parts))
    torch.testing.assert_close(logits, expected, rtol=1e-5, atol=1e-6)
    # FLOPs: each path at its own arch and size, plus the router and the connectors.
    classes = specs[0][0].num_classes
    paths = [(p.arch, p.image_size) for p in model.paths]
    assert count_multipath_flops(paths) == (
        sum(count_flops(a, s) for a, s in paths)
        + 2 * classes * len(paths)
        + sum(2 * a.width * classes for a, _ in paths[1:])
    )
    # Exported as it is: every slot a vit node with its own arch (the stem included) and size.
    node = {
        "type": "multipath",
        "router_lr_mult": 0.5,
        "paths": {f"path_{i}": {"type": "vit", "arch": p.arch.to_dict(),
                                "image_size": p.image_size}
                  for i, p in enumerate(model.paths)},
    }  # fmt: skip
    sizes = sorted(inputs)
    folder = save_exported(
        tmp_path / "mp",
        node,
        flat,
        preprocessing=Preprocessing(sizes if len(sizes) > 1 else sizes[0], None),
        class_names=None,
        provenance={},
        metrics={},
    )
    module, preprocess = load_exported(folder)
    for index, path in enumerate(model.paths):
        sub = getattr(module, f"path_{index}")
        assert sub.arch == path.arch and hasattr(sub, "stem_root") == path.arch.is_hybrid
    torch.testing.assert_close(module(inputs), logits, rtol=0, atol=0)
    # What predict feeds it: {size: images} from the preprocessing when the sizes differ.
    pictures = [torch.randint(0, 256, (24, 24, 3), dtype=torch.uint8).numpy() for _ in "ab"]
    batch = preprocess(pictures)
    assert module(batch).shape == (2, classes)


def test_a_hybrid_extra_path_trains_its_connector_only():
    model, _ = _multipath((PLAIN, SMALL))
    for tensors in (model.router, *model.head_adapters):
        for tensor in tensors.values():
            tensor.requires_grad_(True)
    model(_inputs((PLAIN, SMALL))).pow(2).sum().backward()
    assert model.head_adapters[0]["weight"].grad.abs().sum() > 0
    assert model.router["dense.weight"].grad is not None
    assert all(t.grad is None for t in model.paths[1].components["stem_root"].values())


def test_what_does_not_fit_is_refused_naming_the_path():
    main = _assembled(PLAIN, False, 0)
    hybrid = _assembled(SMALL, True, 1)
    router = init_router(2, 5, 0.8)
    # A connector of the plain width for the hybrid's (32) representation.
    with pytest.raises(ValueError, match=r"head_adapter_path_1.weight has shape \(5, 16\), "
                       r"expected \(5, 32\)"):  # fmt: skip
        MultipathVit([main, hybrid], router, [init_head_adapter(16, 5)], 0.5)
    model = MultipathVit([main, hybrid], router, [init_head_adapter(32, 5)], 0.5)
    # One batch for paths of two image sizes.
    with pytest.raises(ValueError, match=r"path 1 \(a hybrid ViT at image size 8\) got images "
                       r"of size 16x16; pass \{image size: images\}"):  # fmt: skip
        model(random_images(2, 16))
    with pytest.raises(KeyError, match="no images of size 8"):
        model({16: random_images(2, 16)})
    # A hybrid at an image size its stride does not divide has no model at all.
    headless = POOLED.replace(num_classes=0)
    with pytest.raises(ValueError, match=r"image size 12 must be a positive multiple of the "
                       r"hybrid's stride 8 \(patch 1 x stem reduction 8\)"):  # fmt: skip
        AssembledVit(headless, 12, random_components(headless, 16))
