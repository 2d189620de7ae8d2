"""munet.models.vit.attention: the explicit matmul form used for short sequences on a CPU equals
scaled_dot_product_attention within float rounding, values and gradients."""

import pytest
import torch
import torch.nn.functional as F

from munet.models import vit
from munet.models.cpu_kernels import cpu_kernels
from munet.models.vit import attention


def _sdpa(qkv: torch.Tensor, num_heads: int) -> torch.Tensor:
    batch, tokens, three_width = qkv.shape
    heads = qkv.view(batch, tokens, 3, num_heads, three_width // 3 // num_heads)
    q, k, v = heads.permute(2, 0, 3, 1, 4).unbind(0)
    return F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(batch, tokens, -1)


@pytest.fixture
def amd():
    """munet's tuned CPU kernels, as on the family where the explicit form measured faster."""
    with cpu_kernels("tuned"):
        yield


@pytest.mark.parametrize(("tokens", "num_heads", "head_dim"), [(5, 3, 64), (17, 2, 8), (1, 1, 4)])
def test_explicit_attention_equals_sdpa(amd, tokens, num_heads, head_dim):
    assert vit.explicit_attention_preferred(torch.device("cpu"), tokens)
    generator = torch.Generator().manual_seed(0)
    qkv = torch.randn(4, tokens, 3 * num_heads * head_dim, generator=generator)
    upstream = torch.randn(4, tokens, num_heads * head_dim, generator=generator)
    results = []
    for fn in (attention, _sdpa):
        leaf = qkv.clone().requires_grad_(True)
        out = fn(leaf, num_heads)
        results.append((out, *torch.autograd.grad(out, leaf, upstream)))
    for ours, theirs in zip(*results, strict=True):
        torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-5)


def test_explicit_attention_only_for_short_sequences_with_the_tuned_kernels(amd):
    cpu = torch.device("cpu")
    assert not vit.explicit_attention_preferred(cpu, vit.EXPLICIT_ATTENTION_MAX_TOKENS + 1)
    assert not vit.explicit_attention_preferred(torch.device("meta"), 5)
    with cpu_kernels("standard"):  # e.g. on an Intel CPU, where SDPA measured faster
        assert not vit.explicit_attention_preferred(cpu, 5)


def test_long_sequences_take_sdpa(amd, monkeypatch):
    calls = []
    original = F.scaled_dot_product_attention
    monkeypatch.setattr(
        vit.F, "scaled_dot_product_attention", lambda *a: calls.append(1) or original(*a)
    )
    qkv = torch.randn(2, vit.EXPLICIT_ATTENTION_MAX_TOKENS + 1, 3 * 8)
    torch.testing.assert_close(attention(qkv, 2), _sdpa(qkv, 2))
    assert calls == [1, 1]  # attention's, then the reference's
    attention(qkv[:, : vit.EXPLICIT_ATTENTION_MAX_TOKENS], 2)
    assert calls == [1, 1]
