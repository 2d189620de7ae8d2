import ast
import json
import re
from pathlib import Path

import pytest
import torch
from scipy import ndimage

import munet.pretrain.generators as generators
from munet.pretrain.generators import RECIPES, make_recipe, sample_batch
from tests.pretrain import generator_streams as streams


def batch(recipe_name, seed, data_seed, n=16, size=16, classes=10):
    recipe = make_recipe(recipe_name, classes, seed)
    return sample_batch(recipe, n, size, torch.Generator().manual_seed(data_seed))


@pytest.mark.parametrize("name", RECIPES)
def test_batches_are_deterministic_for_a_seed_and_differ_across_seeds(name):
    images, labels = batch(name, 0, 1)
    again, again_labels = batch(name, 0, 1)
    assert torch.equal(images, again) and torch.equal(labels, again_labels)
    assert images.shape == (16, 3, 16, 16) and images.dtype == torch.float32
    assert images.min() >= -1 and images.max() <= 1 and torch.isfinite(images).all()
    assert labels.min() >= 0 and labels.max() < 10
    # Another data seed, or other classes (another recipe seed), give other images.
    assert not torch.equal(batch(name, 0, 2)[0], images)
    assert not torch.equal(batch(name, 1, 1)[0], images)


@pytest.mark.parametrize("name", RECIPES)
def test_images_show_structure_not_a_flat_colour(name):
    images, _ = batch(name, 0, 3, n=32)
    # Per image, pixel spread: a blank image would have (almost) none.
    spread = images.flatten(1).std(dim=1)
    assert (spread > 0.02).float().mean() > 0.9


def test_bad_recipe_names_the_value():
    with pytest.raises(ValueError, match="'nope'; known: fractal$"):
        make_recipe("nope", 10, 0)
    # The recipes tried once and shipped in no root, and mixes: refused, saying they left.
    for removed in ("fractal_ex", "noise", "fractal+contours"):
        with pytest.raises(ValueError, match=re.escape(f"{removed!r}; known: fractal (")):
            make_recipe(removed, 10, 0)
    with pytest.raises(ValueError, match="at least 2"):
        make_recipe("fractal", 1, 0)


def _imports(module_file):
    tree = ast.parse(Path(module_file).read_text())
    return [
        node.module if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    ]


def _evaluation_images(size):
    """Images of every embedded evaluation task (and the 1k suite where it exists)."""
    from munet.tasks import load_source
    from munet.tasks.augment import AugmentConfig, preprocess
    from munet.tasks.sources.synth import SYNTH_TASKS

    names = ["digits", *SYNTH_TASKS]
    try:
        from munet.tasks.suite import SUITE_TASKS

        names += list(SUITE_TASKS)
    except ImportError:
        pass
    config = AugmentConfig.from_hparams({"ds_image_size": size})
    for name in names:
        source = load_source(name)
        raw = source.images("validation", torch.arange(32))
        if raw.shape[1] == 1:
            raw = raw.expand(-1, 3, -1, -1)
        yield name, preprocess(raw, config, train=False)


def test_generators_share_nothing_with_the_evaluation_tasks():
    # No import of task code or data: the images come from formulas alone.
    package = Path(generators.__file__).parent / "recipes"
    for module in [Path(generators.__file__), *package.glob("*.py")]:
        imported = _imports(module)
        assert all(
            not (name or "").startswith("munet") or name.startswith("munet.pretrain.recipes")
            for name in imported
        ), (module, imported)
    # And no pretraining image equals (or nearly equals) an evaluation image.
    ours = torch.cat([batch(name, 0, 4, n=32, size=16)[0] for name in RECIPES])
    for name, theirs in _evaluation_images(16):
        distance = torch.cdist(ours.flatten(1), theirs.flatten(1)).min()
        assert distance / (3 * 16 * 16) ** 0.5 > 0.05, name  # RMS pixel difference


