import math
from dataclasses import replace

import pytest
import torch
from safetensors.torch import load_file
from torch import nn

from munet.models.components import lecun_normal
from munet.pretrain.loop import batch_for_step, pretrain
from munet.pretrain.objectives import thumbnail_target
from munet.pretrain.spec import new_model, output_layer
from tests.pretrain.train_helpers import extra_target_error, train_with_the_loops_step


def test_lecun_normal_has_variance_one_over_fan_in_truncated_at_two_std():
    g = torch.Generator().manual_seed(0)
    weight = lecun_normal((512, 256), 256, g)
    assert weight.std().item() == pytest.approx(1 / math.sqrt(256), rel=0.02)
    # Truncated at 2 std of the untruncated normal the correction widens to.
    assert weight.abs().max().item() <= 2 / math.sqrt(256) / 0.8796256610342398 + 1e-6
    assert torch.equal(weight, lecun_normal((512, 256), 256, torch.Generator().manual_seed(0)))


def test_the_pre_logits_layer_is_dense_tanh_and_the_rest_starts_as_without_it(tiny_spec):
    plain = new_model(tiny_spec)
    model = new_model(replace(tiny_spec, pre_logits=6))
    pre_logits, activation, output = model.head
    assert isinstance(activation, nn.Tanh)
    width = plain.head.in_features
    assert pre_logits.weight.shape == (6, width) and output.weight.shape == (5, 6)
    # Flax Dense's init for the hidden layer, vit_jax's zero head after it.
    assert bool((pre_logits.weight != 0).all())
    assert pre_logits.weight.abs().max() <= 2 / math.sqrt(width) / 0.8796256610342398 + 1e-6
    for tensor in (pre_logits.bias, output.weight, output.bias):
        assert not tensor.any()
    before = plain.state_dict()
    for name, tensor in model.state_dict().items():
        if not name.startswith("head."):
            assert torch.equal(tensor, before[name]), name
    images = batch_for_step(tiny_spec, tiny_spec.make_recipe(), 0)[0]
    with torch.no_grad():
        output.weight.normal_()
        logits = model(images)
        head, model.head = model.head, None
        cls = model(images)  # the class token's representation, headless
        model.head = head
        assert torch.allclose(logits, output(torch.tanh(pre_logits(cls))), atol=1e-6)


def test_a_pre_logits_run_trains_through_the_layer_and_ships_the_same_headless_root(
    tiny_spec, tmp_path
):
    # The tiny class task barely moves in a few steps; the thumbnail's regression does.
    spec = replace(tiny_spec, pre_logits=16, thumbnail=2, lr=3e-3)
    recipe = spec.make_recipe()
    images = torch.cat([batch_for_step(spec, recipe, 10_000 + i)[0] for i in range(4)])

    model = new_model(spec)
    start = {name: t.clone() for name, t in model.state_dict().items()}
    before = extra_target_error(model, spec, images, thumbnail_target, 2)
    train_with_the_loops_step(model, spec, recipe, 20)
    assert extra_target_error(model, spec, images, thumbnail_target, 2) < 0.5 * before
    # The gradient reaches through the layer into the blocks.
    for name in ("head.0.weight", "encoderblock_0.mlp.fc1.weight"):
        assert not torch.equal(model.state_dict()[name], start[name]), name
    with_layer = pretrain(spec, tmp_path / "a", steps=2, progress=False, eval_examples=16)
    without = pretrain(tiny_spec, tmp_path / "b", steps=2, progress=False, eval_examples=16)
    a, b = load_file(str(with_layer.root_file)), load_file(str(without.root_file))
    # The layer goes with the head: the root has the same tensors as one pretrained without.
    assert a.keys() == b.keys() and not any(k.startswith("head.") for k in a)
    assert all(a[k].shape == b[k].shape for k in a)
    assert with_layer.card["recipe"]["pre_logits"] == 16


def test_a_pre_logits_run_resumes_to_the_same_weights(tiny_spec, tmp_path):
    spec = replace(tiny_spec, pre_logits=6)
    kwargs = dict(steps=4, checkpoint_every=2, progress=False, eval_examples=16)
    straight = pretrain(spec, tmp_path / "a", **kwargs)
    pretrain(spec, tmp_path / "b", stop_at=2, **kwargs)
    resumed = pretrain(spec, tmp_path / "b", **kwargs)
    assert straight.card["sha256"] == resumed.card["sha256"]


def test_contrastive_rows_start_random_in_the_output_layer_after_pre_logits(tiny_spec):
    model = new_model(replace(tiny_spec, pre_logits=6, contrastive=3))
    output = output_layer(model)
    assert output is model.head[-1]
    assert not output.weight[:5].any()  # the class rows start at zero
    rows = output.weight[5:]
    assert bool((rows != 0).all())
    assert rows.std().item() == pytest.approx(1 / math.sqrt(6), rel=0.6)


def test_a_negative_pre_logits_width_is_refused_naming_it(tiny_spec):
    with pytest.raises(ValueError, match="pre_logits -1"):
        replace(tiny_spec, pre_logits=-1).validate()
