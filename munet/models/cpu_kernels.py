"""Which CPU kernels the ViT runs: munet's tuned ones or PyTorch's standard ones, per CPU family.

The tuned kernels (munet.models.dense: float32 dense layers through oneDNN with the GELU and
residual fused; munet.models.vit.attention: explicit matmuls for short sequences) were
measured faster on x86 CPUs not made by Intel that have AVX-512 (an AMD EPYC with
avx512_bf16, no AMX: docs/speed.md). There PyTorch's float32 ``F.linear`` calls MKL, whose
fast kernels are chosen by CPU vendor. On Intel CPUs MKL was measured fast and an explicit
attention slower than SDPA, so they keep the standard kernels, as do CPUs not measured
(AVX2-only, Arm).

:func:`set_cpu_kernels` chooses: ``auto`` (tuned on the measured family), ``tuned`` (on any
CPU, to measure them elsewhere: ``benchmarks/cpu_kernels.py --kernels tuned``) or
``standard``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from munet.cpus import cpu_info, cpu_vendor

KERNEL_CHOICES = ("auto", "tuned", "standard")
_choice = "auto"


def set_cpu_kernels(choice: str) -> None:
    """Chooses the ViT's CPU kernels for this process.

    Raises:
        ValueError: an unknown choice.
    """
    global _choice
    if choice not in KERNEL_CHOICES:
        raise ValueError(f"unknown CPU kernels {choice!r}; known: {', '.join(KERNEL_CHOICES)}")
    _choice = choice


@contextlib.contextmanager
def cpu_kernels(choice: str) -> Iterator[None]:
    """Runs the enclosed code with :func:`set_cpu_kernels` ``choice``, then restores it."""
    previous = _choice
    set_cpu_kernels(choice)
    try:
        yield
    finally:
        set_cpu_kernels(previous)


def measured_family() -> bool:
    """Whether this CPU is of the family the tuned kernels were measured on: x86, not made by
    Intel, with AVX-512."""
    vendor = cpu_vendor()
    return vendor not in ("", "GenuineIntel") and "avx512f" in cpu_info().get("flags", "").split()


def tuned_cpu_kernels() -> bool:
    """Whether the ViT runs munet's tuned CPU kernels under the current choice."""
    return _choice == "tuned" or (_choice == "auto" and measured_family())
