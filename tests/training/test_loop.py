import itertools
import logging
import math

import pytest
import torch

from munet.training.loop import TrainCandidate, evaluate_accuracy, rebatch, train_candidates
from munet.training.optim import make_optimizer

HPARAMS = {
    "opt_lr": 0.5,
    "opt_lr_schedule": "constant",
    "opt_lr_warmup_ratio": 0.0,
    "opt_momentum": 0.9,
    "opt_nesterov": True,
}


def blobs(n, seed):
    """Two separable Gaussian blobs in 4 dimensions."""
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 2, (n,), generator=g)
    x = torch.randn(n, 4, generator=g) * 0.5 + (labels[:, None] * 2 - 1).float()
    return x, labels


def batches(seed=0, batch=16):
    for i in itertools.count():
        yield blobs(batch, seed + i)


def linear_candidate(threshold=float("-inf"), score=None, label="path"):
    weight = torch.zeros(2, 4, requires_grad=True)
    bias = torch.zeros(2, requires_grad=True)

    def model(x):
        return x @ weight.T + bias

    opt = make_optimizer([weight, bias], HPARAMS, 5, 3)
    return TrainCandidate(
        label=label,
        model=model,
        trainable=[weight, bias],
        optimizer=opt,
        score_of_quality=score or (lambda q: q),
        threshold=threshold,
    )


VALIDATION = [blobs(64, 1000)]


def test_candidate_learns_and_keeps_its_best_parameters():
    candidate = linear_candidate()
    stats = train_candidates([candidate], batches(), VALIDATION, 5, 3, progress=False)
    assert stats.steps == 15
    assert len(candidate.evals) == 3
    assert candidate.improved and candidate.failure is None
    assert candidate.quality == max(candidate.evals) > 0.9
    assert candidate.best_quality == candidate.quality
    # The restored parameters are those that scored best.
    assert (
        evaluate_accuracy(candidate.model, VALIDATION, torch.device("cpu"))
        == candidate.best_quality
    )


def test_best_snapshot_is_restored_even_if_later_validations_are_better_in_quality():
    # A score that decays with each validation makes the first validation the best one.
    calls = itertools.count()
    candidate = linear_candidate(score=lambda q: q - 0.5 * next(calls))
    seen = []
    train_candidates(
        [candidate],
        batches(),
        VALIDATION,
        5,
        3,
        progress=False,
        on_validation=lambda i, cs: seen.append([t.detach().clone() for t in cs[0].trainable]),
    )
    assert candidate.improved
    assert candidate.best_quality == candidate.evals[0]
    for tensor, first in zip(candidate.trainable, seen[0], strict=True):
        assert torch.equal(tensor, first)
    assert not torch.equal(candidate.trainable[0], seen[-1][0])


def test_candidate_not_beating_its_threshold_is_not_improved():
    candidate = linear_candidate(threshold=1.5)
    train_candidates([candidate], batches(), VALIDATION, 5, 2, progress=False)
    assert not candidate.improved
    assert candidate.best_score is None and len(candidate.evals) == 2


def test_several_candidates_train_on_the_same_batches_independently():
    a, b = linear_candidate(label="a"), linear_candidate(label="b", threshold=2.0)
    train_candidates([a, b], batches(), VALIDATION, 5, 2, progress=False)
    assert a.improved and not b.improved
    # Same data, same init, same optimizer: same trajectory until a's best is restored.
    assert a.evals == b.evals


def test_non_finite_loss_before_any_improvement_drops_the_candidate(caplog):
    good = linear_candidate(label="good")
    bad = linear_candidate(label="bad")
    steps = itertools.count()
    inner = bad.model

    def exploding(x):
        out = inner(x)
        return out * float("nan") if next(steps) == 2 else out

    bad.model = exploding
    with caplog.at_level(logging.WARNING):
        train_candidates([good, bad], batches(), VALIDATION, 5, 3, progress=False)
    assert good.improved and good.failure is None
    assert bad.failure == "non-finite loss or gradient" and not bad.improved
    assert "bad: non-finite loss; candidate dropped" in caplog.text
    assert len(bad.evals) == 1  # The first validation detects the NaN and stops.


