"""Device lists for the multi-device estimators, moving problems, and the worker threads."""

import pytest
import torch

from munet.es import DigitsLearningRate, LinearQuadratic, devices_for_count, resolve_devices
from munet.es.devices import DeviceWorkers, move_tree, problem_on_device


def test_a_count_means_cpu_shards_without_cuda_and_cuda_devices_with(monkeypatch):
    monkeypatch.setattr("munet.es.devices._cuda_count", lambda: 0)
    assert devices_for_count(3) == ["cpu", "cpu", "cpu"]
    monkeypatch.setattr("munet.es.devices._cuda_count", lambda: 2)
    assert devices_for_count(2) == ["cuda:0", "cuda:1"]
    with pytest.raises(ValueError, match="3 devices asked for, this machine has 2 CUDA device"):
        devices_for_count(3)
    with pytest.raises(ValueError, match="device count must be a positive int, got 0"):
        devices_for_count(0)


def test_the_same_device_may_repeat():
    assert resolve_devices(["cpu", torch.device("cpu"), "cpu"]) == [torch.device("cpu")] * 3


def test_problem_on_another_device_is_a_moved_copy():
    # The meta device stands in for an accelerator: tensors move, the original stays put.
    problem = DigitsLearningRate(episode_length=3, hidden=4)
    assert problem_on_device(problem, torch.device("cpu")) is problem
    moved = problem_on_device(problem, torch.device("meta"))
    assert moved is not problem and moved.x_train.device.type == "meta"
    assert problem.x_train.device.type == "cpu"
    assert moved.episode_length == 3


def test_a_problem_with_its_own_to_is_asked_to_move():
    class Movable(LinearQuadratic):
        def to(self, device):
            self.moved_to = device
            return self

    problem = Movable()
    assert problem_on_device(problem, torch.device("meta")).moved_to == torch.device("meta")


def test_move_tree_keeps_structure_and_non_tensors():
    tree = {"a": (torch.ones(2), [torch.zeros(1), 3]), "b": None}
    moved = move_tree(tree, torch.device("meta"))
    assert moved["a"][0].device.type == "meta" and moved["a"][1][1] == 3 and moved["b"] is None
    assert isinstance(moved["a"], tuple) and isinstance(moved["a"][1], list)


def _doubling(index, device, value):
    yield  # a shard's work yields between steps
    return index, value * 2


def _failing(index, device, value):
    yield
    raise RuntimeError(f"shard {index} failed")


@pytest.mark.parametrize("concurrency", ["threads", "streams"])
def test_workers_return_results_in_device_order_and_pass_errors_on(concurrency):
    workers = DeviceWorkers([torch.device("cpu")] * 3, concurrency)
    assert workers.run(_doubling, [1, 2, 3]) == [(0, 2), (1, 4), (2, 6)]
    with pytest.raises(RuntimeError, match="shard 0 failed"):
        workers.run(_failing, [0, 0, 0])
    with pytest.raises(ValueError, match="2 arguments for 3 devices"):
        workers.run(_failing, [0, 0])
    workers.close()


def test_streams_take_one_step_of_every_shard_in_turn():
    order = []

    def work(index, device, steps):
        for step in range(steps):
            order.append((step, index))
            yield
        return index

    assert DeviceWorkers([torch.device("cpu")] * 2, "streams").run(work, [2, 2]) == [0, 1]
    assert order == [(0, 0), (0, 1), (1, 0), (1, 1)]


def test_concurrency_defaults_and_bad_values():
    assert DeviceWorkers([torch.device("cpu")] * 2).concurrency == "threads"
    with pytest.raises(ValueError, match="unknown concurrency 'fibres'; known: auto, threads"):
        DeviceWorkers([torch.device("cpu")], "fibres")
