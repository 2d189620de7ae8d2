import dataclasses
import json

import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file

from munet.models import VitArch, load_checkpoint
from munet.pretrain import builtin_roots, objectives
from munet.pretrain.generators import make_recipe
from munet.pretrain.loop import (
    CARD_FILE,
    ROOT_FILE,
    HeldOut,
    PretrainStateError,
    _train_step,
    batch_for_step,
    evaluate,
    pretrain,
)
from munet.pretrain.model import new_model, new_optimizer, pretrain_arch
from munet.pretrain.objectives import OBJECTIVES, head_width, pretrain_loss
from munet.pretrain.objectives.thumbnail import target as thumbnail_target
from munet.pretrain.roots import sha256_file
from munet.pretrain.spec import PretrainSpec


def test_a_resumed_run_ends_with_the_same_weights_as_a_straight_one(tiny_spec, tmp_path):
    straight = pretrain(
        tiny_spec, tmp_path / "a", steps=6, checkpoint_every=4, progress=False, eval_examples=16
    )
    first = pretrain(
        tiny_spec,
        tmp_path / "b",
        steps=6,
        checkpoint_every=4,
        progress=False,
        eval_examples=16,
        stop_at=3,
    )
    assert first.card["steps"] == 3 and first.card["planned_steps"] == 6
    resumed = pretrain(
        tiny_spec, tmp_path / "b", steps=6, checkpoint_every=4, progress=False, eval_examples=16
    )
    assert resumed.card["steps"] == 6
    a, b = load_file(str(straight.root_file)), load_file(str(resumed.root_file))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert straight.card["sha256"] == resumed.card["sha256"]
    # Training moved the weights away from the initialisation.
    start = pretrain(tiny_spec, tmp_path / "c", steps=1, progress=False, eval_examples=16)
    c = load_file(str(start.root_file))
    assert not torch.equal(a["encoderblock_0.mlp.fc1.weight"], c["encoderblock_0.mlp.fc1.weight"])


def test_the_root_loads_through_the_checkpoint_path_and_the_card_describes_it(tiny_spec, tmp_path):
    result = pretrain(
        tiny_spec, tmp_path, steps=2, progress=False, eval_examples=16, root_dtype="float16",
        command="munet pretrain ...",
    )  # fmt: skip
    tensors = load_file(str(tmp_path / ROOT_FILE))
    assert all(t.dtype == torch.float16 for t in tensors.values())
    assert not any(k.startswith("head.") for k in tensors)  # headless
    arch = VitArch.from_size("mu/4", num_layers=1, num_classes=0)
    components = load_checkpoint(tmp_path / ROOT_FILE, arch, 16)  # another image size
    assert components["posembed_input"]["pos_embedding"].shape == (1, 17, 64)
    card = json.loads((tmp_path / CARD_FILE).read_text())
    assert card == result.card
    assert card["sha256"] == sha256_file(tmp_path / ROOT_FILE)
    assert card["steps"] == 2 and card["seed"] == 0 and card["dtype"] == "float16"
    assert card["recipe"]["recipe"] == "fractal" and card["command"] == "munet pretrain ..."
    assert 0 <= card["val_accuracy"] <= 1 and card["history"][-1]["step"] == 2


def test_batches_depend_only_on_seed_and_step(tiny_spec):
    recipe = make_recipe(tiny_spec.recipe, tiny_spec.num_classes, tiny_spec.seed)
    x, y = batch_for_step(tiny_spec, recipe, 7)
    assert torch.equal(batch_for_step(tiny_spec, recipe, 7)[0], x)
    assert not torch.equal(batch_for_step(tiny_spec, recipe, 8)[0], x)


def test_a_work_dir_of_another_run_is_refused(tiny_spec, tmp_path):
    pretrain(tiny_spec, tmp_path, steps=1, progress=False, eval_examples=16)
    with pytest.raises(PretrainStateError, match="not 2"):
        pretrain(tiny_spec, tmp_path, steps=2, progress=False, eval_examples=16)
    other = type(tiny_spec)(**{**tiny_spec.__dict__, "seed": 1})
    with pytest.raises(PretrainStateError, match="another spec"):
        pretrain(other, tmp_path, steps=1, progress=False, eval_examples=16)


