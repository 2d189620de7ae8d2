import pytest

from munet.nasbench.generate import write_synthetic_dataset


@pytest.fixture(scope="session")
def nasbench_table(tmp_path_factory):
    """Every unique cell of up to 4 vertices (91 cells), 4 epoch budgets x 3 repeats."""
    path = tmp_path_factory.mktemp("search-nasbench") / "small.tfrecord"
    write_synthetic_dataset(path, max_vertices=4, seed=3)
    return str(path)


def tiny_vit_settings(**overrides):
    """A ViT objective small enough for tests: 8 px digits, widths 8/16, a few steps."""
    settings = dict(
        layers=(0, 1),
        widths=(8, 16),
        image_sizes=(8,),
        num_heads=2,
        patch_size=4,
        seed_steps=8,
        search_steps=4,
        train_steps=4,
        batch_size=32,
        num_validation_examples=64,
    )
    settings.update(overrides)
    return settings
