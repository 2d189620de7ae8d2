"""benchmarks/jax_step.py compares like with like: the seed's JAX model computes munet's logits
on the same weights, and the seed's train step moves them as munet's does; the script runs and
prints its ratio lines. (No timing is asserted; figures are in docs/speed.md.)"""

import re
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("flax", reason="needs the bench-jax extra")
pytest.importorskip("optax", reason="needs the bench-jax extra")

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
try:
    import seed_jax
finally:
    sys.path.remove(str(BENCHMARKS))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from munet.config import get_preset  # noqa: E402
from munet.models import AssembledVit, VitArch, init_components  # noqa: E402
from munet.training import TrainCandidate, make_optimizer, train_candidates  # noqa: E402


def random_components(arch, image_size, seed=0):
    """Every tensor random (the seed's init zeroes some, which would hide layout errors)."""
    generator = torch.Generator().manual_seed(seed)
    components = init_components(arch, image_size, generator)
    for tensors in components.values():
        for tensor in tensors.values():
            tensor.normal_(0.0, 0.1, generator=generator)
    return components


@pytest.mark.parametrize(("size", "image_size"), [("Ti/16", 32), ("mu/4", 16)])
def test_seed_jax_model_gives_munets_logits_for_the_same_weights(size, image_size):
    arch = VitArch.from_size(size, num_layers=2, num_classes=10)
    components = random_components(arch, image_size)
    images = torch.randn(6, 3, image_size, image_size, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ours = AssembledVit(arch, image_size, components)(images).numpy()
    apply = jax.jit(seed_jax.seed_vit(arch).apply)
    theirs = np.asarray(
        apply({"params": seed_jax.flax_params(components, arch)}, seed_jax.to_channels_last(images))
    )
    assert np.abs(ours).max() > 0.1  # not a degenerate comparison
    np.testing.assert_allclose(theirs, ours, atol=1e-5, rtol=0)


def test_seed_jax_train_steps_move_the_weights_as_munets_do():
    arch = VitArch.from_size("mu/4", num_layers=1, num_classes=10)
    image_size, steps = 8, 3
    hparams = dict(get_preset("VitCpu").hparams_defaults)
    components = random_components(arch, image_size)
    generator = torch.Generator().manual_seed(2)
    batches = [
        (torch.randn(16, 3, image_size, image_size, generator=generator),
         torch.randint(0, 10, (16,), generator=generator))
        for _ in range(steps)
    ]  # fmt: skip

    model = seed_jax.seed_vit(arch)
    optimizer = seed_jax.seed_optimizer(hparams, steps, 1)
    params = seed_jax.flax_params(components, arch)
    before = jax.tree_util.tree_map(np.array, params)
    opt_state = optimizer.init(params)
    for images, labels in batches:
        params, opt_state = seed_jax.seed_train_step(
            params, opt_state, seed_jax.to_channels_last(images), jnp.asarray(labels.numpy()),
            model, optimizer,
        )  # fmt: skip

    trained = {
        name: {key: tensor.clone().requires_grad_(True) for key, tensor in tensors.items()}
        for name, tensors in components.items()
    }
    ours = AssembledVit(arch, image_size, trained)
    trainable = ours.trainable_tensors()
    candidate = TrainCandidate(
        label="pin",
        model=ours,
        trainable=trainable,
        optimizer=make_optimizer(trainable, hparams, steps, 1),
        score_of_quality=lambda quality: float("-inf"),  # never snapshots: keeps the last step
        threshold=float("inf"),
    )
    train_candidates([candidate], iter(batches), batches[:1], steps, 1, progress=False)
    assert candidate.failure is None

    expected = seed_jax.flax_params({k: {n: t.detach() for n, t in v.items()} for k, v in
                                     trained.items()}, arch)  # fmt: skip
    moved = jax.tree_util.tree_map(lambda a, b: np.abs(np.asarray(a) - b).max(), expected, before)
    differ = jax.tree_util.tree_map(
        lambda a, b: np.abs(np.asarray(a) - np.asarray(b)).max(), expected, params
    )
    largest_move = max(jax.tree_util.tree_leaves(moved))
    assert largest_move > 1e-3  # the steps did move the weights
    # Within the rounding of the seed's bfloat16 momentum accumulator (munet keeps float32).
    assert max(jax.tree_util.tree_leaves(differ)) < 3e-3 * largest_move  # measured: 2.8e-4


@pytest.mark.slow
def test_jax_step_script_prints_its_ratio_lines(capsys):
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import jax_step
    finally:
        sys.path.remove(str(BENCHMARKS))
    before = torch.get_num_threads()
    try:
        jax_step.main(
            ["--preset", "VitT3", "--num-layers", "1", "--batch", "8", "--eval-batch", "8",
             "--threads", "1", "--rounds", "1", "--steps", "1", "--eval-batches", "1"]
        )  # fmt: skip
    finally:
        torch.set_num_threads(before)
    out = capsys.readouterr().out
    difference = float(re.search(r"logits max \|munet - JAX\| .*: (\S+)", out).group(1))
    assert difference < 1e-4
    lines = re.findall(r"^ratio: ([0-9.]+)  (train|eval) munet/JAX (.*)$", out, flags=re.M)
    assert [(kind, label.split()[0]) for _, kind, label in lines] == [
        ("train", "auto"), ("train", "fp32"), ("eval", "auto"), ("eval", "fp32")
    ]  # fmt: skip
    assert all(float(value) > 0 for value, _, _ in lines)