def test_a_run_begun_before_a_spec_field_existed_resumes_with_its_default(tiny_spec, tmp_path):
    kwargs = {"steps": 4, "checkpoint_every": 2, "progress": False, "eval_examples": 16}
    straight = pretrain(tiny_spec, tmp_path / "a", **kwargs)
    pretrain(tiny_spec, tmp_path / "b", stop_at=2, **kwargs)
    # A state.json written before `instances` existed lacks it; the run had one per image.
    state = tmp_path / "b" / "state.json"
    meta = json.loads(state.read_text())
    del meta["spec"]["instances"]
    state.write_text(json.dumps(meta))
    assert pretrain(tiny_spec, tmp_path / "b", **kwargs).card["sha256"] == straight.card["sha256"]
    # Another value than the default is another spec.
    other = type(tiny_spec)(**{**tiny_spec.__dict__, "instances": 2})
    with pytest.raises(PretrainStateError, match="another spec"):
        pretrain(other, tmp_path / "b", **kwargs)


def test_a_run_begun_with_a_removed_setting_resumes_only_where_it_was_off(tiny_spec, tmp_path):
    kwargs = {"steps": 4, "checkpoint_every": 2, "progress": False, "eval_examples": 16}
    straight = pretrain(tiny_spec, tmp_path / "a", **kwargs)
    pretrain(tiny_spec, tmp_path / "b", stop_at=2, **kwargs)
    # A state.json written while `hog` and the rest existed names them, off.
    state = tmp_path / "b" / "state.json"
    meta = json.loads(state.read_text())
    meta["spec"] |= {"hog": 0, "contrastive": 0, "view_jitter": 0.0, "pre_logits": 0,
                     "head_decay_mult": 1.0, "multi_label": False}  # fmt: skip
    state.write_text(json.dumps(meta))
    assert pretrain(tiny_spec, tmp_path / "b", **kwargs).card["sha256"] == straight.card["sha256"]
    # One that was on made weights this munet cannot make: refused, naming it.
    pretrain(tiny_spec, tmp_path / "c", stop_at=2, **kwargs)
    state = tmp_path / "c" / "state.json"
    meta = json.loads(state.read_text())
    meta["spec"]["hog"] = 3
    state.write_text(json.dumps(meta))
    removed = "cannot resume: hog 3: .*'hog' setting was removed"
    with pytest.raises(PretrainStateError, match=removed):
        pretrain(tiny_spec, tmp_path / "c", **kwargs)


def test_stored_specs_load_with_removed_settings_off_and_refuse_them_on(tiny_spec):
    fields = dataclasses.asdict(tiny_spec)
    off = {"multi_label": False, "hog": 0, "contrastive": 0, "view_jitter": 0.0,
           "pre_logits": 0, "head_decay_mult": 1.0}  # fmt: skip
    assert PretrainSpec.from_dict({**fields, **off}) == tiny_spec
    missing = {k: v for k, v in fields.items() if k != "thumbnail"}  # written before it existed
    assert PretrainSpec.from_dict(missing) == tiny_spec
    for name, value in [("contrastive", 64), ("multi_label", True), ("head_decay_mult", 100.0)]:
        with pytest.raises(ValueError, match=f"^{name} {value!r}: .*'{name}' setting was removed"):
            PretrainSpec.from_dict({**fields, name: value})
    with pytest.raises(ValueError, match="'nope': not a pretraining setting"):
        PretrainSpec.from_dict({**fields, "nope": 1})
    # The shipped roots' cards (written before the removal) describe specs of today.
    for root in builtin_roots().values():
        recipe = root.card()["recipe"]
        spec = PretrainSpec.from_dict(recipe).validate()
        assert spec.recipe == "fractal" and spec.preset == root.preset