def test_a_recipe_renders_on_the_device_its_generator_is_on():
    recipe = make_recipe("fractal", 30, 0, instances=2).to("cpu")
    g = torch.Generator(device="cpu").manual_seed(0)
    images, labels = sample_batch(recipe, 8, 8, g)
    assert images.device.type == "cpu" and labels.device.type == "cpu"


# The batches pinned in tests/pretrain/generator_streams.json (`make_recipe(name, 10, 0)`, 8
# images at 16 px, data seed 3) as labels and per-image fingerprints within 1e-4, not as a hash
# of the floats: those differ in their last bits from one CPU's SIMD path to another's.


@pytest.mark.parametrize("name", streams.ONE_INSTANCE)
def test_one_instance_per_image_renders_the_pinned_stream(name):
    # The single-instance roots' data stream (VitT3's): one instance per image renders it
    # whatever else the generator gains.
    streams.check(name, 1)


@pytest.mark.parametrize("name", sorted(streams.THREE_INSTANCES))
def test_three_instances_per_image_render_the_pinned_stream(name):
    # Up to 3 instances per image: the stream the 3-instance roots (VitCpu's, VitCpuHybrid's)
    # were pretrained on, so a faster chaos game must render it the same.
    streams.check(name, 3)


def test_the_pinned_streams_are_every_recipe():
    assert streams.ONE_INSTANCE == streams.THREE_INSTANCES == RECIPES
    pinned = {f"{name} x1" for name in streams.ONE_INSTANCE}
    pinned |= {f"{name} x3" for name in streams.THREE_INSTANCES}
    assert set(json.loads(streams.FILE.read_text())) == pinned


@pytest.mark.parametrize("name", RECIPES)
def test_several_instances_per_image_are_deterministic_and_other_images(name):
    one = sample_batch(make_recipe(name, 10, 0), 64, 16, torch.Generator().manual_seed(4))
    several = make_recipe(name, 10, 0, instances=3)
    images, labels = sample_batch(several, 64, 16, torch.Generator().manual_seed(4))
    again = sample_batch(several, 64, 16, torch.Generator().manual_seed(4))
    assert torch.equal(images, again[0]) and torch.equal(labels, again[1])
    assert images.shape == (64, 3, 16, 16) and images.min() >= -1 and images.max() <= 1
    assert not torch.equal(images, one[0])
    assert torch.equal(labels, one[1])  # the labels are drawn first: those match
    assert (images.flatten(1).std(dim=1) > 0.02).float().mean() > 0.9


def test_several_instances_spread_a_figure_over_more_of_the_image():
    # Instances are shrunk and scattered, so an image shows more separate pieces (connected
    # areas that differ from its background) on average than with one figure (4.8 -> 5.7).
    def pieces(instances):
        recipe = make_recipe("fractal", 20, 0, instances=instances)
        g = torch.Generator().manual_seed(7)
        labels = torch.randint(0, 20, (200,), generator=g)
        figures = generators._render(recipe, labels, 32, g, None)
        lit = (figures - figures.flatten(2).median(dim=2).values[..., None, None]).abs().sum(1)
        # 4-connected pieces per image (scipy's default structure: no diagonals).
        return sum(ndimage.label((img > 0.3).numpy())[1] for img in lit) / len(lit)

    assert pieces(3) > pieces(1) + 0.3


def test_a_placed_figure_lands_shrunk_where_it_was_put():
    figure = torch.zeros(1, 1, 16, 16)
    figure[..., 4:12, 4:12] = 1.0  # a square in the middle, half the side
    placed = generators._place(figure, torch.tensor([0.5]), torch.tensor([[0.5, -0.5]]))[0]
    # Shrunk by half (a quarter of the side) and moved to x = +0.5 (right), y = -0.5 (top).
    assert placed[:8, 8:].sum() > 0.95 * placed.sum()
    assert float(placed.sum()) == pytest.approx(float(figure.sum()) / 4, rel=0.1)


@pytest.mark.parametrize("bad", [0, -2, 1.5])
def test_instances_below_one_are_refused_naming_the_value(bad):
    with pytest.raises(ValueError, match=f"instances {bad!r}"):
        make_recipe("fractal", 10, 0, instances=bad)
