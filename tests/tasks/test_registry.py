import importlib.util

import pytest

from munet.cli import main
from munet.tasks import get_task, known_task_names, register_task
from munet.tasks.sources.synth import load_synth_source
from munet.tasks.tfds_splits import (
    TFDS_IMAGE_CLASSIFICATION_DATASETS,
    VTAB_TASKS,
    default_splits,
    is_tfds_task,
    tfds_dataset_and_splits,
    tfds_task_names,
)
from munet.tasks.vtab import vtab_split_expressions


def test_unknown_task_lists_close_matches_and_known_names():
    with pytest.raises(ValueError) as error:
        get_task("digts")
    message = str(error.value)
    assert "unknown task 'digts'" in message
    assert "did you mean 'digits'" in message
    assert "synth/shape" in message and "folder:" in message


def test_unknown_scheme_location_is_a_clear_error():
    with pytest.raises(ValueError, match="no location after 'npz:'"):
        get_task("npz:")


def test_registered_names_resolve_and_cannot_be_registered_twice():
    register_task("test/registered-shape", lambda: load_synth_source("synth/shape"), "a copy")
    task = get_task("test/registered-shape", batch_size=32)
    assert task.num_classes == 4 and "test/registered-shape" in known_task_names()
    with pytest.raises(ValueError, match="already registered"):
        register_task("test/registered-shape", lambda: load_synth_source("synth/shape"))


@pytest.mark.parametrize(
    "name, datasets, splits",
    [
        ("cifar10", ("cifar10", "cifar10_1", "cifar10"), ("train", "test", "test")),
        (
            "imagenet2012",
            ("imagenet2012", "imagenet_v2", "imagenet2012"),
            ("train", "test", "validation"),
        ),
        ("cifar100", ("cifar100",) * 3, ("train[:98%]", "train[98%:]", "test")),
        (
            "visual_domain_decathlon/dtd",
            ("visual_domain_decathlon/dtd",) * 3,
            ("train", "validation[:50%]", "validation[50%:]"),
        ),
        ("cmaterdb/bangla", ("cmaterdb/bangla",) * 3, ("train[20%:]", "train[:20%]", "test")),
        ("omniglot", ("omniglot",) * 3, ("train", "small1", "small2")),
        (
            "quickdraw_bitmap",
            ("quickdraw_bitmap",) * 3,
            ("train[20000:]", "train[10000:20000]", "train[:10000]"),
        ),
        ("imagenet_r", ("imagenet_r",) * 3, ("test[10%:]", "test[5%:10%]", "test[:5%]")),
        (
            "cycle_gan/maps",
            ("cycle_gan/maps",) * 3,
            ("trainA[10%:]+trainB[10%:]", "trainA[:10%]+trainB[:10%]", "testA+testB"),
        ),
        ("dtd", ("dtd:3.*.*",) * 3, ("train", "validation", "test")),
        ("dtd/1k", ("dtd:3.*.*",) * 3, ("train[:800]", "validation[:200]", "test")),
        (
            "smallnorb/label_azimuth/1k",
            ("smallnorb:2.*.*",) * 3,
            ("train[:800]", "test[:200]", "test[50%:]"),
        ),
    ],
)
def test_tfds_split_table_follows_the_seed(name, datasets, splits):
    entry = tfds_dataset_and_splits(name)
    order = ("train", "validation", "test")
    assert tuple(entry.datasets[s] for s in order) == datasets
    assert tuple(entry.splits[s] for s in order) == splits


def test_stanford_online_products_reads_the_super_class():
    assert tfds_dataset_and_splits("stanford_online_products").label_key == "super_class_id"


def test_default_splits_take_5_percent_slices_for_missing_splits():
    assert default_splits(["train", "test"]) == {
        "test": "test",
        "validation": "train[0%:5%]",
        "train": "train[5%:]",
    }
    assert default_splits(["train"]) == {
        "test": "train[0%:5%]",
        "validation": "train[5%:10%]",
        "train": "train[10%:]",
    }
    with pytest.raises(ValueError, match="no 'train' split"):
        default_splits(["test"])