def test_non_finite_loss_after_an_improving_validation_keeps_its_parameters(caplog):
    # Issue 17, item 8: the seed keeps the parameters of the best validation; so does munet.
    bad = linear_candidate(label="bad")
    steps = itertools.count()
    inner = bad.model

    def exploding(x):
        out = inner(x)
        return out * float("nan") if next(steps) == 7 else out

    bad.model = exploding
    at_first_validation: list[torch.Tensor] = []

    def snapshot(index, candidates):
        if index == 1:
            at_first_validation.extend(t.detach().clone() for t in candidates[0].trainable)

    with caplog.at_level(logging.WARNING):
        train_candidates([bad], batches(), VALIDATION, 5, 3, progress=False, on_validation=snapshot)
    assert bad.failure == "non-finite loss or gradient"
    assert bad.improved and bad.best_quality == bad.evals[0] == bad.quality
    assert len(bad.evals) == 2 and math.isnan(bad.evals[1])  # Training stopped there.
    for tensor, kept in zip(bad.trainable, at_first_validation, strict=True):
        assert torch.isfinite(tensor).all() and torch.equal(tensor, kept)
    assert "keeping the parameters of its best validation" in caplog.text


def test_train_iterator_ending_early_is_an_error():
    with pytest.raises(ValueError, match="train batches ended after 3 of 10 steps"):
        train_candidates(
            [linear_candidate()], iter([blobs(8, 0)] * 3), VALIDATION, 5, 2, progress=False
        )


def test_rebatch_concatenates_into_fixed_size_batches_exactly():
    x, y = blobs(23, 5)
    pieces = [(x[i : i + 5], y[i : i + 5]) for i in range(0, 23, 5)]
    out = rebatch(pieces, 10)
    assert [len(labels) for _, labels in out] == [10, 10, 3]
    assert torch.equal(torch.cat([images for images, _ in out]), x)
    assert torch.equal(torch.cat([labels for _, labels in out]), y)


def test_train_losses_are_mean_losses_per_validation_interval_aligned_with_evals():
    import torch.nn.functional as F

    candidate = linear_candidate()
    seen_losses: list[float] = []
    data = batches()
    recorded = []

    def recording():
        for images, labels in data:
            recorded.append((images, labels))
            yield images, labels

    # Replay: the loss of every step, recomputed from the same start and the same batches.
    replay = linear_candidate()
    train_candidates([candidate], recording(), VALIDATION, 5, 3, progress=False)
    for images, labels in recorded[:15]:
        replay.optimizer.zero_grad()
        loss = F.cross_entropy(replay.model(images), labels)
        seen_losses.append(float(loss.detach()))
        loss.backward()
        replay.optimizer.step()
    assert candidate.eval_steps == [5, 10, 15]
    assert len(candidate.train_losses) == len(candidate.evals) == 3
    expected = [sum(seen_losses[i : i + 5]) / 5 for i in (0, 5, 10)]
    assert candidate.train_losses == pytest.approx(expected, rel=1e-5)
    assert candidate.train_losses[0] > candidate.train_losses[-1]  # it learns


def test_a_failed_candidate_keeps_losses_and_steps_aligned_with_evals():
    bad = linear_candidate(label="bad")
    steps = itertools.count()
    inner = bad.model

    def exploding(x):
        out = inner(x)
        return out * float("nan") if next(steps) == 7 else out

    bad.model = exploding
    train_candidates([bad], batches(), VALIDATION, 5, 3, progress=False)
    assert bad.eval_steps == [5, 10]
    assert math.isfinite(bad.train_losses[0]) and math.isnan(bad.train_losses[1])
    assert len(bad.evals) == len(bad.train_losses) == 2
