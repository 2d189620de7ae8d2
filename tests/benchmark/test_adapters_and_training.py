import itertools

import pytest
import torch
from torch import nn

from munet.benchmark.cnn import small_cnn
from munet.benchmark.frozen_root import (
    forward_flops,
    frozen_root_adapters,
    trainable_parameters,
    vit_from_root,
)
from munet.benchmark.training import accuracy, train_with_validation
from munet.models import VitArch, count_flops, init_components
from munet.models.adapters import BottleneckAdapter, adapter_params
from munet.models.arch import StemArch
from munet.tasks.batch import Batch


def test_adapter_starts_as_the_identity_and_counts_its_parameters():
    adapter = BottleneckAdapter(12, 3)
    x = torch.randn(2, 5, 12)
    assert torch.equal(adapter(x), x)
    assert sum(p.numel() for p in adapter.parameters()) == adapter_params(12, 3)
    assert adapter.down.out_features == 3 and adapter.up.in_features == 3


# A hybrid of the same transformer: a root conv and one bottleneck stage, 2 x 2 patches.
HYBRID = VitArch(64, 2, 2, 256, patch_size=2, num_classes=5, stem=StemArch(8, (1,), 3, 1, False, 4))


def _tiny_vit(arch=None):
    arch = arch or VitArch.from_size("mu/4", num_layers=2, num_classes=5)
    root = init_components(arch.replace(num_classes=0), 8, torch.Generator().manual_seed(0))
    return vit_from_root(root, arch, 8, torch.Generator().manual_seed(1)), root


@pytest.mark.parametrize("arch", [None, HYBRID], ids=["plain", "hybrid"])
def test_frozen_root_adapters_train_only_adapters_and_head_and_start_as_the_frozen_model(arch):
    vit, _ = _tiny_vit(arch)
    images = torch.randn(3, 3, 8, 8)
    with torch.no_grad():
        before = vit(images)
    model = frozen_root_adapters(vit, bottleneck=4)
    trainable = {id(p) for p in trainable_parameters(model)}
    expected = {id(p) for p in [*model.adapters.parameters(), *vit.head.parameters()]}
    assert trainable == expected
    assert len(model.adapters) == 4  # Houlsby: two per block.
    with torch.no_grad():
        assert torch.allclose(model(images), before, atol=1e-6)
    # Two matmuls of 4 x 64 per token (plain: 4 patches + cls; hybrid: 16 + cls) in each of
    # the 4 adapters.
    tokens = 5 if arch is None else 17
    assert model.flops() == count_flops(vit.arch, 8) + 4 * 2 * 2 * tokens * 64 * 4


def test_vit_from_root_resizes_the_position_embedding_and_refuses_a_missing_block():
    _, root = _tiny_vit()
    arch = VitArch.from_size("mu/4", num_layers=2, num_classes=5)
    bigger = vit_from_root(root, arch, 16, torch.Generator().manual_seed(1))
    assert bigger(torch.randn(1, 3, 16, 16)).shape == (1, 5)
    with pytest.raises(ValueError, match="no component 'encoderblock_2'"):
        vit_from_root(root, arch.replace(num_layers=3), 8, torch.Generator())


def _batches(count, generator, shift=0.0):
    for _ in range(count):
        labels = torch.randint(0, 2, (16,), generator=generator)
        images = torch.randn(16, 4, generator=generator) + (labels[:, None] * 2 - 1) + shift
        yield Batch(images=images, labels=labels)


class _SpyOptimizer(torch.optim.SGD):
    """SGD that sabotages the weights after the 3rd step: later validations get worse."""

    def __init__(self, params, model):
        super().__init__(params, lr=0.5)
        self.model, self.count = model, 0

    def step(self, closure=None):
        super().step(closure)
        self.count += 1
        if self.count > 2:
            with torch.no_grad():
                self.model.weight.mul_(-1)


def test_training_keeps_and_restores_the_best_validation_state():
    torch.manual_seed(0)
    model = nn.Linear(4, 2)
    validation = list(_batches(2, torch.Generator().manual_seed(1)))
    train = itertools.cycle(list(_batches(8, torch.Generator().manual_seed(2))))
    result = train_with_validation(
        model, _SpyOptimizer(model.parameters(), model), train, validation, 1, 6
    )
    assert result.steps == 6 and len(result.evals) == 6
    assert result.quality == max(result.evals)
    assert result.evals[-1] < result.quality  # The last state is not the best one ...
    assert accuracy(model, validation) == result.quality  # ... and the best one is back.


def test_training_refuses_empty_budgets():
    with pytest.raises(ValueError, match="must be positive"):
        train_with_validation(nn.Linear(4, 2), None, iter([]), [], 0, 1)


def test_small_cnn_has_its_documented_size():
    assert (
        sum(p.numel() for p in small_cnn(5).parameters()) == 56_517
    )  # the "about 56k" of its docstring
    assert small_cnn(10)(torch.zeros(2, 3, 16, 16)).shape == (2, 10)
    # The first convolution alone: 16 x 16 outputs x 16 channels x (3 x 3 x 3) x 2.
    assert forward_flops(small_cnn(10), 16) > 2 * 16 * 16 * 16 * 27
