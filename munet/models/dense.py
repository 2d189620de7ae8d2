"""The ViT's dense layers on CPU: oneDNN's float32 matmul where the BLAS is slow, with the
GELU or the residual add fused into it.

PyTorch's float32 ``F.linear`` on an x86 CPU calls MKL's ``sgemm``, which picks its fast
kernels by CPU vendor: on an AMD EPYC with AVX-512, oneDNN's matmul (also linked into PyTorch;
it picks kernels by instruction set) ran the products of ViT-Ti/16 at 32 px, batch 512 about
twice as fast, forward and backward (docs/speed.md). :func:`dense` is a linear layer that runs
through oneDNN there, and elsewhere is exactly ``F.linear`` (plus the optional GELU and
residual).

Fusion: the tanh GELU (fc1) runs inside the matmul as a oneDNN post-op, with or without
gradients, so training and evaluation compute the same values bit for bit (oneDNN's GELU and
PyTorch's differ in the last bit); the backward recomputes the pre-activation its derivative
needs. Without gradients the residual add (attention and MLP outputs) is fused too. Each
fusion saves a pass over the activations; PyTorch's own tanh GELU cost about as much as the
fc1 matmul here (docs/speed.md).

Under CPU bfloat16 autocast (munet's ``bf16``) the products already run in oneDNN; without
gradients (evaluation, frozen layers) :func:`dense` calls it directly, as autocast would
(bfloat16 inputs and output), to fuse the GELU: 1.19x bf16 evaluation here. With gradients it
leaves bf16 to autocast (the fused path trained at 0.94x). The oneDNN path is never taken
while tracing, scripting, exporting or compiling, where the graph must hold standard ops.

Where it runs: munet.models.cpu_kernels (the CPU family the oneDNN path was measured faster
on, or a forced choice), and only if this PyTorch has the op (checked once).
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F
from torch.autograd.function import once_differentiable

from munet.models.cpu_kernels import tuned_cpu_kernels


@functools.lru_cache(maxsize=1)
def onednn_available() -> bool:
    """Whether this PyTorch has oneDNN's linear op and it computes a linear layer correctly."""
    op = getattr(torch.ops.mkldnn, "_linear_pointwise", None)
    if op is None or not torch.backends.mkldnn.is_available():
        return False
    generator = torch.Generator().manual_seed(0)
    x, weight, bias = (torch.randn(shape, generator=generator) for shape in ((3, 8), (5, 8), (5,)))
    # The first call may come from inside autocast or a gradient-tracking forward.
    with torch.autocast("cpu", enabled=False), torch.no_grad():
        try:
            got = op(x, weight, bias, "none", [], "")
        except RuntimeError:
            return False
        return bool(torch.allclose(got, F.linear(x, weight, bias), rtol=1e-5, atol=1e-5))


def onednn_preferred() -> bool:
    """Whether :func:`dense` runs through oneDNN here (munet.models.cpu_kernels decides)."""
    return tuned_cpu_kernels() and onednn_available()


def _compute_dtype(*tensors: torch.Tensor | None) -> torch.dtype | None:
    """The dtype :func:`dense` multiplies in through oneDNN (float32, or bfloat16 under CPU
    bfloat16 autocast), or None where it must take the standard ops."""
    if torch.jit.is_scripting() or torch.jit.is_tracing() or torch.onnx.is_in_onnx_export():
        return None
    if torch.compiler.is_compiling():
        return None
    dtype = torch.float32
    allowed = (torch.float32,)
    if torch.is_autocast_enabled("cpu"):
        if torch.get_autocast_dtype("cpu") != torch.bfloat16:
            return None
        dtype, allowed = torch.bfloat16, (torch.float32, torch.bfloat16)
    for tensor in tensors:
        if tensor is None:
            continue
        if tensor.device.type != "cpu" or tensor.dtype not in allowed:
            return None
        if tensor.layout != torch.strided or type(tensor) not in (torch.Tensor, torch.nn.Parameter):
            return None  # subclasses (fake, functorch-batched...) take the standard ops
    return dtype if onednn_preferred() else None


