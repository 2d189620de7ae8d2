import json

import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file

from munet.models import VitArch, load_checkpoint
from munet.pretrain.generators import make_recipe
from munet.pretrain.loop import (
    CARD_FILE,
    ROOT_FILE,
    HeldOut,
    PretrainStateError,
    batch_for_step,
    evaluate,
    pretrain,
)
from munet.pretrain.objectives import hog_target, pretrain_loss, thumbnail_target
from munet.pretrain.roots import sha256_file
from munet.pretrain.spec import new_model
from tests.pretrain.train_helpers import extra_target_error, train_with_the_loops_step


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
    assert spec.outputs == 5 + 12 and spec.arch().num_classes == 17
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


@pytest.mark.parametrize("option, target", [("thumbnail", thumbnail_target), ("hog", hog_target)])
def test_a_run_learns_its_extra_target_and_ships_a_headless_root(
    tiny_spec, tmp_path, option, target
):
    spec = type(tiny_spec)(**{**tiny_spec.__dict__, option: 2, "lr": 3e-3})
    recipe = spec.make_recipe()
    probe_images = torch.cat([batch_for_step(spec, recipe, 10_000 + i)[0] for i in range(4)])

    def target_error(model):
        return extra_target_error(model, spec, probe_images, target, 2)

    model = new_model(spec)
    before = target_error(model)
    train_with_the_loops_step(model, spec, recipe, 20)
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
    assert result.card["recipe"][option] == 2


def test_the_gradient_histograms_see_which_way_an_edge_runs():
    vertical = torch.zeros(1, 3, 8, 8)
    vertical[..., 4:] = 1.0  # brighter to the right: the gradient points along x (0 degrees)
    horizontal = vertical.transpose(2, 3)  # brighter below: along y (90 degrees)
    # Nine bins of 20 degrees centred at 10, 30, ... 170: 0 degrees lies halfway between the
    # first and the last, 90 at the centre of the fifth.
    root_half = 0.5**0.5
    assert torch.allclose(hog_target(vertical, 1)[0], _bins({0: root_half, 8: root_half}))
    assert torch.allclose(hog_target(horizontal, 1)[0], _bins({4: 1.0}))
    # A ramp brighter to the lower right (45 degrees: a quarter of the way from the bin at 30
    # to the one at 50) and its mirror (135 degrees); the image's border, where the replicated
    # edge halves one component, moves each value by < 0.03.
    ramp = torch.arange(64.0)
    shares = torch.tensor([0.25, 0.75]) / (0.25**2 + 0.75**2) ** 0.5
    down_right = (ramp[None, :] + ramp[:, None]).expand(1, 3, 64, 64) / 64
    assert torch.allclose(
        hog_target(down_right, 1)[0], _bins({1: shares[0], 2: shares[1]}), atol=0.03
    )
    mirrored = down_right.flip(2)
    assert torch.allclose(
        hog_target(mirrored, 1)[0], _bins({7: shares[0], 6: shares[1]}), atol=0.03
    )
    # Per cell, on a 2 x 2 grid: the step of `vertical` lies between the left and right cells,
    # so all four see it, in the same two bins. A flat image has no edges: every cell stays
    # zero rather than dividing by nothing.
    cells = hog_target(vertical, 2).view(9, 4)
    assert torch.all(cells[1:8] == 0) and torch.allclose(cells[0], torch.full((4,), root_half))
    assert torch.equal(hog_target(torch.ones(2, 3, 8, 8), 2), torch.zeros(2, 36))


def _bins(values: dict[int, float]) -> torch.Tensor:
    histogram = torch.zeros(9)
    for index, value in values.items():
        histogram[index] = value
    return histogram


def test_the_hog_loss_follows_the_thumbnail_in_the_head(tiny_spec):
    spec = type(tiny_spec)(**{**tiny_spec.__dict__, "thumbnail": 2, "hog": 2})
    assert spec.outputs == 5 + 12 + 36 and spec.arch().num_classes == 53
    images = torch.rand(4, 3, 8, 8) * 2 - 1
    labels = torch.tensor([0, 1, 4, 2])
    logits = torch.randn(4, 53)
    expected = (
        F.cross_entropy(logits[:, :5], labels, label_smoothing=0.1)
        + F.mse_loss(logits[:, 5:17], thumbnail_target(images, 2))
        + F.mse_loss(logits[:, 17:], hog_target(images, 2))
    )
    assert torch.allclose(pretrain_loss(logits, images, labels, spec), expected)
    hog_only = type(tiny_spec)(**{**tiny_spec.__dict__, "hog": 1})
    assert torch.allclose(
        pretrain_loss(logits[:, :14], images, labels, hog_only),
        F.cross_entropy(logits[:, :5], labels, label_smoothing=0.1)
        + F.mse_loss(logits[:, 5:14], hog_target(images, 1)),
    )
    for side in (-1, 9):
        with pytest.raises(ValueError, match=f"hog {side}"):
            type(tiny_spec)(**{**tiny_spec.__dict__, "hog": side}).validate()


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


def test_a_mixed_recipe_run_resumes_to_the_same_weights_and_learns_all_parts(tmp_path):
    from munet.pretrain.loop import PretrainSpec

    spec = PretrainSpec(
        preset="VitCpu", model="mu/4", num_layers=1, image_size=8,
        recipe="fractal_ex+contours_ex+noise", num_classes=9, batch_size=8,
    )  # fmt: skip
    kwargs = {"steps": 6, "checkpoint_every": 4, "progress": False, "eval_examples": 16}
    straight = pretrain(spec, tmp_path / "a", **kwargs)
    pretrain(spec, tmp_path / "b", stop_at=3, **kwargs)
    resumed = pretrain(spec, tmp_path / "b", **kwargs)
    assert straight.card["sha256"] == resumed.card["sha256"]
    assert [p["recipe"] for p in straight.card["recipes"]] == ["fractal_ex", "contours_ex", "noise"]
    # The batches of a mixed run draw classes of every part.
    recipe = make_recipe(spec.recipe, spec.num_classes, spec.seed)
    labels = torch.cat([batch_for_step(spec, recipe, s)[1] for s in range(20)])
    assert set(labels.tolist()) == set(range(9))


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
    from munet.pretrain import spec as spec_module

    recipe = tiny_spec.make_recipe()
    device = torch.device("cpu")
    kept = HeldOut(tiny_spec, recipe, device, n=300)  # two chunks, the second short
    monkeypatch.setattr(spec_module, "HELD_OUT_CACHE_BYTES", 0)
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