def test_vtab_count_based_splits_and_1k_variants():
    assert vtab_split_expressions("clevr/count_all", train_count=70000) == {
        "train": "train[:63000]",
        "validation": "train[63000:]",
        "test": "validation",
    }
    assert vtab_split_expressions("clevr/count_all/1k", train_count=70000) == {
        "train": "train[:800]",
        "validation": "train[63000:63200]",
        "test": "validation",
    }
    assert vtab_split_expressions("eurosat", train_count=27000) == {
        "train": "train[:16200]",
        "validation": "train[16200:21600]",
        "test": "train[21600:]",
    }
    with pytest.raises(ValueError, match="pass train_count"):
        vtab_split_expressions("caltech101")


def test_validation_only_datasets_are_refused():
    with pytest.raises(ValueError, match="only used as the validation set"):
        tfds_dataset_and_splits("cifar10_1")


def test_every_seed_name_is_a_tfds_task():
    names = tfds_task_names()
    for name in TFDS_IMAGE_CLASSIFICATION_DATASETS + VTAB_TASKS:
        assert is_tfds_task(name) and name in names
    assert "oxford_iiit_pet/1k" in names and "oxford_iiit_pet" in names
    assert not is_tfds_task("digits")


@pytest.mark.skipif(
    importlib.util.find_spec("tensorflow_datasets") is not None, reason="TFDS is installed"
)
def test_tfds_task_without_the_package_says_what_to_install():
    with pytest.raises(ImportError, match="tensorflow-datasets"):
        get_task("dtd/1k")


def test_cli_lists_tasks_and_needs(capsys):
    assert main(["tasks"]) == 0
    out = capsys.readouterr().out
    for name in ("digits", "synth/shape", "synth/count", "folder:ROOT", "npz:FILE", "hf:"):
        assert name in out
    assert "tensorflow-datasets" in out
    # The install hint only where the package is missing (issue 31).
    import importlib.util

    optional = [
        ("datasets", "datasets", "hf"),
        ("tensorflow-datasets", "tensorflow_datasets", "tfds"),
    ]
    for package, module, extra in optional:
        if importlib.util.find_spec(module) is None:
            assert f"needs '{package}' (not installed: pip install 'munet-evolve[{extra}]')" in out
        else:
            assert f"uses '{package}' (installed)" in out and f"munet-evolve[{extra}]" not in out
    assert main(["tasks", "list", "--all"]) == 0
    assert "visual_domain_decathlon/vgg-flowers" in capsys.readouterr().out


def test_cli_show_prints_sizing(capsys):
    assert main(["tasks", "show", "digits", "--batch-size", "128"]) == 0
    out = capsys.readouterr().out
    assert "classes: 10" in out
    assert "train batches between validations: 10" in out  # ceil(1257 / 128)
    assert "validation: 2 batches of 90" in out


def test_cli_show_unknown_task_fails_cleanly(capsys):
    assert main(["tasks", "show", "synth/shap"]) == 2
    assert "did you mean 'synth/shape'" in capsys.readouterr().err


def test_vtab_label_rules_on_tfds_style_examples():
    import numpy as np

    from munet.tasks.sources.tfds import vtab_label

    scene = {
        "objects": {
            "size": np.array([0, 1, 1, 0, 1]),
            "shape": np.array([2, 0, 2, 1, 2]),
            "pixel_coords": np.array(
                [[1, 1, 12.0], [2, 2, 8.7], [3, 3, 9.9], [0, 0, 11.0], [5, 5, 14.0]]
            ),
        }
    }
    assert vtab_label("clevr_count_all", scene) == 2  # 5 objects - 3
    assert vtab_label("clevr_count_cylinders", scene) == 3
    assert vtab_label("clevr_closest_distance", scene) == 2  # 8.7 lies in (8.5, 9.0]
    assert vtab_label("label_azimuth", {"label_azimuth": np.int64(7)}) == 7
    with pytest.raises(NotImplementedError, match="KITTI|kitti"):
        vtab_label("kitti_count_vehicles", {})