def dense(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    gelu: bool = False,
    residual: torch.Tensor | None = None,
) -> torch.Tensor:
    """``F.linear(x, weight, bias)``, then the tanh GELU if ``gelu``, then ``+ residual``.

    Args:
        x: (..., in) inputs.
        weight: (out, in), PyTorch's Linear layout.
        bias: (out,) or None.
        gelu: apply GELU's tanh form (Flax's default) to the linear output.
        residual: (..., out), added last.
    """
    tensors = (x, weight, bias, residual)
    needs_grad = torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)
    dtype = _compute_dtype(*tensors)
    if dtype is None or (dtype == torch.bfloat16 and needs_grad):
        out = F.linear(x, weight, bias)
        if gelu:
            out = F.gelu(out, approximate="tanh")
        return out if residual is None else out + residual
    if dtype == torch.bfloat16:
        # What autocast does (inputs cast to bfloat16, a bfloat16 output), with the GELU fused;
        # the residual add stays outside, with PyTorch's type promotion.
        bias = None if bias is None else bias.to(dtype)
        attr, algorithm = ("gelu", "tanh") if gelu else ("none", "")
        out = torch.ops.mkldnn._linear_pointwise(
            x.to(dtype), weight.to(dtype), bias, attr, [], algorithm
        )
        return out if residual is None else out + residual
    if needs_grad:
        out = _OneDnnLinear.apply(x, weight, bias, gelu)
        return out if residual is None else out + residual
    if gelu:
        out = torch.ops.mkldnn._linear_pointwise(x, weight, bias, "gelu", [], "tanh")
        return out if residual is None else out + residual
    if residual is not None:
        return torch.ops.mkldnn._linear_pointwise.binary(x, residual, weight, bias, "add")
    return torch.ops.mkldnn._linear_pointwise(x, weight, bias, "none", [], "")


def _matmul(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """``x @ weight.T`` through oneDNN; ``weight`` may be a strided view (read in place), ``x``
    is made contiguous (a copy if it is not)."""
    return torch.ops.mkldnn._linear_pointwise(x, weight, None, "none", [], "")


def _weight_grad(grad_rows: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """``grad_rows.T @ rows``, (out, in), summed over the M rows of both.

    oneDNN wants the summed axis contiguous in its left operand, so one operand is transposed
    into a copy: the narrower one (half the copy of the other for fc1 and fc2).
    """
    if rows.shape[1] <= grad_rows.shape[1]:
        return _matmul(rows.t().contiguous(), grad_rows.t()).t()
    return _matmul(grad_rows.t().contiguous(), rows.t())


class _OneDnnLinear(torch.autograd.Function):
    """A linear layer, optionally followed by the tanh GELU, whose forward and backward
    products run through oneDNN.

    With the GELU the forward is oneDNN's fused kernel (so the values equal the no-gradient
    path's bit for bit) and the backward recomputes the pre-activation it needs (one more
    product instead of keeping it, and instead of PyTorch's separate GELU pass).
    """

    @staticmethod
    def forward(
        ctx: torch.autograd.function.FunctionCtx,
        x: torch.Tensor,
        weight: torch.Tensor,
        bias: torch.Tensor | None,
        gelu: bool,
    ) -> torch.Tensor:
        ctx.save_for_backward(x, weight, bias)
        ctx.gelu = gelu
        if gelu:
            return torch.ops.mkldnn._linear_pointwise(x, weight, bias, "gelu", [], "tanh")
        return torch.ops.mkldnn._linear_pointwise(x, weight, bias, "none", [], "")

    @staticmethod
    @once_differentiable
    def backward(
        ctx: torch.autograd.function.FunctionCtx, grad: torch.Tensor
    ) -> tuple[torch.Tensor | None, ...]:
        x, weight, bias = ctx.saved_tensors
        if ctx.gelu:
            before = torch.ops.mkldnn._linear_pointwise(x, weight, bias, "none", [], "")
            grad = torch.ops.aten.gelu_backward(grad, before, approximate="tanh")
        grad_rows = grad.reshape(-1, grad.shape[-1])  # (M, out)
        grad_x = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_x = _matmul(grad_rows, weight.t()).reshape(x.shape)  # (M, in)
        if ctx.needs_input_grad[1]:
            grad_weight = _weight_grad(grad_rows, x.reshape(-1, x.shape[-1]))
        if bias is not None and ctx.needs_input_grad[2]:
            grad_bias = grad_rows.sum(0)
        return grad_x, grad_weight, grad_bias, None
