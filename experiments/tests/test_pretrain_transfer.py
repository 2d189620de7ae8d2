import json
import shutil

from experiments.tests.scripts import ROOTS, load_script
from munet.pretrain.loop import pretrain

TINY = ["batch_size=8", "num_train_examples_between_validations_max=16",
        "num_validations_per_path_training=1", "num_validation_examples_max=16",
        "num_layers=1", "hparams_mutation_ranges.num_layers=[0, 1]", "ds_image_size=8",
        "hparams_mutation_ranges.ds_image_size=[8]"]  # fmt: skip


def test_the_transfer_benchmark_compares_a_root_with_random_init(tiny_spec, tmp_path, capsys):
    result = pretrain(tiny_spec, tmp_path / "work", steps=2, progress=False, eval_examples=8)
    card = tmp_path / "card.json"
    shutil.copy(result.card_file, card)
    module = load_script(ROOTS, "pretrain_transfer")
    sets = [arg for item in TINY for arg in ("--set", item)]
    module.main(["--root", f"tiny={result.root_file}", "--tasks", "synth/color", "--steps", "2",
                 "--card", str(card), *sets])  # fmt: skip
    out = capsys.readouterr().out
    assert "ratio: synth/color tiny / random_init (test accuracy) = " in out
    figures = json.loads(card.read_text())["transfer"]["results"]["synth/color"]
    assert set(figures) == {"random_init", "tiny"}
    assert all(0 <= score <= 1 for scores in figures.values() for score in scores)
