"""The seed's ViT, train step and eval step in JAX/Flax, for benchmarks/jax_step.py (a library
module: jax_step.py times these against munet and prints the `ratio:` lines).

Written from the behaviour the µNet seed (seeds/000_*) and its model, vit_jax's
``models_vit.VisionTransformer``, define; no code of theirs is copied:

- the model: a p x p stride-p convolution (``embedding``), a learned ``cls`` token prepended,
  a learned position embedding added (``Transformer/posembed_input``), pre-LayerNorm blocks
  (LayerNorm eps 1e-6, multi-head attention with separate query/key/value projections of
  shape (D, H, Dh), an MLP with Flax's default tanh-approximated GELU), a final LayerNorm
  (``encoder_norm``), the cls token's features into a dense ``head``; dropout off (ViT-Ti's);
  parameter names and shapes as vit_jax's, so :func:`flax_params` fills them from munet's
  components through ``munet.models.checkpoints.save_npz`` (the same layout as an augreg
  checkpoint);
- the train step: softmax cross-entropy from one-hot labels, ``jax.grad``, then the seed's
  optimizer (global-norm clipping at 1.0, then SGD with momentum, Nesterov per the hparams and a
  bfloat16 momentum accumulator, under the seed's lr schedule), jitted with the parameters and
  the optimizer state donated;
- the eval step: jitted mean accuracy of a batch.

Requires the ``bench-jax`` extra (``pip install -e ".[bench-jax]"``; ``make setup`` installs it).
"""

from __future__ import annotations

import tempfile
from functools import partial
from pathlib import Path

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from munet.models import VitArch
from munet.models.checkpoints import save_npz


class _MlpBlock(nn.Module):
    mlp_dim: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        width = x.shape[-1]
        x = nn.Dense(self.mlp_dim, name="Dense_0")(x)
        x = nn.gelu(x)  # approximate=True by default: the tanh form
        return nn.Dense(width, name="Dense_1")(x)


class _EncoderBlock(nn.Module):
    num_heads: int
    mlp_dim: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        y = nn.LayerNorm(epsilon=1e-6, name="LayerNorm_0")(x)
        y = nn.MultiHeadDotProductAttention(
            num_heads=self.num_heads, name="MultiHeadDotProductAttention_1"
        )(y, y)
        x = x + y
        y = nn.LayerNorm(epsilon=1e-6, name="LayerNorm_2")(x)
        return x + _MlpBlock(self.mlp_dim, name="MlpBlock_3")(y)


class _PositionEmbedding(nn.Module):
    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        shape = (1, x.shape[1], x.shape[2])
        return x + self.param("pos_embedding", nn.initializers.normal(0.02), shape)


class _Encoder(nn.Module):
    num_layers: int
    num_heads: int
    mlp_dim: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        x = _PositionEmbedding(name="posembed_input")(x)
        for index in range(self.num_layers):
            x = _EncoderBlock(self.num_heads, self.mlp_dim, name=f"encoderblock_{index}")(x)
        return nn.LayerNorm(epsilon=1e-6, name="encoder_norm")(x)


class SeedVit(nn.Module):
    """vit_jax's VisionTransformer (classifier "token", no representation layer, no dropout).

    Call with images (B, S, S, 3) (channels last, as the seed feeds them) and ``train``
    (accepted for the seed's call signature; nothing here depends on it). Returns logits.
    """

    width: int
    num_layers: int
    num_heads: int
    mlp_dim: int
    patch_size: int
    num_classes: int

    @nn.compact
    def __call__(self, images: jax.Array, train: bool = False) -> jax.Array:
        del train  # no dropout in this model
        patch = (self.patch_size, self.patch_size)
        x = nn.Conv(self.width, patch, strides=patch, padding="VALID", name="embedding")(images)
        batch, rows, cols, width = x.shape
        x = jnp.reshape(x, (batch, rows * cols, width))
        cls = self.param("cls", nn.initializers.zeros, (1, 1, width))
        x = jnp.concatenate([jnp.tile(cls, (batch, 1, 1)), x], axis=1)
        x = _Encoder(self.num_layers, self.num_heads, self.mlp_dim, name="Transformer")(x)
        return nn.Dense(self.num_classes, name="head")(x[:, 0])


