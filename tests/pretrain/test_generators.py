import ast
from pathlib import Path

import pytest
import torch

import munet.pretrain.generators as generators
from munet.pretrain.generators import RECIPES, make_recipe, sample_batch


def batch(recipe_name, seed, data_seed, n=16, size=16):
    recipe = make_recipe(recipe_name, 10, seed)
    return sample_batch(recipe, n, size, torch.Generator().manual_seed(data_seed))


@pytest.mark.parametrize("name", RECIPES)
def test_batches_are_deterministic_for_a_seed_and_differ_across_seeds(name):
    images, labels = batch(name, 0, 1)
    again, again_labels = batch(name, 0, 1)
    assert torch.equal(images, again) and torch.equal(labels, again_labels)
    assert images.shape == (16, 3, 16, 16) and images.dtype == torch.float32
    assert images.min() >= -1 and images.max() <= 1
    assert labels.min() >= 0 and labels.max() < 10
    # Another data seed, or other classes (another recipe seed), give other images.
    assert not torch.equal(batch(name, 0, 2)[0], images)
    assert not torch.equal(batch(name, 1, 1)[0], images)


@pytest.mark.parametrize("name", RECIPES)
def test_images_show_a_figure_not_a_flat_colour(name):
    images, _ = batch(name, 0, 3, n=32)
    # Per image, pixel spread over the figure: a blank image would have (almost) none.
    spread = images.flatten(1).std(dim=1)
    assert (spread > 0.02).float().mean() > 0.9


def test_classes_are_fixed_functions_of_the_seed_and_the_label():
    # The same class drawn twice renders the same formula: fractal class params match.
    one, two = make_recipe("fractal", 10, 5), make_recipe("fractal", 10, 5)
    assert all(torch.equal(one.params[k], two.params[k]) for k in one.params)
    maps = one.params["maps"][..., :2]
    assert torch.linalg.matrix_norm(maps, ord=2).max() <= 0.8 + 1e-5  # contractive


def test_bad_recipe_names_the_value():
    with pytest.raises(ValueError, match="'nope'"):
        make_recipe("nope", 10, 0)
    with pytest.raises(ValueError, match="at least 2"):
        make_recipe("fractal", 1, 0)


def test_generators_share_nothing_with_the_evaluation_tasks():
    # No import of task code or data: the images come from formulas alone.
    tree = ast.parse(Path(generators.__file__).read_text())
    imported = [
        node.module if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    ]
    assert all(not (name or "").startswith("munet") for name in imported), imported
    # And no pretraining image equals (or nearly equals) a synth/* or digits image.
    from munet.tasks.sources.synth import generate_synth_split

    synth = generate_synth_split("synth/shape", 32, 0).images.float() / 127.5 - 1
    for name in RECIPES:
        ours, _ = batch(name, 0, 4, n=32, size=32)
        distance = torch.cdist(ours.flatten(1), synth.flatten(1)).min()
        assert distance / (3 * 32 * 32) ** 0.5 > 0.05  # RMS pixel difference
