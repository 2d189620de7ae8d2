import math

import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file

from munet.pretrain.contrastive import (
    CROP_AREA,
    CROP_RATIO,
    GREY_PROBABILITY,
    JITTER_PROBABILITY,
    colour_jitter,
    nt_xent,
    second_view,
)
from munet.pretrain.loop import batch_for_step, pretrain
from munet.pretrain.objectives import CONTRASTIVE_WEIGHT, pretrain_loss, thumbnail_target
from munet.pretrain.spec import new_model, view_for_step
from tests.pretrain.train_helpers import train_with_the_loops_step


def _nt_xent_by_hand(first, second, temperature):
    """The loss written out per anchor, as in the SimCLR paper's algorithm."""
    z = [F.normalize(v, dim=0) for v in torch.cat([first, second])]
    n, losses = len(z), []
    for i in range(n):
        partner = (i + n // 2) % n
        others = [torch.dot(z[i], z[k]) / temperature for k in range(n) if k != i]
        positive = torch.dot(z[i], z[partner]) / temperature
        losses.append(torch.logsumexp(torch.stack(others), 0) - positive)
    return torch.stack(losses).mean()


def test_nt_xent_is_simclrs_loss_and_rewards_finding_the_partner():
    g = torch.Generator().manual_seed(0)
    first, second = torch.randn(5, 4, generator=g), torch.randn(5, 4, generator=g)
    for temperature in (0.1, 0.5):
        assert torch.allclose(
            nt_xent(first, second, temperature), _nt_xent_by_hand(first, second, temperature)
        )
    # Partners equal and every image orthogonal to the others: each anchor's partner wins
    # by 1 / temperature over 2B - 2 rivals at 0.
    basis = torch.eye(4)
    expected = math.log(1 + 6 * math.exp(-10))
    assert nt_xent(basis, basis, 0.1).item() == pytest.approx(expected, rel=1e-3)
    # Partners swapped (each view nearest another image's): far worse than chance.
    assert nt_xent(basis, basis.roll(1, 0), 0.1).item() > math.log(7)


def test_a_second_view_is_a_crop_of_the_image_resized_and_maybe_mirrored():
    size = 24
    # A horizontal ramp from -1 to 1: a crop of it is a shorter ramp, mirrored or not.
    ramp = torch.linspace(-1, 1, size).expand(64, 3, size, size).contiguous()
    g = torch.Generator().manual_seed(0)
    views = second_view(ramp, g)
    assert views.shape == ramp.shape
    rows = views[:, 0, size // 2]
    steps = rows.diff(dim=1)
    increasing, decreasing = (steps > 0).all(1), (steps < 0).all(1)
    assert bool((increasing | decreasing).all())
    assert 10 < int(decreasing.sum()) < 54  # about half mirrored
    # The crop stays inside the image and is at least as wide as the smallest crop allowed
    # (bilinear sampling at the crop's pixel centres shortens the span by one pixel).
    assert rows.min() >= -1 - 1e-6 and rows.max() <= 1 + 1e-6
    smallest = math.sqrt(CROP_AREA[0] * CROP_RATIO[0])
    span = (rows.max(1).values - rows.min(1).values) / 2
    assert span.min() >= smallest * (size - 1) / size - 1e-4
    assert span.max() > 0.9  # some crops keep nearly the whole width
    # The same generator seed, the same views; a constant image stays constant.
    assert torch.equal(views, second_view(ramp, torch.Generator().manual_seed(0)))
    flat = torch.full((4, 3, size, size), 0.3)
    assert torch.allclose(second_view(flat, g), flat)


def test_the_contrastive_loss_reads_the_heads_last_outputs(tiny_spec):
    spec = type(tiny_spec)(**{**tiny_spec.__dict__, "thumbnail": 2, "contrastive": 3})
    assert spec.outputs == 5 + 12 + 3
    images = torch.rand(4, 3, 8, 8) * 2 - 1
    labels = torch.tensor([0, 1, 4, 2])
    logits, view_outputs = torch.randn(4, 20), torch.randn(4, 20)
    expected = (
        F.cross_entropy(logits[:, :5], labels, label_smoothing=0.1)
        + F.mse_loss(logits[:, 5:17], thumbnail_target(images, 2))
        + CONTRASTIVE_WEIGHT * nt_xent(logits[:, 17:], view_outputs[:, 17:])
    )
    assert torch.allclose(pretrain_loss(logits, images, labels, spec, view_outputs), expected)
    with pytest.raises(ValueError, match="second views"):
        pretrain_loss(logits, images, labels, spec)
    with pytest.raises(ValueError, match="contrastive -1"):
        type(tiny_spec)(**{**tiny_spec.__dict__, "contrastive": -1}).validate()


def test_a_contrastive_run_learns_to_tell_images_apart_and_ships_a_headless_root(
    tiny_spec, tmp_path
):
    spec = type(tiny_spec)(**{**tiny_spec.__dict__, "contrastive": 8, "lr": 3e-3})
    recipe = spec.make_recipe()
    probe = torch.cat([batch_for_step(spec, recipe, 10_000 + i)[0] for i in range(4)])
    probe_views = view_for_step(spec, probe, 10_000)
    # The views are a function of seed and step, not of the call.
    assert torch.equal(probe_views, view_for_step(spec, probe, 10_000))
    assert not torch.equal(probe_views, view_for_step(spec, probe, 10_001))

    def contrastive_loss(model):
        with torch.no_grad():
            a, b = model(torch.cat([probe, probe_views]))[:, -8:].chunk(2)
        return float(nt_xent(a, b))

    model = new_model(spec)
    before = contrastive_loss(model)
    train_with_the_loops_step(model, spec, recipe, 30)
    assert contrastive_loss(model) < 0.9 * before
    result = pretrain(spec, tmp_path, steps=2, progress=False, eval_examples=16)
    assert not any(k.startswith("head.") for k in load_file(str(result.root_file)))
    assert result.card["recipe"]["contrastive"] == 8


def test_the_contrastive_option_changes_only_the_heads_projection_rows_at_the_start(tiny_spec):
    plain = new_model(tiny_spec).state_dict()
    spec = type(tiny_spec)(**{**tiny_spec.__dict__, "contrastive": 3})
    contrastive = new_model(spec).state_dict()
    assert plain.keys() == contrastive.keys()
    for name, tensor in plain.items():
        if not name.startswith("head."):
            assert torch.equal(tensor, contrastive[name]), name
    # The class rows start at zero as before; the projection rows do not (a zero embedding
    # would give the contrastive loss no gradient).
    assert torch.equal(contrastive["head.weight"][:5], plain["head.weight"])
    assert torch.equal(contrastive["head.bias"][:5], plain["head.bias"])
    assert bool((contrastive["head.weight"][5:] != 0).all())


def _colour(views):
    """Each view's mean colour (B, 3)."""
    return views.mean(dim=(2, 3))


def test_colour_jitter_changes_the_colours_of_views_not_where_things_are():
    g = torch.Generator().manual_seed(0)
    n, s = 4000, 0.5
    # A flat mid-grey (0 in [-1, 1]): contrast, saturation and hue leave grey alone, so only
    # the brightness factor, from [1 - 0.8 s, 1 + 0.8 s], moves it (0.5 -> 0.5 * factor).
    grey = colour_jitter(torch.zeros(n, 3, 2, 2), s, g)
    values = (grey[:, 0, 0, 0] + 1) / 2
    assert torch.allclose(grey, grey[:, :1, :1, :1].expand_as(grey), atol=1e-6)  # flat, grey
    low, high = 0.5 * (1 - 0.8 * s), 0.5 * (1 + 0.8 * s)
    assert values.min() >= low - 1e-6 and values.max() <= high + 1e-6
    unchanged = float((values == 0.5).float().mean())
    assert unchanged == pytest.approx(1 - JITTER_PROBABILITY, abs=0.03)
    assert values.min() < low + 0.01 and values.max() > high - 0.01
    # One pure red image, many times: without jitter every view keeps it; with jitter the
    # views' colours spread (hue, saturation, brightness), and about a fifth turn grey.
    red = torch.tensor([1.0, -1.0, -1.0])[None, :, None, None].expand(n, 3, 4, 4)
    jittered = colour_jitter(red, s, g)
    assert jittered.shape == red.shape and jittered.abs().max() <= 1 + 1e-6
    assert _colour(jittered).std(dim=0).min() > 0.1
    greyed = (jittered.std(dim=1) < 1e-6).all(dim=(1, 2)).float().mean()
    assert float(greyed) == pytest.approx(GREY_PROBABILITY, abs=0.03)
    # Every pixel of a view gets the same change: a view of a flat image stays flat.
    assert torch.allclose(jittered, jittered[:, :, :1, :1].expand_as(jittered), atol=1e-6)
    # Seeded.
    assert torch.equal(
        colour_jitter(red, s, torch.Generator().manual_seed(3)),
        colour_jitter(red, s, torch.Generator().manual_seed(3)),
    )


def test_the_hue_turns_red_to_green_to_blue_about_the_grey_axis():
    from munet.pretrain.contrastive import _hue_rotation

    third = _hue_rotation(torch.tensor([2 * math.pi / 3]))[0]
    red, green, blue = torch.eye(3)
    assert torch.allclose(third @ red, green, atol=1e-6)
    assert torch.allclose(third @ green, blue, atol=1e-6)
    assert torch.allclose(third @ torch.full((3,), 0.4), torch.full((3,), 0.4))


def test_jittered_views_are_the_same_crops_and_the_option_needs_contrastive(tiny_spec):
    ramp = torch.linspace(-1, 1, 24).expand(64, 3, 24, 24).contiguous()
    plain = second_view(ramp, torch.Generator().manual_seed(0))
    jittered = second_view(ramp, torch.Generator().manual_seed(0), 0.5)
    assert not torch.equal(plain, jittered)
    # The crop is drawn first: where the ramp rises or falls is unchanged by the colours
    # (brightness and contrast may flatten a clipped end, never turn its direction).
    rising = plain[:, 0, 12].diff(dim=1) > 0
    assert bool(((jittered[:, 0, 12].diff(dim=1) > 0) <= rising).all())
    spec = type(tiny_spec)(**{**tiny_spec.__dict__, "contrastive": 4, "view_jitter": 0.5})
    images = torch.rand(8, 3, 8, 8) * 2 - 1
    assert not torch.equal(
        view_for_step(spec, images, 0),
        view_for_step(type(spec)(**{**spec.__dict__, "view_jitter": 0.0}), images, 0),
    )
    for contrastive, jitter in ((0, 0.5), (4, -0.5), (4, 1.5), (4, float("nan"))):
        bad = type(tiny_spec)(
            **{**tiny_spec.__dict__, "contrastive": contrastive, "view_jitter": jitter}
        )
        with pytest.raises(ValueError, match=f"view_jitter {jitter}"):
            bad.validate()
