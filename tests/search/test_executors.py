import builtins
import sys

import pytest

from munet.search.executors import (
    RAY_EXTRA_HINT,
    InProcessExecutor,
    JobOutcome,
    RayExecutor,
    make_executor,
)


def _square(x):
    return x * x


def _fail(x):
    raise ArithmeticError(f"bad input {x}")


def test_in_process_runs_jobs_first_in_first_out_when_waited_for():
    calls = []

    def record(x):
        calls.append(x)
        return x + 1

    executor = InProcessExecutor(num_workers=3)
    for job_id, value in ((7, 10), (3, 20), (5, 30)):
        executor.submit(job_id, record, value)
    assert calls == []  # nothing runs before the driver waits
    assert executor.in_flight() == [7, 3, 5]
    assert executor.wait() == [JobOutcome(7, result=11)]
    assert executor.wait() == [JobOutcome(3, result=21)]
    assert calls == [10, 20]
    assert executor.in_flight() == [5]


def test_in_process_failure_is_an_outcome_not_a_crash():
    executor = InProcessExecutor()
    executor.submit(0, _fail, 3)
    executor.submit(1, _square, 3)
    failed = executor.wait()[0]
    assert not failed.ok and "ArithmeticError: bad input 3" in failed.error
    assert executor.wait() == [JobOutcome(1, result=9)]


def test_in_process_rejects_duplicate_ids_and_empty_wait_and_cancels():
    executor = InProcessExecutor(2)
    executor.submit(0, _square, 1)
    with pytest.raises(ValueError, match="job id 0 is already in flight"):
        executor.submit(0, _square, 2)
    executor.submit(1, _square, 2)
    assert executor.cancel_all() == [0, 1]
    with pytest.raises(RuntimeError, match="no job in flight"):
        executor.wait()
    with pytest.raises(ValueError, match="num_workers"):
        InProcessExecutor(0)


def test_make_executor_defaults_to_in_process():
    executor = make_executor(4)
    assert isinstance(executor, InProcessExecutor) and executor.num_workers == 4


def test_ray_executor_without_ray_names_the_extra(monkeypatch):
    real_import = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray" or name.startswith("ray."):
            raise ImportError("No module named 'ray'")
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "ray", raising=False)
    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(ImportError, match=r"munet-evolve\[ray\]") as info:
        RayExecutor(1)
    assert str(info.value) == RAY_EXTRA_HINT


def test_ray_is_imported_only_by_the_executor():
    import subprocess

    code = (
        "import sys, munet.search, munet.search.driver, munet.search.petridish_loop, "
        "munet.search.objectives.nasbench, munet.cli.search; print('ray' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
