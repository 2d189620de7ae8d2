"""Shared by the pretraining tests that train a model a few steps."""

import torch

from munet.pretrain.loop import _train_step, batch_for_step
from munet.pretrain.spec import new_optimizer


def train_with_the_loops_step(model, spec, recipe, steps):
    """``steps`` of the loop's own training step (so a test fails if the loop leaves a target
    out), on the run's batches."""
    optimizer = new_optimizer(model, spec)
    for step in range(steps):
        images, labels = batch_for_step(spec, recipe, step)
        _train_step(model, optimizer, images, labels, spec, "fp32", torch.device("cpu"), step)
