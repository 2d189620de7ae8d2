"""Tiny CPU runs of the root-selection scripts of experiments/roots: the recipe choice, the
root comparison and its stored figures, paired readings, cards side by side, gpu_roots.sh."""

import json
import os
import re
import subprocess
import sys
import tarfile

import pytest
import torch

from experiments.tests.scripts import ROOTS, load_script
from munet.pretrain.loop import pretrain

root_eval = load_script(ROOTS, "root_eval")


def test_root_eval_reads_validation_or_test_and_scores_in_range():
    load_task_data, evaluation_tasks = root_eval.load_task_data, root_eval.evaluation_tasks
    linear_probe, fine_tune = root_eval.linear_probe, root_eval.fine_tune
    data = load_task_data("synth/color", 8, "validation", max_train=48, max_eval=24)
    assert data.train_images.shape == (48, 3, 8, 8) and data.eval_images.shape[0] == 24
    assert data.split == "validation" and data.num_classes == 6
    test = load_task_data("synth/color", 8, "test", max_train=48, max_eval=24)
    assert not torch.equal(test.eval_images, data.eval_images)  # another split
    probe = linear_probe(None, data, "mu/4", 1, iterations=5)
    tuned = fine_tune(None, data, "mu/4", 1, 2, batch_size=8)
    assert 0 <= probe <= 1 and 0 <= tuned <= 1
    with pytest.raises(ValueError, match="'train'"):
        load_task_data("synth/color", 8, "train")
    # digits splits 1k/digits' images: left out, so no choice reads the suite's test images.
    tasks = evaluation_tasks()
    assert tasks[0] == "synth/shape" and "digits" not in tasks and "1k/digits" in tasks
    assert evaluation_tasks(include_suite=False)[0] == "digits"
    with pytest.raises(SystemExit, match="digits and 1k/digits split the same images"):
        root_eval.check_disjoint_tasks(["digits", "synth/color", "1k/digits"])
    root_eval.check_disjoint_tasks(["synth/color", "1k/digits"])


