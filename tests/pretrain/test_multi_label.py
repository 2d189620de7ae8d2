import re
from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file

from munet.pretrain.generators import make_recipe, sample_batch
from munet.pretrain.loop import _train_step, batch_for_step, pretrain
from munet.pretrain.objectives import multi_label_loss, pretrain_loss, shown_classes
from munet.pretrain.spec import HeldOut, evaluate, new_model, new_optimizer


@pytest.fixture
def multi_spec(tiny_spec):
    return replace(tiny_spec, instances=3, multi_label=True, label_smoothing=0.0)


def test_each_instance_draws_its_own_class_and_absent_ones_are_minus_one():
    recipe = make_recipe("fractal", 50, 0, instances=3, multi_label=True)
    images, labels = sample_batch(recipe, 256, 16, torch.Generator().manual_seed(1))
    assert images.shape == (256, 3, 16, 16) and labels.shape == (256, 3)
    shown = labels >= 0
    counts = shown.sum(dim=1)
    # Each row shows its first `count` instances, 1 to K of them, every count drawn.
    assert torch.equal(shown, torch.arange(3)[None, :] < counts[:, None])
    assert set(counts.tolist()) == {1, 2, 3}
    assert int(labels.max()) < 50
    # Classes differ within images (same-class instances would repeat the first label).
    full = labels[counts == 3]
    assert bool((full != full[:, :1]).any(dim=1).float().mean() > 0.9)


@pytest.mark.parametrize(
    ("recipe", "instances"), [("noise", 3), ("fractal+contours", 3), ("fractal", 1)]
)
def test_multi_label_needs_a_plain_figure_recipe_and_several_instances(recipe, instances):
    with pytest.raises(ValueError, match=re.escape(f"recipe {recipe!r} and instances {instances}")):
        make_recipe(recipe, 10, 0, instances=instances, multi_label=True)


def test_the_spec_refuses_multi_label_with_smoothing_or_one_instance(tiny_spec):
    with pytest.raises(ValueError, match="label_smoothing 0.1 with multi_label"):
        replace(tiny_spec, instances=3, multi_label=True).validate()
    with pytest.raises(ValueError, match="instances 1"):
        replace(tiny_spec, multi_label=True, label_smoothing=0.0).validate()


def test_the_loss_is_sigmoid_cross_entropy_with_positives_weighted_classes_over_shown():
    logits = torch.tensor([[0.5, -1.0, 2.0, 0.0], [1.0, 1.0, -2.0, 0.3]])
    # Image 0 shows classes 0 and 2; image 1 shows class 1 twice (one class shown).
    labels = torch.tensor([[0, 2, -1], [1, 1, -1]])
    assert torch.equal(shown_classes(labels, 4), torch.tensor([[1.0, 0, 1, 0], [0, 1, 0, 0]]))
    positive, negative = F.softplus(-logits), F.softplus(logits)  # -log s(x), -log(1 - s(x))
    expected = torch.stack([
        torch.stack([2 * positive[0, 0], negative[0, 1], 2 * positive[0, 2], negative[0, 3]]),
        torch.stack([negative[1, 0], 4 * positive[1, 1], negative[1, 2], negative[1, 3]]),
    ]).mean()  # fmt: skip
    assert multi_label_loss(logits, labels).item() == pytest.approx(expected.item(), rel=1e-6)


def test_pretrain_loss_takes_the_multi_label_loss_for_a_multi_label_spec(multi_spec):
    images, labels = batch_for_step(multi_spec, multi_spec.make_recipe(), 0)
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(len(images), multi_spec.outputs, generator=g)
    expected = multi_label_loss(logits[:, : multi_spec.num_classes], labels)
    assert pretrain_loss(logits, images, labels, multi_spec).item() == pytest.approx(
        expected.item(), rel=1e-6
    )


class _Fixed(torch.nn.Module):
    """A 'model' whose top class is always ``top``."""

    def __init__(self, top: int, num_classes: int):
        super().__init__()
        self.top, self.num_classes = top, num_classes

    def forward(self, images):
        return F.one_hot(torch.full((len(images),), self.top), self.num_classes).float()


def test_held_out_accuracy_counts_an_image_right_when_its_top_class_is_one_it_shows(multi_spec):
    held_out = HeldOut(multi_spec, multi_spec.make_recipe(), torch.device("cpu"), n=64)
    labels = torch.cat([chunk[1] for chunk in held_out.chunks()])
    for top in range(multi_spec.num_classes):
        expected = (labels == top).any(dim=1).float().mean().item()
        assert evaluate(_Fixed(top, multi_spec.num_classes), held_out) == pytest.approx(expected)


def test_the_loops_step_learns_which_classes_the_images_of_a_batch_show(multi_spec):
    # The formulas take far longer than a test to tell apart on fresh batches; fitting one
    # batch shows the labels reach the head the right way round.
    spec = replace(multi_spec, lr=3e-3)
    images, labels = batch_for_step(spec, spec.make_recipe(), 0)
    shown = shown_classes(labels, spec.num_classes).bool()
    model = new_model(spec)
    optimizer = new_optimizer(model, spec)
    for step in range(30):
        _train_step(model, optimizer, images, labels, spec, "fp32", torch.device("cpu"), step)
    with torch.no_grad():
        logits = model(images)[:, : spec.num_classes]
    assert multi_label_loss(logits, labels).item() < 0.3  # 1.16 at the start
    assert torch.equal(logits > 0, shown)


@pytest.mark.parametrize("render", ["thread", "process"])
def test_a_multi_label_run_resumes_to_the_same_weights_in_either_renderer(
    multi_spec, tmp_path, render
):
    kwargs = dict(steps=4, checkpoint_every=2, progress=False, eval_examples=16, render=render)
    straight = pretrain(multi_spec, tmp_path / "a", **kwargs)
    pretrain(multi_spec, tmp_path / "b", stop_at=2, **kwargs)
    resumed = pretrain(multi_spec, tmp_path / "b", **kwargs)
    assert straight.card["sha256"] == resumed.card["sha256"]
    assert straight.card["recipe"]["multi_label"] is True
    if render == "process":  # the same weights as rendering in a thread
        thread = pretrain(multi_spec, tmp_path / "c", **{**kwargs, "render": "thread"})
        a, b = load_file(str(thread.root_file)), load_file(str(straight.root_file))
        assert all(torch.equal(a[k], b[k]) for k in a)
