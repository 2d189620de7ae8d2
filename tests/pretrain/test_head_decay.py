from dataclasses import replace

import pytest
import torch

from munet.pretrain.spec import new_model, new_optimizer, output_layer


def _one_step_without_gradient(spec):
    """Each parameter before and after one AdamW step on zero gradients: only the weight
    decay moves it, by the factor 1 - lr * decay of its group."""
    model = new_model(spec)
    with torch.no_grad():
        output_layer(model).weight.normal_()  # the head starts at zero: give it something
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    optimizer = new_optimizer(model, spec)
    for param in model.parameters():
        param.grad = torch.zeros_like(param)
    optimizer.step()
    return before, dict(model.named_parameters())


@pytest.mark.parametrize("pre_logits", [0, 6])
def test_the_head_kernel_decays_mult_times_as_strongly_as_the_other_kernels(
    tiny_spec, pre_logits
):
    spec = replace(tiny_spec, head_decay_mult=100.0, pre_logits=pre_logits)
    before, after = _one_step_without_gradient(spec)
    head = "head.2.weight" if pre_logits else "head.weight"
    shrink = spec.lr * spec.weight_decay
    for name, factor in [
        (head, 1 - 100 * shrink),
        ("encoderblock_0.mlp.fc1.weight", 1 - shrink),
        *([("head.0.weight", 1 - shrink)] if pre_logits else []),  # pre-logits: a body kernel
        ("head.2.bias" if pre_logits else "head.bias", 1.0),  # biases do not decay
    ]:
        torch.testing.assert_close(after[name], before[name] * factor, msg=name)


def test_by_default_the_head_decays_as_the_rest_in_the_old_two_groups(tiny_spec):
    model = new_model(tiny_spec)
    groups = new_optimizer(model, tiny_spec).param_groups
    assert [g["weight_decay"] for g in groups] == [tiny_spec.weight_decay, 0.0]
    assert any(p is model.head.weight for p in groups[0]["params"])
    before, after = _one_step_without_gradient(tiny_spec)
    factor = 1 - tiny_spec.lr * tiny_spec.weight_decay
    torch.testing.assert_close(after["head.weight"], before["head.weight"] * factor)


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_a_bad_head_decay_mult_is_refused_naming_it(tiny_spec, bad):
    with pytest.raises(ValueError, match=f"head_decay_mult {bad!r}"):
        replace(tiny_spec, head_decay_mult=bad).validate()