def test_the_head_is_the_objectives_outputs_in_order_and_the_loss_their_sum(
    tiny_spec, monkeypatch
):
    assert [objective.name for objective in OBJECTIVES] == ["classes", "thumbnail"]
    spec = type(tiny_spec)(**{**tiny_spec.__dict__, "thumbnail": 1})
    assert head_width(tiny_spec) == 5 and head_width(spec) == 5 + 3
    # A new objective: its outputs follow the others', its loss adds to theirs.
    extra = objectives.Objective("extra", lambda s: 2, lambda out, *_: out.square().mean())
    monkeypatch.setattr(objectives, "OBJECTIVES", (*OBJECTIVES, extra))
    assert head_width(spec) == 10 and pretrain_arch(spec).num_classes == 10
    images, labels = torch.rand(4, 3, 8, 8) * 2 - 1, torch.tensor([0, 1, 4, 2])
    logits = torch.randn(4, 10)
    expected = (
        F.cross_entropy(logits[:, :5], labels, label_smoothing=0.1)
        + F.mse_loss(logits[:, 5:8], thumbnail_target(images, 1))
        + logits[:, 8:].square().mean()
    )
    assert torch.allclose(pretrain_loss(logits, images, labels, spec), expected)


def test_several_instances_per_image_train_and_are_recorded(tiny_spec, tmp_path):
    spec = type(tiny_spec)(**{**tiny_spec.__dict__, "instances": 3, "image_size": 16})
    result = pretrain(spec, tmp_path, steps=2, progress=False, eval_examples=16)
    assert result.card["recipe"]["instances"] == 3
    # The run's batches are the recipe's with 3 instances, not those of one per image.
    one = type(tiny_spec)(**{**spec.__dict__, "instances": 1})
    assert not torch.equal(
        batch_for_step(spec, spec.make_recipe(), 0)[0], batch_for_step(one, one.make_recipe(), 0)[0]
    )
    with pytest.raises(ValueError, match="instances 0"):
        type(tiny_spec)(**{**tiny_spec.__dict__, "instances": 0}).validate()


def test_the_thumbnail_loss_adds_the_pooled_images_error_to_the_class_loss(tiny_spec):
    spec = type(tiny_spec)(**{**tiny_spec.__dict__, "thumbnail": 2})
    assert head_width(spec) == 5 + 12 and pretrain_arch(spec).num_classes == 17
    images = torch.rand(4, 3, 8, 8) * 2 - 1
    labels = torch.tensor([0, 1, 4, 2])
    logits = torch.randn(4, 17)
    # Each thumbnail value is the mean of one 4 x 4 quarter of one channel.
    target = images.unfold(2, 4, 4).unfold(3, 4, 4).mean(dim=(-1, -2)).flatten(1)
    assert torch.allclose(thumbnail_target(images, 2), target)
    expected = F.cross_entropy(logits[:, :5], labels, label_smoothing=0.1) + F.mse_loss(
        logits[:, 5:], target
    )
    assert torch.allclose(pretrain_loss(logits, images, labels, spec), expected)
    # Off (the default), the loss is the class loss alone, as before the option existed.
    assert torch.equal(
        pretrain_loss(logits[:, :5], images, labels, tiny_spec),
        F.cross_entropy(logits[:, :5], labels, label_smoothing=0.1),
    )
    for side in (-1, 9):
        with pytest.raises(ValueError, match=f"thumbnail {side}"):
            type(tiny_spec)(**{**tiny_spec.__dict__, "thumbnail": side}).validate()


