"""The multi-device estimators against the single-device ones: same estimates from the same
seed, replicated data, resume, concurrency of the shards, and bad device lists."""

import threading

import pytest
import torch

from munet.es import (
    DigitsLearningRate,
    InfluenceBalancing,
    LinearQuadratic,
    MetaOptimizer,
    MetaTrainer,
    MultiDeviceTruncatedES,
    MultiDeviceTruncatedPES,
    PESState,
    ShardedState,
    TruncatedES,
    TruncatedPES,
    make_multi_device_estimator,
)

SINGLE = {"pes": TruncatedPES, "tes": TruncatedES}
MULTI = {"pes": MultiDeviceTruncatedPES, "tes": MultiDeviceTruncatedES}
SETTINGS = {"truncation_length": 3, "std": 0.1, "random_initial_offset": 5}


class TiledData(DigitsLearningRate):
    """Digits whose batch for P particles is one batch of P / copies rows repeated ``copies``
    times: what every device of a replicated-data estimator sees, laid out for one device."""

    def __init__(self, copies: int, **options) -> None:
        super().__init__(**options)
        self.copies = copies

    def sample_batch(self, num_particles, generator):
        x, y = super().sample_batch(num_particles // self.copies, generator)
        return x.repeat(self.copies, 1, 1), y.repeat(self.copies, 1)


def _digits(**options):
    return DigitsLearningRate(episode_length=6, batch_size=4, hidden=4, num_knots=2, **options)


def _run(estimator, theta, state, steps):
    outputs = []
    for _ in range(steps):
        output, state = estimator.estimate(theta, state)
        outputs.append(output)
    return outputs, state


def _assert_same_estimates(single_outputs, multi_outputs):
    for single, multi in zip(single_outputs, multi_outputs, strict=True):
        # Each particle's estimate is computed by the same row-wise ops on either layout; only
        # the final mean is summed in another order (per device, then over devices).
        assert torch.equal(single.per_particle_grad, multi.per_particle_grad)
        torch.testing.assert_close(single.grad, multi.grad, rtol=1e-5, atol=1e-7)
        torch.testing.assert_close(single.loss, multi.loss, rtol=1e-5, atol=1e-7)


def _assert_same_state(single_state, multi_state):
    for name, value in vars(single_state).items():
        other = getattr(multi_state, name)
        if isinstance(value, dict):
            for key in value:
                assert torch.equal(value[key], other[key]), f"{name}/{key}"
        elif isinstance(value, torch.Tensor):
            assert torch.equal(value, other), name
        else:
            assert value == other, name


@pytest.mark.parametrize("name", ["pes", "tes"])
@pytest.mark.parametrize(
    "make_problem",
    [lambda: LinearQuadratic(episode_length=7), _digits, InfluenceBalancing],
    ids=["linear_quadratic", "digits", "influence"],
)
def test_multi_device_equals_single_device_with_the_same_seed(name, make_problem):
    # 3 shards of 4 against one estimator of 12; truncations of 3 over episodes of 6-7 steps,
    # staggered, so episode ends fall inside truncations.
    problem = make_problem()
    theta = problem.init_theta()
    single = SINGLE[name](problem, 12, **SETTINGS)
    multi = MULTI[name](problem, ["cpu"] * 3, 4, **SETTINGS)
    single_outputs, single_state = _run(single, theta, single.init_state(theta, 7), 5)
    multi_outputs, multi_state = _run(multi, theta, multi.init_state(theta, 7), 5)
    _assert_same_estimates(single_outputs, multi_outputs)
    assert isinstance(multi_state, ShardedState) and len(multi_state.shards) == 3
    _assert_same_state(single_state, multi.gather(multi_state))


@pytest.mark.parametrize("name", ["pes", "tes"])
def test_replicated_data_equals_single_device_on_the_same_data(name):
    # Every device gets the same batch of 4 rows: the single-device estimator on a problem
    # whose batches are that batch tiled 3 times draws the same numbers in the same order.
    theta = _digits().init_theta()
    single = SINGLE[name](
        TiledData(3, episode_length=6, batch_size=4, hidden=4, num_knots=2), 12, **SETTINGS
    )
    replicated = MULTI[name](_digits(), ["cpu"] * 3, 4, replicate_data=True, **SETTINGS)
    single_outputs, _ = _run(single, theta, single.init_state(theta, 3), 4)
    replicated_outputs, _ = _run(replicated, theta, replicated.init_state(theta, 3), 4)
    _assert_same_estimates(single_outputs, replicated_outputs)
    separate = MULTI[name](_digits(), ["cpu"] * 3, 4, **SETTINGS)
    separate_outputs, _ = _run(separate, theta, separate.init_state(theta, 3), 4)
    assert not torch.equal(separate_outputs[-1].grad, replicated_outputs[-1].grad)


def test_replicated_data_changes_nothing_for_a_problem_without_data():
    problem = LinearQuadratic(episode_length=7)
    theta = problem.init_theta()
    single = TruncatedPES(problem, 8, **SETTINGS)
    multi = MultiDeviceTruncatedPES(problem, ["cpu", "cpu"], 4, replicate_data=True, **SETTINGS)
    single_outputs, _ = _run(single, theta, single.init_state(theta, 0), 4)
    multi_outputs, _ = _run(multi, theta, multi.init_state(theta, 0), 4)
    _assert_same_estimates(single_outputs, multi_outputs)


def test_saved_state_resumes_bit_for_bit_and_on_another_device_list(tmp_path):
    problem = _digits()
    theta = problem.init_theta()
    multi = MultiDeviceTruncatedPES(problem, ["cpu"] * 2, 3, **SETTINGS)
    _, middle = _run(multi, theta, multi.init_state(theta, 2), 2)
    multi.save_state(middle, tmp_path / "state")
    # The file is the single-device layout: a PESState with all 6 particles.
    assert TruncatedPES(problem, 6).load_state(tmp_path / "state").inner_step.shape == (6,)
    restored = MultiDeviceTruncatedPES(problem, ["cpu"] * 2, 3, **SETTINGS).load_state(
        tmp_path / "state"
    )
    straight, _ = _run(multi, theta, middle, 3)
    resumed, _ = _run(multi, theta, restored, 3)
    for a, b in zip(straight, resumed, strict=True):
        assert torch.equal(a.grad, b.grad) and torch.equal(a.loss, b.loss)
        assert torch.equal(a.per_particle_grad, b.per_particle_grad)
    # The same file on 3 shards of 2, and on one device: same particles, same estimates.
    for other in (
        MultiDeviceTruncatedPES(problem, ["cpu"] * 3, 2, **SETTINGS),
        TruncatedPES(problem, 6, **SETTINGS),
    ):
        elsewhere, _ = _run(other, theta, other.load_state(tmp_path / "state"), 3)
        _assert_same_estimates(straight, elsewhere)
    with pytest.raises(ValueError, match=r"holds 6 particles; this estimator has 8"):
        MultiDeviceTruncatedPES(problem, ["cpu"] * 2, 4).load_state(tmp_path / "state")


def test_meta_trainer_runs_and_restores_with_a_multi_device_estimator(tmp_path):
    problem = InfluenceBalancing()
    optimizer = MetaOptimizer("sgd", lr=1e-4)

    def estimator():
        return MultiDeviceTruncatedPES(problem, ["cpu", "cpu"], 50, truncation_length=1, std=0.1)

    trainer = MetaTrainer(estimator(), optimizer, seed=3)
    trainer.run(4)
    trainer.save(tmp_path / "run")
    trainer.run(3)
    restored = MetaTrainer.restore(tmp_path / "run", estimator(), optimizer)
    restored.run(3)
    assert torch.equal(restored.theta, trainer.theta)
    assert restored.history == trainer.history


def test_estimate_does_not_mutate_its_input_state():
    problem = _digits()
    multi = MultiDeviceTruncatedPES(problem, ["cpu"] * 2, 2, **SETTINGS)
    theta = problem.init_theta()
    state = multi.init_state(theta, 0)
    before = multi.gather(state)
    snapshot = {name: value.clone() for name, value in before.pos.items()}
    accumulator, rng = before.accumulator.clone(), state.rng.clone()
    _run(multi, theta, state, 2)
    after = multi.gather(state)
    assert torch.equal(after.accumulator, accumulator) and torch.equal(state.rng, rng)
    for name, value in snapshot.items():
        assert torch.equal(after.pos[name], value)


def test_a_single_device_state_is_accepted_by_estimate():
    problem = LinearQuadratic(episode_length=7)
    theta = problem.init_theta()
    single = TruncatedPES(problem, 4, **SETTINGS)
    multi = MultiDeviceTruncatedPES(problem, ["cpu"] * 2, 2, **SETTINGS)
    state = single.init_state(theta, 1)
    assert isinstance(state, PESState)
    (single_output,), _ = _run(single, theta, state, 1)
    (multi_output,), _ = _run(multi, theta, state, 1)
    _assert_same_estimates([single_output], [multi_output])
    tes_state = TruncatedES(problem, 4).init_state(theta, 1)
    with pytest.raises(TypeError, match="expected a PESState or ShardedState, got TruncatedState"):
        multi.estimate(theta, tes_state)


def test_shards_interleaved_on_one_thread_give_the_same_estimates():
    problem = _digits()
    theta = problem.init_theta()
    threads = MultiDeviceTruncatedPES(problem, ["cpu"] * 3, 2, concurrency="threads", **SETTINGS)
    streams = MultiDeviceTruncatedPES(problem, ["cpu"] * 3, 2, concurrency="streams", **SETTINGS)
    assert (threads.concurrency, streams.concurrency) == ("threads", "streams")
    threaded, _ = _run(threads, theta, threads.init_state(theta, 4), 3)
    interleaved, _ = _run(streams, theta, streams.init_state(theta, 4), 3)
    assert torch.is_grad_enabled()  # the shards' no_grad steps leave the caller's mode alone
    for a, b in zip(threaded, interleaved, strict=True):
        assert torch.equal(a.grad, b.grad) and torch.equal(a.per_particle_grad, b.per_particle_grad)


class RendezvousProblem(LinearQuadratic):
    """Every ``step`` waits until all shards have reached it: shards run one after another
    would never meet, and the barrier's timeout would break it."""

    def __init__(self, parties: int) -> None:
        super().__init__(episode_length=None)
        self.barrier = threading.Barrier(parties, timeout=20)
        self.threads: set[int] = set()

    def step(self, state, theta, batch, inner_step):
        self.barrier.wait()
        self.threads.add(threading.get_ident())
        return super().step(state, theta, batch, inner_step)


def test_shards_of_one_estimate_run_concurrently():
    problem = RendezvousProblem(parties=3)
    multi = MultiDeviceTruncatedPES(problem, ["cpu"] * 3, 2, truncation_length=2)
    theta = problem.init_theta()
    _run(multi, theta, multi.init_state(theta, 0), 2)
    assert len(problem.threads) == 3
    multi.close()


def test_worker_threads_follow_the_callers_thread_count():
    seen = []

    class Recording(LinearQuadratic):
        def step(self, state, theta, batch, inner_step):
            seen.append(torch.get_num_threads())
            return super().step(state, theta, batch, inner_step)

    problem = Recording(episode_length=None)
    multi = MultiDeviceTruncatedPES(problem, ["cpu"] * 2, 2, truncation_length=1)
    theta = problem.init_theta()
    _run(multi, theta, multi.init_state(theta, 0), 1)
    assert seen and set(seen) == {torch.get_num_threads()}  # the fixture pins 1


def test_bad_device_lists_are_named(monkeypatch):
    problem = LinearQuadratic()
    with pytest.raises(
        ValueError,
        match=r"device count mismatch: devices lists 2 \(cpu, cpu\); "
        r"expected num_devices=4",
    ):
        MultiDeviceTruncatedPES(problem, ["cpu", "cpu"], 2, num_devices=4)
    with pytest.raises(ValueError, match="devices is empty"):
        MultiDeviceTruncatedPES(problem, [], 2)
    with pytest.raises(ValueError, match="a list of devices, got the single value 'cpu'"):
        MultiDeviceTruncatedPES(problem, "cpu", 2)
    with pytest.raises(ValueError, match="unknown device 'gpu0'"):
        MultiDeviceTruncatedPES(problem, ["gpu0"], 2)
    with pytest.raises(ValueError, match="unsupported device 'meta'"):
        MultiDeviceTruncatedPES(problem, ["meta"], 2)
    with pytest.raises(ValueError, match="particles_per_device must be a positive int, got 0"):
        MultiDeviceTruncatedPES(problem, ["cpu"], 0)
    monkeypatch.setattr("munet.es.devices._cuda_count", lambda: 0)
    with pytest.raises(ValueError, match="'cuda:0' asked for, but this machine has no CUDA"):
        MultiDeviceTruncatedPES(problem, ["cuda:0"], 2)
    monkeypatch.setattr("munet.es.devices._cuda_count", lambda: 2)
    with pytest.raises(
        ValueError,
        match=r"'cuda:2' does not exist: found 2 CUDA device\(s\) "
        r"\(cuda:0, cuda:1\)",
    ):
        MultiDeviceTruncatedPES(problem, ["cuda:1", "cuda:2"], 2)


def test_make_multi_device_estimator_splits_the_particles():
    problem = LinearQuadratic()
    pes = make_multi_device_estimator("pes", problem, ["cpu"] * 4, 12, std=0.1)
    assert isinstance(pes, MultiDeviceTruncatedPES)
    assert (pes.num_particles, pes.particles_per_device, pes.std) == (12, 3, 0.1)
    assert isinstance(
        make_multi_device_estimator("tes", problem, ["cpu"], 3), MultiDeviceTruncatedES
    )
    with pytest.raises(ValueError, match="10 particles do not split evenly over 4 devices"):
        make_multi_device_estimator("pes", problem, ["cpu"] * 4, 10)
    with pytest.raises(ValueError, match="estimator 'tbptt' has no multi-device form"):
        make_multi_device_estimator("tbptt", problem, ["cpu"], 2)


def test_a_batch_without_the_particles_first_is_refused():
    class SharedBatch(LinearQuadratic):
        def sample_batch(self, num_particles, generator):
            return torch.randn(5, 2, generator=generator)  # (B, D): not one row per particle

    problem = SharedBatch()
    multi = MultiDeviceTruncatedPES(problem, ["cpu"] * 2, 2)
    theta = problem.init_theta()
    with pytest.raises(
        ValueError,
        match=r"SharedBatch.sample_batch holds a tensor of shape "
        r"\(5, 2\); .* must be the 4 particles",
    ):
        multi.estimate(theta, multi.init_state(theta, 0))
