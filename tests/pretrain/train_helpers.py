"""Shared by the pretraining tests that train a model a few steps."""

import torch
import torch.nn.functional as F

from munet.pretrain.loop import _train_step, batch_for_step
from munet.pretrain.spec import new_optimizer


def train_with_the_loops_step(model, spec, recipe, steps):
    """``steps`` of the loop's own training step (so a test fails if the loop leaves a target
    out), on the run's batches."""
    optimizer = new_optimizer(model, spec)
    for step in range(steps):
        images, labels = batch_for_step(spec, recipe, step)
        _train_step(model, optimizer, images, labels, spec, "fp32", torch.device("cpu"), step)


def extra_target_error(model, spec, images, target, side):
    """Mean squared error of the head's outputs after the class logits against ``target``
    (``thumbnail_target`` or ``hog_target`` at ``side``) on ``images``: the specs that use it
    have that one target on beside the class."""
    with torch.no_grad():
        outputs = model(images)[:, spec.num_classes :]
    return float(F.mse_loss(outputs, target(images, side)))
