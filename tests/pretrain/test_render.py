import dataclasses
import multiprocessing

import pytest
import torch
from safetensors.torch import load_file

from munet.pretrain.generators import make_recipe
from munet.pretrain.loop import batch_for_step, pretrain
from munet.pretrain.render import (
    PROCESS_MIN_STEPS,
    RenderError,
    batch_source,
    resolve_render,
)

CPU = torch.device("cpu")


@pytest.mark.parametrize("render", ["thread", "process"])
def test_every_source_gives_the_batches_of_batch_for_step(tiny_spec, render):
    spec = dataclasses.replace(tiny_spec, instances=3, num_classes=9)
    recipe = spec.make_recipe()
    with batch_source(render, spec, recipe, CPU, first_step=5) as batches:
        for step in range(5, 12):  # More steps than the process's ring has slots.
            images, labels = batches.batch(step)
            expected_images, expected_labels = batch_for_step(spec, recipe, step)
            assert torch.equal(images, expected_images) and torch.equal(labels, expected_labels)
        with pytest.raises(ValueError, match="step 20: .* expected step 12"):
            batches.batch(20)
    assert not multiprocessing.active_children()  # The render process is gone.


def test_a_run_rendering_in_a_process_ends_with_the_weights_of_one_rendering_in_a_thread(
    tiny_spec, tmp_path
):
    runs = {
        render: pretrain(
            tiny_spec,
            tmp_path / render,
            steps=6,
            checkpoint_every=3,
            progress=False,
            eval_examples=16,
            render=render,
        )  # fmt: skip
        for render in ("thread", "process")
    }
    assert runs["process"].card["render"] == "process"
    assert runs["thread"].card["render"] == "thread"
    a, b = (load_file(str(runs[r].root_file)) for r in ("thread", "process"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_a_failing_render_process_raises_in_the_training_loop(tiny_spec):
    # The recipe is rebuilt in the render process: an unknown one fails there.
    bad = dataclasses.replace(tiny_spec, recipe="no_such_recipe")
    with batch_source("process", bad, None, CPU, first_step=0) as batches:
        with pytest.raises(RenderError, match="(?s)step 0 failed.*no_such_recipe"):
            batches.batch(0)


def test_a_killed_render_process_is_reported_with_its_exit_code(tiny_spec):
    recipe = make_recipe(tiny_spec.recipe, tiny_spec.num_classes, tiny_spec.seed)
    with batch_source("process", tiny_spec, recipe, CPU, first_step=0) as batches:
        batches.batch(0)
        batches._process.kill()
        batches._process.join()
        with pytest.raises(RenderError, match="died with exit code -9"):
            for step in range(1, 10):  # The batches already in the ring come first.
                batches.batch(step)


def test_auto_renders_in_a_process_on_a_cpu_for_long_sessions_only():
    assert resolve_render("auto", CPU, PROCESS_MIN_STEPS) == "process"
    assert resolve_render("auto", CPU, None) == "process"  # A minutes budget.
    assert resolve_render("auto", CPU, PROCESS_MIN_STEPS - 1) == "thread"
    assert resolve_render("auto", torch.device("cuda"), 10**6) == "thread"
    assert resolve_render("process", CPU, 1) == "process"
    with pytest.raises(ValueError, match="render 'fast': expected one of auto, thread, process"):
        resolve_render("fast", CPU)
    with pytest.raises(ValueError, match="device 'cuda' renders its batches itself"):
        resolve_render("process", torch.device("cuda"))


def test_a_bad_render_value_is_refused_before_the_work_dir_is_made(tiny_spec, tmp_path):
    with pytest.raises(ValueError, match="render 'gpu'"):
        pretrain(tiny_spec, tmp_path / "w", steps=2, progress=False, render="gpu")
    assert not (tmp_path / "w").exists()


def _resolve_in_a_pool_worker(render: str) -> str:
    try:
        return resolve_render(render, CPU, None)
    except ValueError as err:
        return str(err)


def test_a_pool_worker_renders_on_a_thread_since_it_may_not_start_a_process():
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        auto, process = pool.map(_resolve_in_a_pool_worker, ["auto", "process"])
    assert auto == "thread"
    assert "daemonic process" in process
