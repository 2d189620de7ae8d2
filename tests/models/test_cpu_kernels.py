"""munet.models.cpu_kernels: the tuned CPU kernels run on the measured family only, unless
forced either way."""

import pytest

from munet.models import cpu_kernels as module
from munet.models.cpu_kernels import cpu_kernels, set_cpu_kernels, tuned_cpu_kernels


@pytest.mark.parametrize(
    ("vendor", "flags", "measured"),
    [
        ("AuthenticAMD", "fpu avx2 avx512f avx512_bf16", True),
        ("AuthenticAMD", "fpu avx2", False),  # AVX2-only: not measured
        ("GenuineIntel", "fpu avx2 avx512f avx512_bf16 amx_bf16", False),  # MKL measured fast
        ("", "fp asimd bf16", False),  # Arm: no vendor_id
    ],
)
def test_auto_follows_the_measured_family(monkeypatch, vendor, flags, measured):
    monkeypatch.setattr(module, "cpu_vendor", lambda: vendor)
    monkeypatch.setattr(module, "cpu_info", lambda: {"flags": flags})
    assert module.measured_family() is measured
    with cpu_kernels("auto"):
        assert tuned_cpu_kernels() is measured
    with cpu_kernels("tuned"):
        assert tuned_cpu_kernels()
    with cpu_kernels("standard"):
        assert not tuned_cpu_kernels()


def test_an_unknown_choice_is_refused_by_name():
    with pytest.raises(
        ValueError, match="unknown CPU kernels 'fast'; known: auto, tuned, standard"
    ):
        set_cpu_kernels("fast")
