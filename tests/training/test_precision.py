import pytest
import torch

from munet.models import AssembledVit, VitArch, init_components
from munet.training import precision as precision_module
from munet.training.loop import TrainCandidate, evaluate_accuracy, to_device, train_candidates
from munet.training.optim import make_optimizer
from munet.training.precision import autocast, native_bf16, resolve_precision

HPARAMS = {
    "opt_lr": 0.05,
    "opt_lr_schedule": "constant",
    "opt_lr_warmup_ratio": 0.0,
    "opt_momentum": 0.9,
    "opt_nesterov": True,
}
ARCH = VitArch.from_size("mu/4", num_layers=2, num_classes=3)


@pytest.fixture(autouse=True)
def one_thread():
    # Tiny models: one thread is fastest, and far more so on a busy machine.
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def tiny_vit(seed=0, trainable=True):
    generator = torch.Generator().manual_seed(seed)
    components = init_components(ARCH, 8, generator)
    components["head"]["weight"].normal_(0.0, 0.1, generator=generator)
    if trainable:
        components = {
            name: {k: t.requires_grad_(True) for k, t in tensors.items()}
            for name, tensors in components.items()
        }
    return AssembledVit(ARCH, 8, components)


def data(n, seed):
    generator = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 3, (n,), generator=generator)
    images = torch.randn(n, 3, 8, 8, generator=generator) * 0.3
    images[:, 0] += labels[:, None, None].float() - 1.0  # learnable from the first channel
    return images, labels


def test_resolve_precision(monkeypatch):
    assert resolve_precision("fp32", "cpu") == "fp32"
    assert resolve_precision("bf16", "cpu") == "bf16"
    monkeypatch.setattr(precision_module, "_cpu_flags", lambda: frozenset({"avx2"}))
    assert not native_bf16("cpu")
    assert resolve_precision("auto", "cpu") == "fp32"
    monkeypatch.setattr(precision_module, "_cpu_flags", lambda: frozenset({"avx512_bf16"}))
    assert native_bf16("cpu")
    assert resolve_precision("auto", "cpu") == "bf16"
    # AMX tiles alone (the flags of the Xeon measured in docs/speed.md include both).
    monkeypatch.setattr(precision_module, "_cpu_flags", lambda: frozenset({"avx2", "amx_bf16"}))
    assert resolve_precision("auto", "cpu") == "bf16"
    assert resolve_precision("auto", "meta") == "fp32"
    with pytest.raises(ValueError, match="unknown precision 'fp16'; known: fp32, bf16, auto"):
        resolve_precision("fp16", "cpu")


def test_autocast_runs_matrix_products_in_bf16_only_when_asked():
    layer = torch.nn.Linear(4, 2)
    x = torch.randn(3, 4)
    with autocast("bf16", "cpu"):
        assert layer(x).dtype == torch.bfloat16
    with autocast("fp32", "cpu"):
        assert layer(x).dtype == torch.float32


def test_bf16_and_fp32_forward_agree_within_bf16_tolerance():
    model = tiny_vit()
    images, _ = data(64, 1)
    with torch.no_grad():
        full = model(images)
        with autocast("bf16", "cpu"):
            half = model(images)
    assert half.dtype == torch.bfloat16
    # bfloat16 keeps 8 bits of mantissa: ~0.4% relative error per rounding.
    torch.testing.assert_close(half.float(), full, rtol=0.05, atol=0.03)


def test_bf16_training_keeps_float32_master_weights_and_optimizer_state():
    model = tiny_vit()
    trainable = model.trainable_tensors()
    seen = []

    def spy(images):
        logits = model(images)
        seen.append(logits.dtype)
        return logits

    optimizer = make_optimizer(trainable, HPARAMS, 5, 2)
    candidate = TrainCandidate(
        label="bf16",
        model=spy,
        trainable=trainable,
        optimizer=optimizer,
        score_of_quality=lambda q: q,
        threshold=float("-inf"),
        precision="bf16",
    )
    batches = iter([data(32, i) for i in range(10)])
    train_candidates([candidate], batches, [data(64, 99)], 5, 2, progress=False)
    assert candidate.failure is None
    assert set(seen) == {torch.bfloat16}  # the forward ran in autocast, train and eval
    assert all(t.dtype == torch.float32 for t in trainable)
    assert all(t.grad.dtype == torch.float32 for t in trainable)
    assert all(t.dtype == torch.float32 for t in optimizer._trace)


def _train(precision, steps=20):
    model = tiny_vit()
    trainable = model.trainable_tensors()
    candidate = TrainCandidate(
        label=precision,
        model=model,
        trainable=trainable,
        optimizer=make_optimizer(trainable, HPARAMS, steps, 1),
        score_of_quality=lambda q: q,
        threshold=float("-inf"),
        precision=precision,
    )
    batches = iter([data(32, i) for i in range(steps)])
    train_candidates([candidate], batches, [data(128, 99)], steps, 1, progress=False)
    return model, candidate


def test_bf16_and_fp32_training_reach_the_same_parameters_within_bf16_tolerance():
    fp32_model, fp32 = _train("fp32")
    bf16_model, bf16 = _train("bf16")
    assert fp32.evals[-1] > 0.6  # it learned something
    assert abs(bf16.evals[-1] - fp32.evals[-1]) <= 0.05
    for a, b in zip(fp32_model.trainable_tensors(), bf16_model.trainable_tensors(), strict=True):
        torch.testing.assert_close(b, a, rtol=0.05, atol=0.02)
    # The same trained model evaluated both ways: the accuracies match to a few examples.
    test = [data(256, 7)]
    device = torch.device("cpu")
    full = evaluate_accuracy(fp32_model, test, device, "fp32")
    half = evaluate_accuracy(fp32_model, test, device, "bf16")
    assert abs(full - half) <= 3 / 256


def test_unknown_precision_is_rejected():
    model = tiny_vit()
    with pytest.raises(ValueError, match="unknown precision 'half'"):
        TrainCandidate(
            label="x",
            model=model,
            trainable=[],
            optimizer=make_optimizer([], HPARAMS, 1, 1),
            score_of_quality=lambda q: q,
            threshold=0.0,
            precision="half",
        )
    with pytest.raises(ValueError, match="unknown precision 'half'"):
        evaluate_accuracy(model, [data(4, 0)], torch.device("cpu"), "half")


def test_batches_of_images_by_size_reach_the_model_as_a_dict():
    images = {8: torch.randn(4, 3, 8, 8), 16: torch.randn(4, 3, 16, 16)}
    moved = to_device(images, torch.device("cpu"))
    assert set(moved) == {8, 16} and moved[16].shape == (4, 3, 16, 16)
    labels = torch.tensor([0, 1, 0, 1])

    def model(batch):
        assert isinstance(batch, dict)
        return torch.stack([batch[8].mean((1, 2, 3)), batch[16].mean((1, 2, 3))], dim=1)

    expected = float(
        ((images[16].mean((1, 2, 3)) > images[8].mean((1, 2, 3))).long() == labels).float().mean()
    )
    assert evaluate_accuracy(model, [(images, labels)], torch.device("cpu")) == expected
