"""Per-class evaluation in `munet test` and the export's card; `munet export --format hf|onnx`
from a grown system, checked in transformers and onnxruntime against munet's logits."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch

from munet.cli import main
from munet.models.class_metrics import ClassMetrics, ConfusionCounter, class_table
from munet.models.export import load_exported
from tests.agents.conftest import TINY_OVERRIDES
from tests.agents.test_own_data import CLASSES, write_flowers

SETS = [arg for item in TINY_OVERRIDES for arg in ("--set", item)]


def test_confusion_counter_counts_per_class_and_top5():
    counter = ConfusionCounter(7, [f"c{i}" for i in range(7)])
    logits = torch.full((4, 7), -1.0)
    logits[0, 2] = 5  # true 2 -> 2
    logits[1, 3] = 5  # true 1 -> 3 (1 second)
    logits[1, 1] = 4
    logits[2, 6] = 5  # true 0 -> 6, and 0 ranks last: not in the top 5
    logits[2, 0] = -9
    logits[3, 4] = 5  # true 4 -> 4
    counter.update(logits, torch.tensor([2, 1, 0, 4]))
    result = counter.result()
    assert result.confusion[2][2] == 1 and result.confusion[1][3] == 1
    assert result.confusion[0][6] == 1 and result.num_examples == 4
    assert result.accuracy == 0.5 and result.top5_accuracy == 0.75
    assert result.per_class_accuracy[:3] == [0.0, 0.0, 1.0] and result.per_class_accuracy[5] is None
    assert ClassMetrics.from_dict(json.loads(json.dumps(result.to_dict()))) == result
    text = class_table(result)
    assert "c1" in text and "rows: true class" in text
    # Five classes or fewer: no top-5 (it would always be 1).
    small = ConfusionCounter(3)
    small.update(torch.eye(3), torch.tensor([0, 1, 1]))
    assert small.result().top5_accuracy is None and small.result().accuracy == 2 / 3
    with pytest.raises(ValueError, match=r"labels outside \[0, 3\)"):
        small.update(torch.eye(3), torch.tensor([0, 1, 3]))
    with pytest.raises(ValueError, match="confusion matrix of 2 rows is not square"):
        ClassMetrics.from_dict({"confusion": [[1, 2, 3], [4, 5, 6]]})


@pytest.fixture(scope="module")
def grown(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("grown")
    data = write_flowers(tmp / "flowers", train_per_class=12, test_per_class=5)
    state = tmp / "state"
    assert main(["root", "--agent", "VitCpu", "-d", str(state), *SETS, "-q"]) == 0
    assert main(["run", "--agent", "VitCpu", "--task", "flowers", "--data", f"folder:{data}",
                 "--cycles", "1", "-d", str(state), *SETS, "-q"]) == 0  # fmt: skip
    return state, data


def test_munet_test_shows_per_class_accuracy_and_the_confusion_matrix(grown, capsys):
    state, _ = grown
    capsys.readouterr()
    assert main(["test", "-d", str(state), "--format", "json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)
    classes = entry["classes"]
    assert classes["class_names"] == sorted(CLASSES)
    confusion = np.array(classes["confusion"])
    assert confusion.shape == (3, 3) and confusion.sum() == entry["examples"] == 15
    assert confusion.sum(axis=1).tolist() == [5, 5, 5]  # 5 test images per class
    # The per-class numbers are the measured accuracy's parts.
    assert np.trace(confusion) / confusion.sum() == entry["measured"] == classes["accuracy"]
    assert [c["correct"] for c in classes["per_class"]] == np.diag(confusion).tolist()
    assert classes["top5_accuracy"] is None  # 3 classes
    assert entry["status"] == "ok"

    assert main(["test", "-d", str(state)]) == 0
    table = capsys.readouterr().out
    assert "1/1 paths reproduce" in table
    assert "class   examples  correct  accuracy" in table
    assert "confusion matrix (rows: true class, columns: predicted class)" in table
    for name in CLASSES:
        assert f"\n{name}" in table


def test_export_card_and_config_carry_the_per_class_test_metrics(grown, tmp_path, capsys):
    state, _ = grown
    out = tmp_path / "export"
    assert main(["export", "-d", str(state), "--task", "flowers", "--out", str(out)]) == 0
    config = json.loads((out / "config.json").read_text())
    classes = config["class_metrics"]
    assert classes["accuracy"] == config["metrics"]["test_quality"]
    card = (out / "README.md").read_text()
    assert "## Per-class test accuracy" in card and "| true \\ predicted | daisy | rose |" in card


def test_export_format_hf_and_onnx_give_munet_logits(grown, tmp_path, capsys):
    transformers = pytest.importorskip("transformers")
    onnxruntime = pytest.importorskip("onnxruntime")
    state, data = grown
    paths = {}
    for fmt in ("munet", "hf", "onnx"):
        paths[fmt] = tmp_path / fmt
        assert main(["export", "-d", str(state), "--task", "flowers", "--format", fmt,
                     "--out", str(paths[fmt])]) == 0  # fmt: skip
        assert f"to {paths[fmt]}" in capsys.readouterr().out
    model, preprocess = load_exported(paths["munet"])
    size = preprocess.image_size
    generator = torch.Generator().manual_seed(4)
    images = torch.rand(6, 3, size, size, generator=generator) * 2 - 1
    expected = model(images)
    hf = transformers.ViTForImageClassification.from_pretrained(str(paths["hf"])).eval()
    with torch.no_grad():
        torch.testing.assert_close(hf(pixel_values=images).logits, expected, rtol=1e-5,
                                   atol=1e-5)  # fmt: skip
    assert [hf.config.id2label[i] for i in range(3)] == sorted(CLASSES)
    session = onnxruntime.InferenceSession(str(paths["onnx"] / "model.onnx"))
    (logits,) = session.run(["logits"], {"pixel_values": images.numpy()})
    np.testing.assert_allclose(logits, expected.numpy(), rtol=1e-5, atol=1e-5)
    # The folder checks come before the export: a busy --out is refused, kept, no scratch left.
    assert main(["export", "-d", str(state), "--task", "flowers", "--format", "hf",
                 "--out", str(paths["hf"])]) == 2  # fmt: skip
    assert "exists and is not empty" in capsys.readouterr().err


def test_export_format_hf_refuses_a_multipath_path_naming_it(grown, tmp_path, capsys):
    state = tmp_path / "state"
    shutil.copytree(grown[0], state)  # The shared system stays as the other tests expect.
    # The multipath preset keeps its own architecture and image sizes (as the CLI tests do).
    multi = [a for item in TINY_OVERRIDES if "num_layers" not in item
             and "ds_image_size" not in item for a in ("--set", item)]  # fmt: skip
    assert main(["run", "--agent", "VitCpu", "--task", "synth/color", "--cycles", "1",
                 "-d", str(state), *SETS, "-q"]) == 0  # fmt: skip
    assert main(["run", "--agent", "MultiVitCpu", "--task", "flowers", "--cycles", "1",
                 "-d", str(state), *multi, "-q"]) == 0  # fmt: skip
    capsys.readouterr()
    for fmt in ("hf", "onnx"):
        out = tmp_path / fmt
        assert main(["export", "-d", str(state), "--task", "flowers", "--agent", "MultiVitCpu",
                     "--format", fmt, "--out", str(out)]) == 2  # fmt: skip
        err = capsys.readouterr().err
        assert "munet: error: path MultiVitCpu~flowers:" in err
        assert "singlepath paths only" in err and "--format munet" in err
        assert not out.exists()


def test_a_vit_search_model_exports_to_hf_and_onnx(tmp_path, capsys):
    transformers = pytest.importorskip("transformers")
    onnxruntime = pytest.importorskip("onnxruntime")
    from tests.search.conftest import tiny_vit_settings

    run = tmp_path / "run"
    argv = ["search", "--strategy", "random", "--objective", "vit:digits", "--out", str(run),
            "--max-trials", "1"]  # fmt: skip
    for key, value in tiny_vit_settings(layers=(1,), widths=(8,)).items():
        argv += ["--set", f"{key}={json.dumps(list(value) if isinstance(value, tuple) else value)}"]
    assert main(argv) == 0
    assert main(["export", "--search", str(run), "--out", str(tmp_path / "munet")]) == 0
    for fmt in ("hf", "onnx"):
        assert main(["export", "--search", str(run), "--format", fmt,
                     "--out", str(tmp_path / fmt)]) == 0  # fmt: skip
    assert "(transformers ViTForImageClassification folder)" in capsys.readouterr().out
    model, preprocess = load_exported(tmp_path / "munet")
    size = preprocess.image_size
    images = torch.rand(3, 3, size, size, generator=torch.Generator().manual_seed(2)) * 2 - 1
    expected = model(images)
    hf = transformers.ViTForImageClassification.from_pretrained(str(tmp_path / "hf")).eval()
    with torch.no_grad():
        torch.testing.assert_close(hf(pixel_values=images).logits, expected, rtol=1e-5,
                                   atol=1e-5)  # fmt: skip
    session = onnxruntime.InferenceSession(str(tmp_path / "onnx" / "model.onnx"))
    (logits,) = session.run(["logits"], {"pixel_values": images.numpy()})
    np.testing.assert_allclose(logits, expected.numpy(), rtol=1e-5, atol=1e-5)
