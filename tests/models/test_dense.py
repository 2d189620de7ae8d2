"""munet.models.dense: oneDNN's float32 linear layers (with the fused GELU and residual) equal
F.linear's within float rounding, forward and backward, and stand aside where they must."""

import pytest
import torch
import torch.nn.functional as F

from munet.models import dense as dense_module
from munet.models.cpu_kernels import cpu_kernels
from munet.models.dense import dense, onednn_available

needs_onednn = pytest.mark.skipif(not onednn_available(), reason="no oneDNN in this PyTorch")


def _tensors(rows: tuple[int, ...], width_in: int, width_out: int, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(*rows, width_in, generator=generator)
    weight = torch.randn(width_out, width_in, generator=generator) * width_in**-0.5
    bias = torch.randn(width_out, generator=generator)
    residual = torch.randn(*rows, width_out, generator=generator)
    return x, weight, bias, residual


def _reference(x, weight, bias, gelu, residual):
    out = F.linear(x, weight, bias)
    if gelu:
        out = F.gelu(out, approximate="tanh")
    return out if residual is None else out + residual


def _values_and_grads(fn, tensors):
    leaves = [t.detach().clone().requires_grad_(True) for t in tensors]
    out = fn(*leaves)
    upstream = torch.randn(out.shape, generator=torch.Generator().manual_seed(9))
    return [out, *torch.autograd.grad(out, leaves, upstream)]


@needs_onednn
@pytest.mark.parametrize("gelu", [False, True])
@pytest.mark.parametrize("with_residual", [False, True])
@pytest.mark.parametrize(("rows", "width_in", "width_out"), [((6, 5), 16, 48), ((7,), 40, 12)])
def test_onednn_values_and_gradients_equal_f_linear(gelu, with_residual, rows, width_in, width_out):
    x, weight, bias, residual = _tensors(rows, width_in, width_out)
    tensors = [x, weight, bias] + ([residual] if with_residual else [])

    def run(x, weight, bias, residual=None):
        return dense(x, weight, bias, gelu=gelu, residual=residual)

    def reference(x, weight, bias, residual=None):
        return _reference(x, weight, bias, gelu, residual)

    with cpu_kernels("tuned"):
        ours = _values_and_grads(run, tensors)
        with torch.no_grad():
            inference = run(*tensors)
    expected = _values_and_grads(reference, tensors)
    for got, want in zip(ours, expected, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    # The no-gradient path (fused post-ops) gives the training forward's values bit for bit,
    # so evaluation scores what training computed.
    assert torch.equal(inference, ours[0])


@needs_onednn
def test_frozen_weights_and_bias_free_layers_get_the_right_gradients():
    x, weight, _, _ = _tensors((4, 3), 8, 24)
    x.requires_grad_(True)
    with cpu_kernels("tuned"):
        out = dense(x, weight, None, gelu=True)
        (grad_x,) = torch.autograd.grad(out.sum(), x)
    leaf = x.detach().clone().requires_grad_(True)
    (expected,) = torch.autograd.grad(_reference(leaf, weight, None, True, None).sum(), leaf)
    torch.testing.assert_close(grad_x, expected, rtol=1e-5, atol=1e-5)
    assert weight.grad is None


@pytest.mark.filterwarnings("ignore:`torch.jit.trace` is deprecated:DeprecationWarning")
@pytest.mark.parametrize("backend", ["tuned", "standard"])
def test_the_standard_ops_run_where_onednn_must_not(backend):
    # float64, bf16 autocast with gradients, and tracing take F.linear whatever the backend.
    x, weight, bias, residual = (t.double() for t in _tensors((3, 2), 8, 16))
    with cpu_kernels(backend):
        got = dense(x, weight, bias, gelu=True)
        assert torch.equal(got, _reference(x, weight, bias, True, None))
        x32, w32, b32 = (t.float() for t in (x, weight, bias))
        w32.requires_grad_(True)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            got = dense(x32, w32, b32, gelu=True)
            want = F.gelu(F.linear(x32, w32, b32), approximate="tanh")
        assert got.dtype == torch.bfloat16 and torch.equal(got, want)
        frozen = w32.detach()
        traced = torch.jit.trace(lambda t: dense(t, frozen, b32, gelu=True), (x32,))
        assert "mkldnn" not in str(traced.graph)


@needs_onednn
@pytest.mark.parametrize("gelu", [False, True])
def test_bf16_evaluation_runs_onednn_as_autocast_would(gelu):
    x, weight, bias, residual = _tensors((6, 5), 16, 48)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        with cpu_kernels("tuned"):
            got = dense(x, weight, bias, gelu=gelu, residual=residual)
        with cpu_kernels("standard"):
            want = dense(x, weight, bias, gelu=gelu, residual=residual)
    # bfloat16 products, the residual added in float32 by type promotion, as under autocast.
    assert got.dtype == want.dtype == torch.float32
    torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2)
    assert not torch.equal(got, _reference(x, weight, bias, gelu, residual))  # not float32


def test_onednn_runs_where_the_cpu_kernels_say(monkeypatch):
    monkeypatch.setattr(dense_module, "onednn_available", lambda: True)
    with cpu_kernels("standard"):
        assert not dense_module.onednn_preferred()
    with cpu_kernels("tuned"):
        assert dense_module.onednn_preferred()
        monkeypatch.setattr(dense_module, "onednn_available", lambda: False)  # no such op
        assert not dense_module.onednn_preferred()
