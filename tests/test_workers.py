"""munet.workers: the one process pool of the demo and the benchmark (the interrupt case is
tests/benchmark/test_run.py's, the parent's death tests/agents/test_demo_workers_die.py's)."""

import operator

import pytest

from munet.workers import WorkerPool


def test_results_come_back_from_spawned_workers_and_a_failed_job_is_raised():
    results = []
    with WorkerPool(2, threads=1) as pool:
        pool.run([(operator.add, (1, 2)), (operator.mul, (3, 4))], on_result=results.append)
        assert sorted(results) == [3, 12]
        with pytest.raises(ZeroDivisionError):
            pool.run([(operator.add, (1, 1)), (operator.truediv, (1, 0))])
        # The pool still runs jobs after a failed one (the demo's next round, say).
        pool.run([(operator.sub, (5, 2))], on_result=results.append)
    assert results[-1] == 3


def test_a_pool_is_used_inside_its_with_block_and_needs_a_worker():
    with pytest.raises(RuntimeError, match="outside its `with` block"):
        WorkerPool(1).run([(operator.add, (1, 2))])
    with pytest.raises(ValueError, match="workers 0: expected at least 1"):
        WorkerPool(0)
