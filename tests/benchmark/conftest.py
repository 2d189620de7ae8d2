import pytest

# VitCpu shrunk to a few steps of a 1-block ViT on 8 px images (tests/agents/conftest.py).
TINY_OVERRIDES = [
    "batch_size=8",
    "num_train_examples_between_validations_max=16",
    "num_validations_per_path_training=2",
    "num_validation_examples_max=16",
    "max_task_population_size=2",
    "hparams_mutation_ranges.num_layers=[0, 1, 2]",
    "num_layers=1",
    "hparams_mutation_ranges.ds_image_size=[8, 16]",
    "ds_image_size=8",
]


@pytest.fixture
def tiny_overrides():
    return list(TINY_OVERRIDES)
