import os
import subprocess
import sys

import pytest
import torch

from munet.training import threads
from munet.training.threads import (
    apply_thread_policy,
    prepare_openmp_env,
    resolve_num_threads,
    usable_cpu_count,
)


def _affinity() -> int:
    return len(os.sched_getaffinity(0))


def test_prepare_openmp_env_sets_passive_wait_and_keeps_a_user_value(monkeypatch):
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    # torch is already loaded in the test process: the call reports it came too late.
    assert prepare_openmp_env() is False
    assert os.environ["OMP_WAIT_POLICY"] == "PASSIVE"
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    prepare_openmp_env()
    assert os.environ["OMP_WAIT_POLICY"] == "ACTIVE"


def _openmp_spin_count(code: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_"))}
    env["OMP_DISPLAY_ENV"] = "verbose"  # GNU OpenMP prints its settings when torch loads it
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if "GOMP_SPINCOUNT" in line]
    if not lines:
        pytest.skip("this torch build's OpenMP runtime does not print its settings")
    return lines[0].split("=")[1].strip().strip("'")


def test_the_munet_command_sets_the_wait_policy_before_torch_loads_openmp():
    # GNU OpenMP spins 300000 times by default before a waiting thread sleeps; passive: 0.
    via_cli = _openmp_spin_count(
        "import sys, munet.cli\nassert 'torch' not in sys.modules\nimport torch"
    )
    assert via_cli == "0"


def test_importing_the_threads_module_does_not_import_torch():
    code = "import sys, munet.training.threads\nprint('torch' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.stdout.strip() == "False", result.stderr


@pytest.mark.parametrize(
    ("files", "cap"),
    [
        ({"cpu.max": "150000 100000\n"}, 2),  # 1.5 CPUs of quota -> 2 threads
        ({"cpu.max": "50000 100000\n"}, 1),
        ({"cpu.max": "max 100000\n"}, None),
        ({"cpu/cpu.cfs_quota_us": "100000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 1),
        ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),
        ({}, None),
    ],
)
def test_usable_cpu_count_caps_the_affinity_by_the_cgroup_quota(tmp_path, files, cap):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    expected = _affinity() if cap is None else min(_affinity(), cap)
    assert usable_cpu_count(tmp_path) == expected


def test_resolve_num_threads():
    assert resolve_num_threads(3) == 3
    assert resolve_num_threads(0) == usable_cpu_count()
    with pytest.raises(ValueError, match="num_threads must be >= 0"):
        resolve_num_threads(-1)


def test_apply_thread_policy_sets_torch_threads(monkeypatch):
    before = torch.get_num_threads()
    monkeypatch.setattr(threads, "usable_cpu_count", lambda: 1)
    try:
        assert apply_thread_policy(0) == 1
        assert torch.get_num_threads() == 1
        assert apply_thread_policy(2) == 2
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_the_demo_pool_counts_cpus_as_the_thread_policy_does(monkeypatch):
    """One CPU count: the demo's default workers follow munet.cpus (cgroup quota included)."""
    from munet.agents import demo

    monkeypatch.setattr(demo, "usable_cpu_count", lambda: 3)
    assert [demo.default_workers(n) for n in (1, 2, 3, 8)] == [1, 2, 3, 3]