def test_recipe_choice_scores_candidates_on_validation_and_names_one(
    tmp_path, capsys, restore_threads, monkeypatch
):
    # Test splits are never read by the choice.
    from munet.tasks.sources.base import Source

    reads = []
    for cls in Source.__subclasses__() + [Source]:
        original = cls.__dict__.get("images")
        if original is None:
            continue

        def spy(self, split, indices, _original=original):
            reads.append(split)
            return _original(self, split, indices)

        monkeypatch.setattr(cls, "images", spy)
    result = load_script(ROOTS, "root_recipe_choice").main(["--quick", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert re.search(r"^chosen: (fractal:4:8|fractal:6:8:2) ", out, re.M)
    assert "munet pretrain --agent VitCpu --recipe" in out
    assert re.search(r"^ratio: \d+\.\d{3} \(chosen / random init score, validation\)$", out, re.M)
    assert set(result["rows"]) == {"fractal:4:8", "fractal:6:8:2", "random_init:8"}
    assert result["chosen"] in result["rows"] and "random_init" not in result["chosen"]
    saved = json.loads((tmp_path / "choice.json").read_text())
    assert saved["chosen"] == result["chosen"]
    assert "test" not in reads and "validation" in reads


def test_a_recipe_candidate_may_name_instances_per_image():
    parse = load_script(ROOTS, "root_recipe_choice").parse_candidate
    assert parse("fractal:100:24") == ("fractal", 100, 24, 1)
    assert parse("fractal:100:24:3") == ("fractal", 100, 24, 3)
    with pytest.raises(SystemExit, match="RECIPE:CLASSES:SIZE"):
        parse("fractal:100:24:x")


def test_root_compare_prints_the_probe_delta_and_stores_it_in_the_card(
    tmp_path, capsys, tiny_spec, restore_threads
):
    result = pretrain(tiny_spec, tmp_path / "new", steps=2, progress=False, eval_examples=8)
    load_script(ROOTS, "root_compare").main(
        ["--old", "random_init", "--new", str(result.root_file), "--quick",
         "--card", str(result.card_file), "--json", str(tmp_path / "cmp.json")]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert re.search(r"^probe: new - old = [+-][0-9.]+ ", out, re.M)
    assert len(re.findall(r"^ratio: [0-9.]+ \((2|4) steps fine-tune", out, re.M)) == 2
    card = json.loads(result.card_file.read_text())
    assert set(card["validation"]["results"]["synth/color"]) == {"probe", "finetune"}
    # The comparison names its roots by content, not only by path.
    comparison = json.loads((tmp_path / "cmp.json").read_text())
    assert comparison["old_sha256"] is None and comparison["new_sha256"] == card["sha256"]
    assert card["test"] == {}
    # The new root was scored at the size it was pretrained at (its card's).
    assert "8 px" in out


def test_root_compare_merge_adds_a_budget_to_the_stored_comparison_of_the_same_roots(
    tmp_path, capsys, tiny_spec, restore_threads
):
    result = pretrain(tiny_spec, tmp_path / "new", steps=2, progress=False, eval_examples=8)
    compare = load_script(ROOTS, "root_compare").main
    same = ["--old", "random_init", "--new", str(result.root_file), "--tasks", "synth/color",
            "--max-train", "32", "--max-eval", "32", "--card", str(result.card_file)]  # fmt: skip
    first = compare([*same, "--steps", "2"])
    compare([*same, "--steps", "3", "--merge"])
    assert "added to 'validation'" in capsys.readouterr().out
    stored = json.loads(result.card_file.read_text())["validation"]
    for which in ("results", "old_results"):
        figures = stored[which]["synth/color"]
        assert set(figures["finetune"]) == {"2", "3"}
        # The probe is the first run's; its budget's figure is kept as it was.
        assert figures["probe"] == first[which]["synth/color"]["probe"]
        assert figures["finetune"]["2"] == first[which]["synth/color"]["finetune"]["2"]
    assert stored["method"].count("benchmarks/root_compare.py") == 2

    # Another example count, another root or a budget stored already: refused before any run,
    # naming it, and the card is left as it was.
    before = result.card_file.read_text()
    refusals = {
        "max_eval": [*same[:-4], "--max-eval", "16", *same[-2:], "--steps", "5"],
        "the old root": [*same[2:], "--old", str(result.root_file), "--steps", "5"],
        r"--steps \[3\] already stored": [*same, "--steps", "3"],
    }
    for name, argv in refusals.items():
        with pytest.raises(SystemExit, match=name):
            compare([*argv, "--merge"])
    assert result.card_file.read_text() == before
    bad_calls = {
        "--merge adds to the comparison stored in a card": [],
        "the test splits are read once": ["--card", str(result.card_file), "--split", "test"],
    }
    for message, extra in bad_calls.items():
        with pytest.raises(SystemExit) as exit_info:
            compare(["--old", "random_init", "--new", str(result.root_file), "--merge", *extra])
        assert exit_info.value.code == 2
        assert message in capsys.readouterr().err


def test_a_comparison_without_digests_cannot_be_merged_into():
    merge_comparisons = load_script(ROOTS, "comparison").merge_comparisons
    run = {"old": "a.safetensors", "new": "b.safetensors", "old_sha256": "1", "new_sha256": "2",
           "max_train": 8, "max_eval": 8, "tasks": ["t"], "method": "m", "wall_s": 1.0,
           "results": {"t": {"probe": 0.5, "finetune": {"4": 0.5}}},
           "old_results": {"t": {"probe": 0.4, "finetune": {"4": 0.4}}}}  # fmt: skip
    older = {key: value for key, value in run.items() if key != "old_sha256"}
    with pytest.raises(ValueError, match="the old root: the stored comparison measured None"):
        merge_comparisons(older, run)
    with pytest.raises(ValueError, match="tasks"):
        merge_comparisons(run, {**run, "tasks": ["t", "u"]})
    with pytest.raises(ValueError, match=r"budget\(s\) \['4'\] on t: already stored"):
        merge_comparisons(run, run)


@pytest.mark.slow
def test_gpu_roots_dry_run_leaves_candidate_roots_cards_and_a_log(tmp_path):
    env = {**os.environ, "DRY": "1", "OUT": str(tmp_path), "PYTHON": sys.executable,
           "OMP_NUM_THREADS": "1"}  # fmt: skip
    subprocess.run(["bash", str(ROOTS / "gpu_roots.sh")], env=env, check=True,
                   capture_output=True, timeout=400)  # fmt: skip
    log = (tmp_path / "log.txt").read_text()
    # The VitCpu candidate names up to 2 instances per image, seed 1 and a 2 x 2 thumbnail
    # (PRESET:...:BATCH:INSTANCES:SEED:THUMBNAIL); VitT3's takes the defaults.
    candidates = {"VitCpu": "VitCpu-fractal-6-8px-b8-i2-s1-t2", "VitT3": "VitT3-fractal-6-32px-b4"}
    for name in candidates.values():
        assert f"{name}: exit 0; pretrained" in log
    with tarfile.open(tmp_path / "roots.tar.gz") as tar:
        names = set(tar.getnames())
        for agent, name in candidates.items():
            assert f"./{name}/root.safetensors" in names
            card = json.loads(tar.extractfile(f"./{name}/card.json").read())
            assert card["preset"] == agent and card["steps"] > 0 and card["device"] == "cpu"
            assert card["command"].startswith(f"munet pretrain --agent {agent}")
            assert card["recipe"]["instances"] == (2 if agent == "VitCpu" else 1)
            assert card["seed"] == (1 if agent == "VitCpu" else 0)
            assert card["recipe"]["thumbnail"] == (2 if agent == "VitCpu" else 0)
        # The resumable states stay behind: only roots, cards and logs come back.
        assert not any("state-" in n for n in names)
    assert card["dtype"] == "float16"  # VitT3 ships in float16
    assert "munet pretrain --agent VitT3" in (tmp_path / "commands.txt").read_text()


def test_gpu_roots_refuses_a_python_without_torch_before_any_run(tmp_path):
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\nexit 1\n")  # an interpreter where `import torch` fails
    fake.chmod(0o755)
    env = {**os.environ, "DRY": "1", "OUT": str(tmp_path / "out"), "PYTHON": str(fake)}
    done = subprocess.run(["bash", str(ROOTS / "gpu_roots.sh")], env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 2
    assert f"PYTHON={fake} cannot import torch" in done.stdout
    assert not any((tmp_path / "out" / "roots").iterdir())  # no run started


def write_comparison(path, old, new, old_sha256="aaaa", method="m"):
    """A root_compare.py --json file: per-task (probe, fine-tune at 128 steps) for both roots."""
    figures = lambda table: {  # noqa: E731
        task: {"probe": probe, "finetune": {"128": tuned}} for task, (probe, tuned) in table.items()
    }
    contents = {"method": method, "old": "roots/VitCpu.safetensors", "results": figures(new),
                "old_results": figures(old)}  # fmt: skip
    if old_sha256 is not None:
        contents["old_sha256"] = old_sha256
    path.write_text(json.dumps(contents))
    return str(path)


def test_root_pairs_reads_paired_differences_across_comparison_files(tmp_path, capsys):
    pairs = load_script(ROOTS, "root_pairs").main
    shipped = {"a": (0.5, 0.6), "b": (0.7, 0.8)}
    # Seed 0: the option's root against the shipped root (the old side of the same file).
    on0 = write_comparison(tmp_path / "on0.json", shipped, {"a": (0.6, 0.7), "b": (0.7, 0.9)})
    # Seed 1: the plain root and the option's root, each compared with the shipped root.
    off1 = write_comparison(tmp_path / "off1.json", shipped, {"a": (0.4, 0.5), "b": (0.6, 0.7)})
    on1 = write_comparison(tmp_path / "on1.json", shipped, {"a": (0.5, 0.5), "b": (0.6, 0.8)})
    figures = pairs(["--pair", f"{on0}:old", on0, "--pair", off1, on1])
    out = capsys.readouterr().out
    assert figures["pairs"][0] == pytest.approx({"probe": 0.05, "ft128": 1.6 / 1.4})
    assert figures["pairs"][1] == pytest.approx({"probe": 0.05, "ft128": 1.3 / 1.2})
    assert figures["shown"] and "shown: candidate ahead of base in every column" in out
    # Level on one column at one pair is not ahead.
    level = write_comparison(tmp_path / "level.json", shipped, {"a": (0.5, 0.5), "b": (0.6, 0.7)})
    assert not pairs(["--pair", f"{on0}:old", on0, "--pair", off1, level])["shown"]
    assert "not shown: behind or level at pair 2 ft128" in capsys.readouterr().out
    # Files that measured the shared old root (same sha256) differently cannot be read together.
    remeasured = {"a": (0.5, 0.6), "b": (0.7, 0.7)}
    other = write_comparison(tmp_path / "other.json", remeasured, shipped)
    with pytest.raises(SystemExit, match="root aaaa but measured it differently"):
        pairs(["--pair", off1, other])
    # The same path holding the next shipped root (another sha256) is another old root: fine.
    later = write_comparison(tmp_path / "later.json", remeasured, shipped, old_sha256="bbbb")
    assert pairs(["--pair", off1, later])["pairs"][0]["probe"] == pytest.approx(0.1)
    # Without a recorded digest it cannot tell, and says so.
    legacy = write_comparison(tmp_path / "legacy.json", remeasured, shipped, old_sha256=None)
    pairs(["--pair", off1, legacy])
    assert "do not both record its sha256" in capsys.readouterr().out
    method = write_comparison(tmp_path / "method.json", shipped, shipped, method="test split")
    with pytest.raises(SystemExit, match="were measured differently"):
        pairs(["--pair", off1, method])
    with pytest.raises(SystemExit, match="no comparison file"):
        pairs(["--pair", off1, str(tmp_path / "missing.json")])


def write_benchmark(directory, quality, root="old.safetensors", steps=1024):
    """A `munet benchmark --out` folder: settings and one cell file per (method, task, seed);
    `quality(method, task, seed)` gives each cell's validation quality (no test figure)."""
    settings = {"methods": ["system", "finetune"], "tasks": ["1k/a", "1k/b"], "seeds": [0, 1],
                "steps": steps, "root": root, "root_sha256": root * 2}  # fmt: skip
    directory.mkdir(parents=True)
    (directory / "settings.json").write_text(json.dumps(settings))
    for method in settings["methods"]:
        for task in settings["tasks"]:
            cell_dir = directory / "cells" / method / task.replace("/", "~")
            cell_dir.mkdir(parents=True)
            for seed in settings["seeds"]:
                cell = {"method": method, "task": task, "seed": seed,
                        "quality": quality(method, task, seed)}  # fmt: skip
                (cell_dir / f"seed_{seed}.json").write_text(json.dumps(cell))


def test_benchmark_pairs_pairs_cells_of_two_roots_on_validation_only(tmp_path, capsys):
    pairs = load_script(ROOTS, "benchmark_pairs").main
    base = {"1k/a": 0.5, "1k/b": 0.8}

    def old(method, task, seed):
        return base[task] + 0.01 * seed - (0.1 if method == "system" else 0.0)

    def new(method, task, seed):  # The system is 0.02 better in every cell but one.
        lift = 0.02 if (method, task, seed) != ("system", "1k/b", 1) else -0.01
        return old(method, task, seed) + (lift if method == "system" else 0.0)

    write_benchmark(tmp_path / "old", old)
    write_benchmark(tmp_path / "new", new, root="new.safetensors")
    result = pairs([str(tmp_path / "old"), str(tmp_path / "new")])
    text = capsys.readouterr().out
    assert "system validation quality, new - old: +0.0125" in text
    assert "ahead in 3 of 4 cells" in text
    assert "finetune validation quality, new - old: +0.0000" in text
    system = result["methods"]["system"]
    assert result["ratio"] == pytest.approx(system["new"] / system["old"])
    assert re.findall(r"^ratio: ([0-9.]+)", text, flags=re.M) == [f"{result['ratio']:.3f}"]

    # Another experiment (more steps), not another root: refused, naming the setting.
    write_benchmark(tmp_path / "longer", new, root="new.safetensors", steps=2048)
    with pytest.raises(SystemExit, match="differ in 'steps' \\(1024 vs 2048\\)"):
        pairs([str(tmp_path / "old"), str(tmp_path / "longer")])
    # An unfinished run: its missing cells are named.
    (tmp_path / "new" / "cells" / "system" / "1k~a" / "seed_0.json").unlink()
    with pytest.raises(SystemExit, match="cells in one run only"):
        pairs([str(tmp_path / "old"), str(tmp_path / "new")])


def write_card(path, held_out, probes=None, **recipe):
    """A pretrain card: its recipe (PretrainSpec defaults but ``recipe``), held-out accuracy
    and, given per-task ``probes``, stored validation figures (fine-tuning at 128 = probe +
    0.1; the comparison's old root probes 0.5 on every task)."""
    fields = {"preset": "VitCpu", "model": "mu/4", "num_layers": 4, "image_size": 24,
              "recipe": "fractal", "num_classes": 100, "instances": 1, "seed": 0,
              **recipe}  # fmt: skip
    card = {"recipe": fields, "val_accuracy": held_out, "steps": 16000}
    if probes is not None:
        results = {task: {"probe": p, "finetune": {"128": p + 0.1}} for task, p in probes.items()}
        old = {task: {"probe": 0.5, "finetune": {"128": 0.6}} for task in probes}
        card["validation"] = {"results": results, "old_results": old}
    path.write_text(json.dumps(card))
    return str(path)


def test_root_cards_lines_up_held_out_against_the_stored_validation_means(tmp_path, capsys):
    cards = load_script(ROOTS, "root_cards").main
    high = write_card(tmp_path / "high.json", 0.8, {"a": 0.4, "b": 0.6}, instances=3)
    low = write_card(tmp_path / "low.json", 0.3, {"a": 0.5, "b": 0.7}, seed=1)
    small = write_card(tmp_path / "small.json", 0.5, {"a": 0.1, "b": 0.1}, image_size=16)
    bare = write_card(tmp_path / "bare.json", 0.9)  # no validation figures yet
    rows = cards([high, low, small, bare, "--image-size", "24"])
    out = capsys.readouterr().out
    assert [row["card"] for row in rows] == [low, high]  # by held-out accuracy
    assert rows[1]["probe"] == pytest.approx(0.5)
    assert rows[1]["finetune"] == pytest.approx({"128": 0.6})
    assert rows[0]["recipe"] == "seed=1" and rows[1]["recipe"] == "instances=3"
    assert "2 roots; 1 card(s) without validation figures left out" in out
    assert rows[0]["old_probe"] == pytest.approx(0.5)
    # The highest probe (0.6, low.json) over its comparison's old root (0.5), same run.
    assert f"ratio: 1.200 (the highest probe, {low}," in out
    assert len(cards([high, low, small])) == 3  # every size without --image-size
    capsys.readouterr()
    # Roots that trade tasks: the best on each (a 0.6 from one, b 0.7 from the other).
    trades = write_card(tmp_path / "trades.json", 0.6, {"a": 0.6, "b": 0.2})
    cards([trades, low])
    assert "best per task: mean 0.650 over 2 tasks" in capsys.readouterr().out
    (tmp_path / "other.json").write_text(json.dumps({"results": {}}))
    with pytest.raises(SystemExit, match="other.json.*is not a munet pretrain card"):
        cards([str(tmp_path / "other.json")])
