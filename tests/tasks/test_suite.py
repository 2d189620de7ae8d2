"""The `1k/*` suite: names, split sizes, determinism, label definitions, registry, errors."""

import ast
import copy
from pathlib import Path

import pytest
import torch

from munet.tasks import get_task
from munet.tasks.registry import registered_tasks
from munet.tasks.sources.vtab1k import (
    SUITE_SPECS,
    clevr,
    clevr_nearest_depths,
    dsprites,
    generate_suite_split,
    load_suite_source,
    norb,
)
from munet.tasks.sources.vtab1k.common import IMAGE_SIZE
from munet.tasks.suite import (
    DIGITS_1K_SPLIT_SIZES,
    QUICK_SUITE_TASKS,
    SUITE_SPLIT_SIZES,
    SUITE_TASKS,
)

SPLITS = ("train", "validation", "test")
# Tasks whose label is the factor drawn stratified: every class n // C or n // C + 1 times.
LABEL_IS_FACTOR = [n for n, s in SUITE_SPECS.items() if s.num_factors == s.num_classes]


def test_the_suite_names_at_least_eight_vtab_1k_tasks():
    assert len(SUITE_TASKS) >= 8 and len(set(SUITE_TASKS)) == len(SUITE_TASKS)
    assert all(name.startswith("1k/") for name in SUITE_TASKS)
    assert set(SUITE_SPECS) | {"1k/digits"} == set(SUITE_TASKS)
    assert len(QUICK_SUITE_TASKS) == 3 and set(QUICK_SUITE_TASKS) <= set(SUITE_TASKS)
    assert SUITE_SPLIT_SIZES["train"] == 800 and SUITE_SPLIT_SIZES["validation"] == 200
    assert SUITE_SPLIT_SIZES["test"] >= 1000


def test_every_suite_task_is_registered_with_classes_splits_and_label():
    entries = registered_tasks()
    for name in SUITE_TASKS:
        entry = entries[name]
        assert entry.group == "suite" and not entry.needs
        assert "train 800, validation 200, test" in entry.description
        assert "classes" in entry.description and "label:" in entry.description
    assert entries["digits"].group == ""


def test_munet_tasks_list_shows_the_suite_as_its_own_group(capsys):
    from munet.cli import main

    assert main(["tasks", "list"]) == 0
    out = capsys.readouterr().out
    header = out.index("The 1k suite")
    assert out.index("synth/shape") < header  # the plain embedded tasks come first
    suite_block = out[header : out.index("Your data on disk")]
    for name in SUITE_TASKS:
        assert f"  {name} " in suite_block
    assert out.count("1k/clevr-count") == 1


@pytest.mark.parametrize("name", sorted(SUITE_SPECS))
def test_generation_is_deterministic_per_task_and_data_seed(name):
    a = generate_suite_split(name, "train", 48, data_seed=0)
    b = generate_suite_split(name, "train", 48, data_seed=0)
    c = generate_suite_split(name, "train", 48, data_seed=1)
    other_split = generate_suite_split(name, "validation", 48, data_seed=0)
    assert torch.equal(a.images, b.images) and torch.equal(a.labels, b.labels)
    assert not torch.equal(a.images, c.images)
    assert not torch.equal(a.images, other_split.images)
    assert a.images.shape == (48, 3, IMAGE_SIZE, IMAGE_SIZE) and a.images.dtype == torch.uint8
    assert a.labels.dtype == torch.int64
    assert 0 <= int(a.labels.min()) and int(a.labels.max()) < SUITE_SPECS[name].num_classes
    assert a.images.float().std() > 5  # not blank


def test_tasks_do_not_share_images():
    images = [generate_suite_split(n, "train", 8).images for n in SUITE_SPECS]
    for i, a in enumerate(images):
        for b in images[i + 1 :]:
            assert not torch.equal(a, b)


@pytest.mark.parametrize("name", LABEL_IS_FACTOR)
def test_labels_are_balanced(name):
    labels = generate_suite_split(name, "train", 200).labels
    counts = torch.bincount(labels, minlength=SUITE_SPECS[name].num_classes)
    assert int(counts.max() - counts.min()) <= 1


