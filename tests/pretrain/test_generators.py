import ast
from pathlib import Path

import pytest
import torch

import munet.pretrain.generators as generators
from munet.pretrain.generators import RECIPES, make_recipe, recipe_kinds, sample_batch

MIX = "fractal_ex+contours_ex+noise"


def batch(recipe_name, seed, data_seed, n=16, size=16, classes=10):
    recipe = make_recipe(recipe_name, classes, seed)
    return sample_batch(recipe, n, size, torch.Generator().manual_seed(data_seed))


@pytest.mark.parametrize("name", [*RECIPES, MIX])
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


@pytest.mark.parametrize("name", [*RECIPES, MIX])
def test_images_show_structure_not_a_flat_colour(name):
    images, _ = batch(name, 0, 3, n=32)
    # Per image, pixel spread: a blank image would have (almost) none.
    spread = images.flatten(1).std(dim=1)
    assert (spread > 0.02).float().mean() > 0.9


def test_a_thousand_classes_and_a_mix_splits_them_among_its_recipes():
    recipe = make_recipe(MIX, 1000, 0)
    assert recipe.num_classes == 1000
    assert [(kind, first, count) for kind, first, count, _ in recipe.parts] == [
        ("fractal_ex", 0, 334), ("contours_ex", 334, 333), ("noise", 667, 333),
    ]  # fmt: skip
    assert recipe.parts[0][3]["maps"].shape == (334, 8, 2, 3)
    _, labels = sample_batch(recipe, 4000, 8, torch.Generator().manual_seed(0))
    assert labels.min() == 0 and labels.max() == 999 and len(labels.unique()) > 950
    # A recipe's classes (for a class count) do not depend on its neighbours in the mix.
    one, other = make_recipe(MIX, 999, 0), make_recipe("noise+contours_ex+fractal_ex", 999, 0)
    assert torch.equal(other.parts[2][3]["maps"], one.parts[0][3]["maps"])


def test_each_part_of_a_mix_renders_its_own_recipe():
    # Noise classes carry their colour in the class: per-class mean colours differ, while
    # fractal and contour classes draw a random colour per image.
    recipe = make_recipe("fractal+noise", 4, 0)
    images, labels = sample_batch(recipe, 256, 16, torch.Generator().manual_seed(1))
    means = [images[labels == c].mean(dim=(0, 2, 3)) for c in (2, 3)]
    assert (means[0] - means[1]).abs().max() > 0.05
    # The mix's noise images equal the plain recipe's renderer on the same classes.
    noise_only = make_recipe("noise", 2, 0).parts[0][3]
    assert set(noise_only) == set(recipe.parts[1][3])


def test_harder_recipes_have_more_parameters_per_class():
    def size(name):
        params = make_recipe(name, 10, 0).params
        return sum(t[0].numel() for t in params.values())

    assert size("fractal_ex") > size("fractal") and size("contours_ex") > size("contours")
    maps = make_recipe("fractal_ex", 50, 5).params["maps"][..., :2]
    assert torch.linalg.matrix_norm(maps, ord=2).max() <= 0.8 + 1e-5  # contractive
    blends = make_recipe("fractal_ex", 50, 5).params["variations"]
    assert torch.allclose(blends.sum(-1), torch.ones(50, 8))


def test_bad_recipe_names_the_value():
    with pytest.raises(ValueError, match="'nope'"):
        make_recipe("nope", 10, 0)
    with pytest.raises(ValueError, match="'nope'.*fractal_ex"):
        recipe_kinds("fractal+nope")
    with pytest.raises(ValueError, match="twice"):
        recipe_kinds("noise+noise")
    with pytest.raises(ValueError, match="at least 2 per recipe"):
        make_recipe(MIX, 5, 0)


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
    ours = torch.cat([batch(name, 0, 4, n=32, size=16)[0] for name in [*RECIPES, MIX]])
    for name, theirs in _evaluation_images(16):
        distance = torch.cdist(ours.flatten(1), theirs.flatten(1)).min()
        assert distance / (3 * 16 * 16) ** 0.5 > 0.05, name  # RMS pixel difference


def test_a_recipe_renders_on_the_device_its_generator_is_on():
    recipe = make_recipe(MIX, 30, 0).to("cpu")
    g = torch.Generator(device="cpu").manual_seed(0)
    images, labels = sample_batch(recipe, 8, 8, g)
    assert images.device.type == "cpu" and labels.device.type == "cpu"
