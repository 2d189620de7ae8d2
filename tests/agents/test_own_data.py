"""A user's own data end to end, through the `munet` command: a named task bound to a folder of
PNG/JPEG files, an .npz file or a saved Hugging Face dataset; run, resume without --data,
export, predict, and the immutability test."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from munet.agents.published import PublishedSystem
from munet.agents.runner import make_agent, resolve_config
from munet.agents.singlepath import assemble_vit
from munet.cli import main
from munet.config import AgentConfig
from munet.models.export import load_exported
from munet.system import SystemStore
from munet.tasks import get_task, registry

from .conftest import TINY_OVERRIDES

SETS = [arg for item in TINY_OVERRIDES for arg in ("--set", item)]
CLASSES = {"daisy": (230, 220, 60), "rose": (210, 40, 60), "violet": (120, 60, 200)}


def write_flowers(root: Path, train_per_class: int = 24, test_per_class: int = 8) -> Path:
    """ROOT/train/<class>/ and ROOT/test/<class>/ of noisy coloured images of several sizes,
    as PNG and JPEG, some grey, RGBA or palette (validation is carved from train)."""
    rng = np.random.default_rng(0)
    for split, count in (("train", train_per_class), ("test", test_per_class)):
        for name, colour in CLASSES.items():
            folder = root / split / name
            folder.mkdir(parents=True)
            for i in range(count):
                h, w = (int(v) for v in rng.integers(10, 26, size=2))
                noise = rng.normal(0, 70, size=(h, w, 3))
                pixels = np.clip(np.array(colour) + noise, 0, 255).astype(np.uint8)
                image = Image.fromarray(pixels)
                if i % 7 == 3:
                    image = image.convert("RGBA")
                elif i % 7 == 5:
                    image = image.convert("P")
                elif i % 11 == 6:
                    image = image.convert("L")
                ext = "jpg" if i % 2 and image.mode in ("RGB", "L") else "png"
                image.save(folder / f"{i:03d}.{ext}")
    return root


def run(*args: str) -> int:
    return main([*args])


def read_json_output(capsys) -> object:
    return json.loads(capsys.readouterr().out)


def state_snapshot(state: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(state)): p.read_bytes()
        for p in sorted(state.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


def predicted_accuracy(capsys, export: Path, files_by_label: dict[str, list[Path]]) -> float:
    inputs = [str(f) for files in files_by_label.values() for f in files]
    assert run("predict", str(export), *inputs, "--format", "json", "--batch-size", "5") == 0
    predictions = read_json_output(capsys)
    truth = {str(f): label for label, files in files_by_label.items() for f in files}
    assert len(predictions) == len(truth)
    correct = sum(p["predictions"][0]["class"] == truth[p["file"]] for p in predictions)
    return correct / len(predictions)


def test_folder_task_run_resume_export_predict_test(tmp_path, capsys):
    data = write_flowers(tmp_path / "flowers")
    state = tmp_path / "state"
    assert run("root", "--agent", "VitCpu", "-d", str(state), *SETS, "-q") == 0
    # A source is not a task name: the error says how to name it.
    assert run("run", "--agent", "VitCpu", "--task", f"folder:{data}", "--cycles", "1",
               "-d", str(state), *SETS) == 2  # fmt: skip
    assert "--task mydata --data folder:" in capsys.readouterr().err
    # An unknown name without --data says how to bind one.
    assert run("run", "--agent", "VitCpu", "--task", "flowers", "--cycles", "1",
               "-d", str(state), *SETS, "-q") == 2  # fmt: skip
    assert "--task flowers --data folder:ROOT" in capsys.readouterr().err

    assert run("run", "--agent", "VitCpu", "--task", "flowers", "--data", f"folder:{data}",
               "--cycles", "1", "-d", str(state), *SETS, "-q") == 0  # fmt: skip
    capsys.readouterr()
    # Resume without --data: the source comes from the stored config (not -q: the
    # "continuing" line is part of the per-generation output -q silences).
    assert run("run", "--agent", "VitCpu", "--task", "flowers", "--cycles", "2",
               "-d", str(state)) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "continuing from state state_1_0" in out and "VitCpu~flowers: 2 cycles" in out
    store = SystemStore(state)
    manifest = store.read_manifest(store.latest_state("VitCpu~flowers"))
    assert manifest["config"]["data"] == f"folder:{data.resolve()}"
    assert manifest["config"]["data_split"] == "own-data"

    # Another source for the same task: refused, both shown, nothing changed.
    before = state_snapshot(state)
    other = write_flowers(tmp_path / "other", train_per_class=4, test_per_class=2)
    assert run("run", "--agent", "VitCpu", "--task", "flowers", "--data", f"folder:{other}",
               "--cycles", "3", "-d", str(state), "-q") == 2  # fmt: skip
    err = capsys.readouterr().err
    assert f"already reads folder:{data.resolve()}" in err and f"folder:{other.resolve()}" in err
    assert state_snapshot(state) == before

    assert run("leaderboard", "-d", str(state), "--format", "csv") == 0
    rows = {r["agent_id"]: r for r in csv.DictReader(io.StringIO(capsys.readouterr().out))}
    assert rows["VitCpu~flowers"]["source"] == f"folder:{data.resolve()}"
    test_quality = float(rows["VitCpu~flowers"]["test_quality"])
    assert run("tasks", "show", "flowers", "-d", str(state)) == 0
    shown = capsys.readouterr().out
    assert f"source: folder:{data.resolve()}" in shown
    assert "classes: 3 (daisy, rose, violet)" in shown
    # 72 train images, no validation: the own-data rule carves 20% (14), stratified.
    assert "own-data rule: stratified split of the train pool: validation 14" in shown
    assert "test 24" in shown

    export = tmp_path / "export"
    assert run("export", "-d", str(state), "--task", "flowers", "--out", str(export)) == 0
    assert "exported VitCpu~flowers:" in capsys.readouterr().out
    config = json.loads((export / "config.json").read_text())
    assert config["class_names"] == list(CLASSES)
    assert config["provenance"]["source"] == f"folder:{data.resolve()}"
    assert config["metrics"]["test_quality"] == test_quality
    # Exporting again into the same folder loses nothing.
    assert run("export", "-d", str(state), "--task", "flowers", "--out", str(export)) == 2
    assert "not empty" in capsys.readouterr().err

    # The exported model sees the test files exactly as the system tested them.
    test_files = {c: sorted((data / "test" / c).iterdir()) for c in CLASSES}
    model, preprocess = load_exported(export)
    task = get_task("flowers", data=f"folder:{data}")
    hparams = config["provenance"]["hparams"]
    system_images = torch.cat([b.images for b in task.test_batches(hparams)])
    exported_images = preprocess([f for files in test_files.values() for f in files])
    assert torch.equal(exported_images, system_images)
    # ... and computes the logits of the agent's own model of the path, to the last bit.
    published = PublishedSystem.load(store).find("flowers")
    agent_config = AgentConfig.from_dict(published.config)
    in_system, _ = assemble_vit(agent_config, published.path, torch.device("cpu"), train=False)
    with torch.no_grad():
        assert torch.equal(model(system_images), in_system(system_images))
    assert predicted_accuracy(capsys, export, test_files) == test_quality

    # Unreadable images are named and skipped; the exit code says some failed.
    extra = tmp_path / "extra"
    extra.mkdir()
    good = test_files["rose"][0]
    (extra / "truncated.png").write_bytes(test_files["rose"][1].read_bytes()[:60])
    (extra / "ok.png").write_bytes(good.read_bytes())
    assert run("predict", str(export), str(extra), "--top-k", "2", "--format", "csv") == 2
    captured = capsys.readouterr()
    assert "skipping" in captured.err and "truncated.png" in captured.err
    lines = captured.out.splitlines()
    assert lines[0] == "file,rank,class,index,probability" and len(lines) == 3
    assert all(line.startswith(str(extra / "ok.png")) for line in lines[1:])

    # Progress on stderr when asked (by default only on a terminal).
    assert run("predict", str(export), str(data / "test"), "--batch-size", "4", "--progress") == 0
    assert "predict: 100%" in capsys.readouterr().err

    assert run("test", "-d", str(state)) == 0
    table = capsys.readouterr().out
    assert "VitCpu~flowers:" in table and " ok" in table
    assert "1/1 paths reproduce" in table


def test_immutability_mismatch_exits_10(tmp_path, capsys):
    data = write_flowers(tmp_path / "flowers", train_per_class=12, test_per_class=4)
    state = tmp_path / "state"
    assert run("root", "--agent", "VitCpu", "-d", str(state), *SETS, "-q") == 0
    assert run("run", "--agent", "VitCpu", "--task", "petals", "--data", f"folder:{data}",
               "--cycles", "1", "-d", str(state), *SETS, "-q") == 0  # fmt: skip
    store = SystemStore(state)
    ref = store.latest_state("VitCpu~petals")
    manifest_file = state / ref.relative_dir / "manifest.json"
    manifest = json.loads(manifest_file.read_text())
    (full_id,) = [f for f in manifest["published"] if f.startswith("VitCpu~petals:")]
    recorded = manifest["paths"][full_id]["metrics"]["test_quality"]
    manifest["paths"][full_id]["metrics"]["test_quality"] = recorded * 0.99 + 0.005
    manifest_file.write_text(json.dumps(manifest))
    capsys.readouterr()
    assert run("test", "-d", str(state), "--task", "petals") == 10  # EXIT_QUALITY_MISMATCH
    assert "MISMATCH" in capsys.readouterr().out
    # Data gone: the path cannot be checked, said per path, exit code 2.
    data.rename(tmp_path / "moved")
    registry._SOURCE_CACHE.clear()  # this process keeps the tasks it read
    registry._TASK_CACHE.clear()
    assert run("test", "-d", str(state), "--task", "petals") == 2
    assert "error: image folder" in capsys.readouterr().out


def test_npz_task_with_the_default_split_rule(tmp_path, capsys):
    rng = np.random.default_rng(1)
    n = 200
    labels = np.arange(n) % 4
    # Grey images whose brightness band tells the class, plus noise.
    images = np.clip(labels[:, None, None] * 60 + 20 + rng.normal(0, 25, (n, 12, 12)), 0, 255)
    npz = tmp_path / "bands.npz"
    np.savez(npz, x=images.astype(np.uint8), y=labels, class_names=np.array(list("abcd")))
    state = tmp_path / "state"
    assert run("root", "--agent", "VitCpu", "-d", str(state), *SETS, "-q") == 0
    assert run("run", "--agent", "VitCpu", "--task", "bands", "--data", f"npz:{npz}",
               "--cycles", "1", "-d", str(state), *SETS, "-q") == 0  # fmt: skip
    export = tmp_path / "export"
    capsys.readouterr()
    assert run("export", "-d", str(state), "--task", "bandz", "--out", str(export)) == 2
    assert "no published paths of task 'bandz'" in capsys.readouterr().err
    assert run("export", "-d", str(state), "--task", "bands", "--agent", "VitCpu",
               "--path", "99", "--out", str(export)) == 2  # fmt: skip
    assert "published no path 99" in capsys.readouterr().err
    assert not export.exists()
    store = SystemStore(state)
    best_id = PublishedSystem.load(store).find("bands").path.id
    assert run("export", "-d", str(state), "--task", "bands", "--agent", "VitCpu",
               "--path", str(best_id), "--out", str(export)) == 0  # fmt: skip
    config = json.loads((export / "config.json").read_text())
    assert config["provenance"]["path_id"] == best_id and config["provenance"]["best_published"]
    assert config["class_names"] == list("abcd") and config["preprocessing"]["storage_size"] == [
        12,
        12,
    ]
    # The carved test split (the own-data rule, your data's default: 20% of 200, stratified)
    # written out as PNG files.
    task = get_task("bands", data=f"npz:{npz}")
    count = task.num_test_examples
    assert count == 40
    test_images = task.source.images("test", torch.arange(count))
    test_labels = task.source.labels("test")
    files: dict[str, list[Path]] = {c: [] for c in "abcd"}
    for i in range(count):
        path = tmp_path / "test_png" / f"{i}.png"
        path.parent.mkdir(exist_ok=True)
        Image.fromarray(test_images[i, 0].numpy()).save(path)
        files["abcd"[int(test_labels[i])]].append(path)
    capsys.readouterr()
    accuracy = predicted_accuracy(capsys, export, files)
    assert accuracy == config["metrics"]["test_quality"]
    assert run("test", "-d", str(state), "--task", "bands") == 0


@pytest.mark.slow  # importing `datasets` alone takes seconds
def test_hugging_face_dataset_saved_to_disk(tmp_path, capsys):
    datasets = pytest.importorskip("datasets")
    rng = np.random.default_rng(2)

    def split(n):
        labels = [i % 3 for i in range(n)]
        images = [
            Image.fromarray(
                np.clip(np.array(list(CLASSES.values())[y]) + rng.normal(0, 40, (9, 11, 3)),
                        0, 255).astype(np.uint8)
            )
            for y in labels
        ]  # fmt: skip
        features = datasets.Features(
            {"img": datasets.Image(), "label": datasets.ClassLabel(names=list(CLASSES))}
        )
        return datasets.Dataset.from_dict({"img": images, "label": labels}, features=features)

    saved = tmp_path / "hf_flowers"
    datasets.DatasetDict({"train": split(60), "test": split(12)}).save_to_disk(str(saved))
    state = tmp_path / "state"
    assert run("root", "--agent", "VitCpu", "-d", str(state), *SETS, "-q") == 0
    assert run("run", "--agent", "VitCpu", "--task", "hfflowers", "--data", f"hf:{saved}",
               "--cycles", "1", "-d", str(state), *SETS, "-q") == 0  # fmt: skip
    capsys.readouterr()
    assert run("leaderboard", "-d", str(state), "--format", "json") == 0
    (row,) = [r for r in read_json_output(capsys) if r["agent_id"] == "VitCpu~hfflowers"]
    assert row["source"] == f"hf:{saved.resolve()}"
    export = tmp_path / "export"
    assert run("export", "-d", str(state), "--task", "hfflowers", "--out", str(export)) == 0
    config = json.loads((export / "config.json").read_text())
    assert config["class_names"] == list(CLASSES)
    assert config["preprocessing"]["storage_size"] == [9, 11]
    assert run("test", "-d", str(state)) == 0


MP_SETS = [
    arg
    for item in TINY_OVERRIDES
    if "num_layers" not in item and "ds_image_size" not in item
    for arg in ("--set", item)
]


def test_multipath_path_exports_with_its_subpaths(tmp_path, capsys):
    data = write_flowers(tmp_path / "flowers", train_per_class=16, test_per_class=6)
    state = str(tmp_path / "state")
    # The random-init root: the path this test's seeds evolve exports encoder blocks (the
    # evolution, and so which subpaths the multipath agent picks, depends on the root).
    assert run("root", "--agent", "VitCpu", "-d", state, "--root", "random_init", *SETS,
               "-q") == 0  # fmt: skip
    assert run("run", "--agent", "VitCpu", "--task", "flowers", "--data", f"folder:{data}",
               "--cycles", "1", "-d", state, *SETS, "-q") == 0  # fmt: skip
    assert run("run", "--agent", "VitCpu", "--task", "synth/color", "--cycles", "1",
               "-d", state, *SETS, "-q") == 0  # fmt: skip
    # The multipath agent finds the task's data in the singlepath agent's state: no --data.
    assert run("run", "--agent", "MultiVitCpu", "--task", "flowers", "--cycles", "1",
               "-d", state, *MP_SETS, "-q") == 0  # fmt: skip
    store = SystemStore(state)
    manifest = store.read_manifest(store.latest_state("MultiVitCpu~flowers"))
    assert manifest["config"]["data"] == f"folder:{data.resolve()}"

    export = tmp_path / "export"
    assert run("export", "-d", state, "--task", "flowers", "--agent", "MultiVitCpu",
               "--out", str(export)) == 0  # fmt: skip
    config = json.loads((export / "config.json").read_text())
    tree = config["model"]
    assert tree["type"] == "multipath" and sorted(tree["paths"]) == ["path_0", "path_1"]
    assert tree["paths"]["path_0"]["arch"]["num_classes"] == 3
    assert tree["paths"]["path_1"]["arch"]["num_classes"] == 0  # another task's, headless
    names = set(config["tensors"])
    assert {"multipath_router.dense.weight", "head_adapter_path_1.weight"} <= names
    assert any(n.startswith("path_1.encoderblock_") for n in names)
    assert not any(n.startswith("path_1.head.") for n in names)

    # Logits equal the multipath agent's own model of the path, bit for bit.
    model, preprocess = load_exported(export)
    agent_config = resolve_config("MultiVitCpu", (), store, "flowers")
    agent = make_agent(agent_config, "flowers", store, progress=False, echo=lambda _: None)
    population, *_ = agent.load_population(announce=False)
    best = population.get_best_path()
    assert config["provenance"]["full_id"] == best.full_id
    generator = torch.Generator().manual_seed(0)
    sizes = best.hparams["ds_image_size"]
    images = {int(s): torch.rand(4, 3, int(s), int(s), generator=generator) for s in sizes}
    with torch.no_grad():
        expected = agent.build_model(best, torch.device("cpu"), train=False).model(images)
        assert torch.equal(model(images), expected)
    assert isinstance(preprocess([next((data / "test" / "rose").iterdir())]), dict)

    test_files = {c: sorted((data / "test" / c).iterdir()) for c in CLASSES}
    capsys.readouterr()
    accuracy = predicted_accuracy(capsys, export, test_files)
    assert accuracy == config["metrics"]["test_quality"]
    assert run("test", "-d", state, "--task", "flowers") == 0
    table = capsys.readouterr().out
    assert "MultiVitCpu~flowers:" in table and "2/2 paths reproduce" in table


def test_corrupt_data_stops_a_run_with_a_clear_error_and_loses_nothing(tmp_path, capsys):
    data = write_flowers(tmp_path / "flowers", train_per_class=12, test_per_class=4)
    state = tmp_path / "state"
    assert run("root", "--agent", "VitCpu", "-d", str(state), *SETS, "-q") == 0
    assert run("run", "--agent", "VitCpu", "--task", "petals", "--data", f"folder:{data}",
               "--cycles", "1", "-d", str(state), *SETS, "-q") == 0  # fmt: skip
    before = state_snapshot(state)
    victim = sorted((data / "train" / "rose").iterdir())[2]
    victim.write_bytes(victim.read_bytes()[:50])  # truncated
    registry._SOURCE_CACHE.clear()  # as a new process would, read the files again
    registry._TASK_CACHE.clear()
    capsys.readouterr()
    assert run("run", "--agent", "VitCpu", "--task", "petals", "--cycles", "2",
               "-d", str(state), "-q") == 2  # fmt: skip
    err = capsys.readouterr().err
    # Every file is checked before any work (issue 25): the run is refused naming the file,
    # and nothing in the state dir changed.
    assert "1 of 48 image files cannot be read" in err and f"{victim}: " in err
    assert state_snapshot(state) == before

    # An .npz whose labels exceed its class count, and one with more images than labels.
    for name, arrays, message in (
        ("range", {"num_classes": np.array(2), "y": np.arange(40) % 3}, "has label 2"),
        ("lengths", {"num_classes": np.array(3), "y": np.arange(39) % 3}, "40 images but 39"),
    ):
        npz = tmp_path / f"{name}.npz"
        np.savez(npz, x=np.zeros((40, 8, 8), np.uint8), **arrays)
        assert run("run", "--agent", "VitCpu", "--task", name, "--data", f"npz:{npz}",
                   "--cycles", "1", "-d", str(state), "-q") == 2  # fmt: skip
        assert message in capsys.readouterr().err
        assert not (state / f"VitCpu~{name}").exists()  # refused before its lock: no folder
    assert state_snapshot(state) == before