def test_dsprites_groups_follow_vtab_rule_into_16_classes():
    positions = dsprites.position_label(torch.arange(32))
    assert positions.tolist() == [i // 2 for i in range(32)]
    orientations = dsprites.orientation_label(torch.arange(40))
    assert orientations.tolist() == [int(i / 2.5) for i in range(40)]
    assert torch.bincount(orientations).tolist() == [3, 2] * 8
    names = SUITE_SPECS["1k/dsprites-orientation"].class_names
    assert names[:2] == ("0-27deg", "27-45deg") and names[-1] == "342-360deg"
    assert SUITE_SPECS["1k/dsprites-location"].class_names[-1] == "x30-31"
    labels = generate_suite_split("1k/dsprites-orientation", "train", 400).labels
    # 40 orientations drawn stratified: 10 each, so classes of 3 angles hold 30, of 2 hold 20.
    assert torch.bincount(labels).tolist() == [30, 20] * 8


def _centroid_x(images: torch.Tensor) -> torch.Tensor:
    weight = images[:, 0].float()
    xs = torch.arange(IMAGE_SIZE, dtype=torch.float32) + 0.5
    return (weight * xs).sum((1, 2)) / weight.sum((1, 2))


def test_dsprites_position_label_is_monotone_in_x():
    # The same sprites (shape, scale, angle, y) moved through the 32 x positions.
    n = 32
    shape = torch.arange(n) % 3
    others = {"shape": shape, "scale_index": torch.full((n,), 3), "y_index": torch.full((n,), 9)}
    images = dsprites.render_sprites(
        **others, orientation_index=torch.full((n,), 7), x_index=torch.arange(n)
    )
    for s in range(3):
        centroids = _centroid_x(images[shape == s])
        assert torch.all(centroids[1:] > centroids[:-1])
    # And in generated data: the mean sprite x grows with the label.
    split = generate_suite_split("1k/dsprites-location", "train", 320)
    centroids = _centroid_x(split.images)
    means = torch.stack([centroids[split.labels == c].mean() for c in range(16)])
    assert torch.all(means[1:] > means[:-1])


def test_dsprites_square_repeats_every_quarter_turn_and_the_heart_does_not():
    def sprite(shape: int, orientation: int) -> torch.Tensor:
        one = lambda v: torch.tensor([v])  # noqa: E731
        return dsprites.render_sprites(one(shape), one(5), one(orientation), one(16), one(16))

    quarter = dsprites.NUM_ORIENTATIONS // 4
    square = dsprites.SHAPES.index("square")
    heart = dsprites.SHAPES.index("heart")
    assert torch.allclose(sprite(square, 3), sprite(square, 3 + quarter), atol=1e-3)
    assert (sprite(heart, 3) - sprite(heart, 3 + quarter)).abs().max() > 0.5


def test_clevr_count_label_is_the_number_of_drawn_objects_minus_3():
    g = torch.Generator().manual_seed(0)
    labels = torch.arange(8).repeat(4)
    scene = clevr.sample_scenes(labels + 3, g)
    assert torch.equal(scene.present.sum(dim=1), labels + 3)
    full = clevr.render_scenes(scene, torch.Generator().manual_seed(1))
    # Every drawn object shows: removing any one changes the image.
    for slot in range(clevr.MAX_OBJECTS):
        fewer = copy.copy(scene)
        fewer.present = scene.present.clone()
        fewer.present[:, slot] = False
        image = clevr.render_scenes(fewer, torch.Generator().manual_seed(1))
        changed = ((image - full).abs().amax(dim=1) > 0.05).flatten(1).sum(dim=1)
        assert torch.all(changed[scene.present[:, slot]] >= 1)
        assert torch.all(changed[~scene.present[:, slot]] == 0)
    split = generate_suite_split("1k/clevr-count", "train", 16)
    assert sorted(split.labels.tolist()) == sorted(list(range(8)) * 2)


def test_clevr_distance_thresholds_are_the_train_sextiles_and_label_the_nearest_bin():
    depths = clevr_nearest_depths("train", data_seed=0)
    assert len(depths) == SUITE_SPLIT_SIZES["train"]
    sextiles = torch.quantile(depths, torch.linspace(0, 1, 7)[1:-1])
    assert torch.allclose(sextiles, torch.tensor(clevr.DISTANCE_THRESHOLDS), atol=0.006)
    labels = torch.bucketize(depths, torch.tensor(clevr.DISTANCE_THRESHOLDS), right=True)
    shares = torch.bincount(labels, minlength=6) / len(labels)
    assert shares.min() > 0.14 and shares.max() < 0.19
    # Nearer objects, smaller bin: the label rule itself.
    g = torch.Generator().manual_seed(2)
    scene = clevr.sample_scenes(torch.full((64,), 5), g)
    nearest = scene.depth().min(dim=1).values
    order = nearest.argsort()
    assert torch.all(clevr.distance_label(scene)[order].diff() >= 0)


def test_norb_validation_and_test_show_toys_unseen_in_training():
    g = torch.Generator().manual_seed(0)
    train = norb._views(torch.zeros(500, dtype=torch.long), g, held_out=False)["toy_index"]
    held = norb._views(torch.zeros(500, dtype=torch.long), g, held_out=True)["toy_index"]
    assert set((train % norb.NUM_INSTANCES).tolist()) == set(norb.TRAIN_INSTANCES)
    assert set((held % norb.NUM_INSTANCES).tolist()) == set(norb.HELD_OUT_INSTANCES)


def _render_toy(toy: int, azimuths, elevations, lighting: int) -> torch.Tensor:
    toys = norb.make_toys(torch.Generator().manual_seed(0))
    n = max(len(azimuths), len(elevations))
    full = lambda v: torch.as_tensor(v).expand(n)  # noqa: E731
    return norb.render_toys(
        toys, full(toy), full(azimuths), full(elevations), full(lighting), full(0.0)
    )  # a black backdrop: lit pixels are the toy's


def test_norb_azimuth_turns_the_toy_and_mirror_azimuths_mirror_the_image():
    airplane = norb.CATEGORIES.index("airplane") * norb.NUM_INSTANCES  # symmetric left-right
    azimuths = torch.tensor([1, 17, 4, 14])  # 20 / 340 and 80 / 280 degrees
    images = _render_toy(airplane, azimuths, torch.tensor([3]), lighting=1)
    assert torch.allclose(images[0], images[1].flip(-1), atol=1e-4)
    assert torch.allclose(images[2], images[3].flip(-1), atol=1e-4)
    assert (images[0] - images[2]).abs().max() > 0.1


def test_norb_elevation_foreshortens_a_standing_figure():
    human = norb.CATEGORIES.index("human") * norb.NUM_INSTANCES
    images = _render_toy(human, torch.tensor([4]), torch.arange(len(norb.ELEVATIONS)), 0)
    rows = (images[:, 0] > 1e-3).any(dim=2).sum(dim=1)  # rows the toy covers
    assert rows[0] >= rows[-1] + 3  # a tall figure seen from 30 degrees, then from 70
    flat = images.flatten(1)
    assert all(not torch.equal(flat[i], flat[i + 1]) for i in range(len(flat) - 1))


def test_digits_1k_splits_cover_scikit_learns_digits_once():
    source = load_suite_source("1k/digits")
    assert {s: source.num_examples(s) for s in SPLITS} == DIGITS_1K_SPLIT_SIZES
    assert source.image_shape() == (3, 8, 8)
    rows = []
    for split in SPLITS:
        images = source.images(split, torch.arange(source.num_examples(split)))
        assert torch.equal(images[:, 0], images[:, 2])  # grey as RGB
        rows.append(torch.cat((images[:, 0].flatten(1), source.labels(split)[:, None]), dim=1))
        assert torch.bincount(source.labels(split), minlength=10).min() > 0
    from sklearn.datasets import load_digits

    original = load_digits()
    pixels = torch.from_numpy((original.images * (255.0 / 16.0)).round()).flatten(1)
    expected = torch.cat((pixels.long(), torch.from_numpy(original.target)[:, None]), dim=1)
    assert sorted(map(tuple, torch.cat(rows).tolist())) == sorted(map(tuple, expected.tolist()))
    assert not torch.equal(
        load_suite_source("1k/digits", data_seed=1).labels("test"), source.labels("test")
    )


def test_a_generated_task_builds_with_its_documented_sizes_and_class_names():
    task = get_task("1k/dsprites-location", batch_size=32)
    assert task.num_classes == 16 and len(task.class_names) == 16
    assert task.num_train_examples == 800
    assert task.sizing.num_validation_examples_total == 200
    assert task.num_test_examples == SUITE_SPLIT_SIZES["test"]
    assert load_suite_source("1k/dsprites-location") is load_suite_source("1k/dsprites-location")


@pytest.mark.slow
@pytest.mark.parametrize("name", SUITE_TASKS)
def test_every_suite_task_builds_with_its_documented_sizes(name):
    source = load_suite_source(name)
    sizes = DIGITS_1K_SPLIT_SIZES if name == "1k/digits" else SUITE_SPLIT_SIZES
    assert {s: source.num_examples(s) for s in SPLITS} == sizes
    assert len(source.class_names) == source.num_classes
    for split in SPLITS:
        counts = torch.bincount(source.labels(split), minlength=source.num_classes)
        assert counts.min() > 0


def test_unknown_names_and_bad_data_seeds_are_refused():
    with pytest.raises(ValueError, match=r"unknown suite task '1k/nope'; known: 1k/digits"):
        load_suite_source("1k/nope")
    with pytest.raises(ValueError, match=r"did you mean '1k/clevr-count'"):
        get_task("1k/clevr-cont")
    for bad in (-1, 1.5, True, "0"):
        with pytest.raises(ValueError, match=r"data_seed .*: expected a non-negative integer"):
            load_suite_source("1k/digits", data_seed=bad)
    with pytest.raises(ValueError, match=r"split 'val': expected one of train"):
        generate_suite_split("1k/clevr-count", "val", 4)
    with pytest.raises(ValueError, match=r"unknown generated suite task '1k/digits'"):
        generate_suite_split("1k/digits", "train", 4)


def test_suite_generators_share_nothing_with_the_pretraining_recipes():
    package = Path(clevr.__file__).parent
    for module in package.glob("*.py"):
        tree = ast.parse(module.read_text())
        imported = [
            node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
        ] + [a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names]
        assert not any("pretrain" in name for name in imported), module


def test_munet_tasks_show_sizes_a_suite_task(capsys):
    from munet.cli import main

    assert main(["tasks", "show", "1k/digits", "--batch-size", "32"]) == 0
    out = capsys.readouterr().out
    assert "classes: 10 (0, 1, 2, 3, 4, 5, 6, 7, 8, 9)" in out
    assert "examples: train 800, validation 200 (used 196), test 797" in out
    assert "split 800 / 200 / 797 by a permutation drawn from data_seed 0" in out