def seed_vit(arch: VitArch) -> SeedVit:
    """The Flax model of ``arch`` (which must have a head)."""
    if not arch.num_classes:
        raise ValueError(f"the seed's train step needs a head; got num_classes=0 in {arch}")
    return SeedVit(
        arch.width, arch.num_layers, arch.num_heads, arch.mlp_dim, arch.patch_size, arch.num_classes
    )


def flax_params(components: dict, arch: VitArch) -> dict:
    """munet components as the Flax model's parameter tree (vit_jax names and layouts)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "params.npz"
        save_npz(path, components, arch)
        with np.load(path, allow_pickle=False) as arrays:
            flat = {key: arrays[key] for key in arrays.files}
    tree: dict = {}
    for key, value in flat.items():
        *parents, leaf = key.split("/")
        node = tree
        for parent in parents:
            node = node.setdefault(parent, {})
        node[leaf] = jnp.asarray(value)
    return tree


def seed_optimizer(hparams: dict, steps_between_validations: int, num_validations: int):
    """The seed's ``get_optimizer`` for a path's hparams, built from optax's own pieces."""
    opt_lr = float(hparams["opt_lr"])
    schedule = str(hparams["opt_lr_schedule"])
    warmup_ratio = float(hparams["opt_lr_warmup_ratio"])
    min_lr = opt_lr / 1000.0
    train_steps = int(steps_between_validations * num_validations)
    if schedule == "constant":
        learning_rate = 0.5 * opt_lr
    elif schedule == "linear":
        warmup = int(warmup_ratio * train_steps)
        learning_rate = optax.join_schedules(
            [
                optax.linear_schedule(min_lr, opt_lr, warmup),
                optax.linear_schedule(opt_lr, min_lr, train_steps - warmup),
            ],
            [warmup],
        )
    elif schedule == "cosine":
        learning_rate = optax.warmup_cosine_decay_schedule(
            min_lr, opt_lr, int(warmup_ratio * train_steps), train_steps
        )
    elif schedule == "restarts":
        interval = int(steps_between_validations)
        cycle = dict(
            init_value=min_lr,
            peak_value=opt_lr,
            warmup_steps=int(warmup_ratio * interval),
            decay_steps=interval,
        )
        learning_rate = optax.sgdr_schedule([cycle] * num_validations)
    else:
        raise ValueError(f"unknown lr schedule {schedule!r}")
    return optax.chain(
        optax.clip_by_global_norm(1.0),
        optax.sgd(
            learning_rate=learning_rate,
            momentum=float(hparams["opt_momentum"]),
            nesterov=bool(hparams["opt_nesterov"]),
            accumulator_dtype=jnp.bfloat16,
        ),
    )


def _identity(params: dict) -> dict:
    return params


@partial(jax.jit, static_argnames=["model", "optimizer", "format_params_fn"], donate_argnums=[0, 2])
def train_step(params, fixed_params, opt_state, images, labels, model, optimizer, format_params_fn):
    """The seed's train step: returns (params, opt_state) after one update."""

    def loss_fn(params, fixed_params, images, labels):
        logits = model.apply({"params": format_params_fn({**params, **fixed_params})}, images)
        one_hot = jax.nn.one_hot(labels, logits.shape[-1])
        return -jnp.mean(jnp.sum(one_hot * nn.log_softmax(logits), axis=-1))

    grads = jax.grad(loss_fn)(params, fixed_params, images, labels)
    updates, opt_state = optimizer.update(grads, opt_state, params=params)
    return optax.apply_updates(params, updates), opt_state


@partial(jax.jit, static_argnames="model")
def eval_step(params, images, labels, model):
    """The seed's eval step: the batch's mean accuracy."""
    logits = model.apply({"params": params}, images)
    return (logits.argmax(axis=-1) == labels).mean()


def seed_train_step(params, opt_state, images, labels, model, optimizer):
    """:func:`train_step` with no frozen parameters (every tensor trains, as in the
    benchmark's munet side)."""
    return train_step(params, {}, opt_state, images, labels, model, optimizer, _identity)


def to_channels_last(images) -> jax.Array:
    """A torch (B, 3, S, S) batch as the (B, S, S, 3) array the seed's model reads."""
    return jnp.asarray(images.permute(0, 2, 3, 1).contiguous().numpy())
