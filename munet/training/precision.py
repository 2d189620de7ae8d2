"""Numeric precision of training and evaluation: ``fp32``, ``bf16`` or ``auto``.

``bf16`` runs the model's matrix products and most elementwise ops in bfloat16 through
``torch.autocast``, as the seed's TPU runs do; the parameters (the master weights), their
gradients, the loss (computed from float32 logits) and the optimizer's maths stay float32.
``fp32`` runs everything in float32. ``auto`` picks ``bf16`` where the device computes
bfloat16 natively (a CUDA GPU of compute capability 8.0 or more; a CPU with AVX512-BF16 or AMX
tiles, or an Arm CPU with the BF16 extension) and ``fp32`` elsewhere: emulated bfloat16 is
much slower than float32 (on an AVX2-only CPU it trained at 0.14-0.18x float32's speed,
``python benchmarks/train_throughput.py --precisions fp32,bf16``; docs/speed.md).

The precision is an agent config field (``precision``), saved with every state; the resolved
one is what :func:`resolve_precision` returns for a device.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator

import torch

PRECISIONS = ("fp32", "bf16", "auto")
# /proc/cpuinfo flags of CPUs whose vector units multiply bfloat16 natively.
_NATIVE_BF16_CPU_FLAGS = frozenset({"avx512_bf16", "amx_bf16", "bf16"})


def check_precision(precision: str) -> str:
    """Returns ``precision`` if it is a known name.

    Raises:
        ValueError: an unknown name (the message lists the known ones).
    """
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; known: {', '.join(PRECISIONS)}")
    return precision


@functools.lru_cache(maxsize=1)
def _cpu_flags() -> frozenset[str]:
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as cpuinfo:
            for line in cpuinfo:
                key, _, value = line.partition(":")
                # x86 lists "flags", Arm "Features".
                if key.strip() in ("flags", "Features"):
                    return frozenset(value.split())
    except OSError:
        pass
    return frozenset()


def native_bf16(device: torch.device | str) -> bool:
    """Whether ``device`` multiplies bfloat16 matrices in hardware (not emulated)."""
    device = torch.device(device)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            return False
        major, _ = torch.cuda.get_device_capability(device)
        return major >= 8
    if device.type == "cpu":
        return bool(_cpu_flags() & _NATIVE_BF16_CPU_FLAGS)
    return False


def resolve_precision(precision: str, device: torch.device | str) -> str:
    """The precision a device runs for a configured one: ``fp32`` or ``bf16``.

    Raises:
        ValueError: an unknown precision name.
    """
    check_precision(precision)
    if precision == "auto":
        return "bf16" if native_bf16(device) else "fp32"
    return precision


@contextlib.contextmanager
def autocast(precision: str, device: torch.device | str) -> Iterator[None]:
    """Runs the enclosed ops at ``precision`` (``auto`` is resolved for ``device``).

    Under ``bf16`` the ops autocast lists (matrix products, convolutions, attention) run in
    bfloat16 with float32 inputs cast on the fly; leaf tensors keep their float32 storage, so
    their gradients are float32. Under ``fp32`` this does nothing.
    """
    device = torch.device(device)
    if resolve_precision(precision, device) == "fp32":
        yield
        return
    with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
        yield