def test_a_run_learns_the_thumbnail_and_ships_a_headless_root(tiny_spec, tmp_path):
    spec = type(tiny_spec)(**{**tiny_spec.__dict__, "thumbnail": 2, "lr": 3e-3})
    recipe = spec.make_recipe()
    probe_images = torch.cat([batch_for_step(spec, recipe, 10_000 + i)[0] for i in range(4)])

    def target_error(model):
        # The head's outputs after the class logits against the pooled images.
        with torch.no_grad():
            outputs = model(probe_images)[:, spec.num_classes :]
        return float(F.mse_loss(outputs, thumbnail_target(probe_images, 2)))

    model = new_model(spec)
    before = target_error(model)
    # The loop's own training step (so the test fails if the loop leaves the target out).
    optimizer = new_optimizer(model, spec)
    for step in range(20):
        images, labels = batch_for_step(spec, recipe, step)
        _train_step(model, optimizer, images, labels, spec, "fp32", torch.device("cpu"))
    assert target_error(model) < 0.5 * before
    # Held-out accuracy reads the class outputs only: target outputs that would win every
    # argmax change nothing.
    held_out = HeldOut(spec, recipe, torch.device("cpu"), 32)
    classes_only = evaluate(model, held_out)
    with torch.no_grad():
        model.head.bias[spec.num_classes :] = 1e6
    assert evaluate(model, held_out) == classes_only
    # Through the loop: a root without the head, the option on the card.
    result = pretrain(spec, tmp_path, steps=2, progress=False, eval_examples=16)
    assert not any(k.startswith("head.") for k in load_file(str(result.root_file)))
    assert result.card["recipe"]["thumbnail"] == 2


def test_a_minutes_budget_becomes_a_recorded_step_count(tiny_spec, tmp_path):
    result = pretrain(tiny_spec, tmp_path, minutes=0.001, progress=False, eval_examples=16)
    # The budget is spent by the timing probe itself: the run stops after it.
    assert result.card["planned_steps"] == result.card["steps"] >= 10


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"steps": 0}, "steps 0"),
        ({"steps": 1, "minutes": 1.0}, "exactly one"),
        ({}, "exactly one"),
        ({"steps": 1, "root_dtype": "int8"}, "int8"),
    ],
)
def test_bad_budgets_are_refused(tiny_spec, tmp_path, kwargs, match):
    with pytest.raises(ValueError, match=match):
        pretrain(tiny_spec, tmp_path, progress=False, **kwargs)


def test_bf16_autocast_and_a_time_limit_leave_a_usable_checkpoint(tiny_spec, tmp_path):
    result = pretrain(tiny_spec, tmp_path, steps=1000, checkpoint_every=500, progress=False,
                      eval_examples=8, precision="bf16", max_seconds=0.5)  # fmt: skip
    card = result.card
    assert 0 < card["steps"] < 1000 and card["planned_steps"] == 1000
    assert card["precision"] == "bf16" and card["history"][-1]["step"] == card["steps"]
    tensors = load_file(str(result.root_file))
    assert all(t.dtype == torch.float32 and torch.isfinite(t).all() for t in tensors.values())
    with pytest.raises(ValueError, match="'fp16'"):
        pretrain(tiny_spec, tmp_path / "x", steps=1, progress=False, precision="fp16")


def test_the_held_out_set_is_the_same_kept_or_rendered_again(tiny_spec, monkeypatch):
    from munet.pretrain import stream as stream_module

    recipe = tiny_spec.make_recipe()
    device = torch.device("cpu")
    kept = HeldOut(tiny_spec, recipe, device, n=300)  # two chunks, the second short
    monkeypatch.setattr(stream_module, "HELD_OUT_CACHE_BYTES", 0)
    rendered = HeldOut(tiny_spec, recipe, device, n=300)
    assert kept._kept is not None and rendered._kept is None
    for held_out in (kept, rendered):  # the same images every call
        chunks = list(held_out.chunks())
        assert [len(labels) for _, labels in chunks] == [256, 44]
        again = list(held_out.chunks())
        for (a, la), (b, lb) in zip(chunks, again, strict=True):
            assert torch.equal(a, b) and torch.equal(la, lb)
    for (a, la), (b, lb) in zip(kept.chunks(), rendered.chunks(), strict=True):
        assert torch.equal(a, b) and torch.equal(la, lb)
    # Not the training stream: the held-out images are their own.
    assert not torch.equal(next(kept.chunks())[0][:4], batch_for_step(tiny_spec, recipe, 0)[0][:4])
    model = new_model(tiny_spec)
    accuracy = evaluate(model, kept)
    assert accuracy == evaluate(model, rendered) and 0.0 <= accuracy <= 1.0
    assert model.training  # left in training mode
