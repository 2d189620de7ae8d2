"""`munet benchmark --root FILE`: every method starts from a candidate root file."""

import json

import pytest
import torch
from safetensors.torch import load_file, save_file

from munet.benchmark import make_settings, run_benchmark
from munet.benchmark.cells import claim_out
from munet.benchmark.plan import BenchmarkError, root_size_note
from munet.config import apply_overrides, get_preset
from munet.pretrain import builtin_root
from munet.pretrain.loop import PretrainSpec, pretrain


@pytest.fixture
def candidate_root(tmp_path):
    """A 1-block VitCpu root pretrained for 2 steps on 8 px fractals (with its card)."""
    spec = PretrainSpec(preset="VitCpu", model="mu/4", num_layers=1, image_size=8,
                        num_classes=4, batch_size=4)  # fmt: skip
    return pretrain(spec, tmp_path / "pt", steps=2, progress=False, eval_examples=8).root_file


def _stored_root(out):
    """The baselines' root store's tensors, by munet component name."""
    stored = {}
    for file in (out / "state" / "root").rglob("components-*.safetensors"):
        for key, tensor in load_file(file).items():
            stored[key.split(":")[0] + "." + key.rsplit("/", 1)[1]] = tensor
    return stored


def test_every_method_starts_from_the_root_file(tmp_path, tiny_overrides, candidate_root):
    settings = make_settings(methods=["linear"], tasks=["digits"], seeds=[0], steps=8,
                             overrides=tiny_overrides, root=str(candidate_root),
                             preset="VitCpu")  # fmt: skip
    assert settings.root_kind == "checkpoint" and len(settings.root_sha256) == 64
    out = tmp_path / "out"
    assert run_benchmark(settings, out, echo=lambda _: None).ran == 1
    candidate, stored = load_file(str(candidate_root)), _stored_root(out)
    assert "encoderblock_0.mlp.fc1.weight" in stored and set(stored) <= set(candidate)
    assert all(torch.equal(stored[k], candidate[k]) for k in stored)


def test_a_changed_root_file_is_another_configuration(tmp_path, candidate_root):
    out = tmp_path / "out"
    claim_out(out, make_settings(tasks=["digits"], seeds=[0], root=str(candidate_root)))
    weights = load_file(str(candidate_root))  # Retrained in place, say.
    weights["encoderblock_0.mlp.fc1.weight"] += 1
    save_file(weights, str(candidate_root))
    with pytest.raises(BenchmarkError, match="another configuration \\(root_sha256 '"):
        claim_out(out, make_settings(tasks=["digits"], seeds=[0], root=str(candidate_root)))


def test_a_root_of_another_image_size_gets_a_note_naming_the_override(candidate_root):
    settings = make_settings(tasks=["digits"], seeds=[0], root=str(candidate_root))
    note = root_size_note(settings, get_preset("VitCpu"))  # The agents read 24 px.
    assert note.startswith("note: the root was pretrained at 8 px")
    assert "--set hparams_defaults.ds_image_size=8" in note
    at_8px = apply_overrides(get_preset("VitCpu"), ["ds_image_size=8"])
    assert root_size_note(settings, at_8px) is None
    assert root_size_note(make_settings(tasks=["digits"], seeds=[0]), at_8px) is None
    # A shipped root's card is PRESET.json beside it.
    shipped = make_settings(tasks=["digits"], seeds=[0], root=builtin_root("VitCpu").file)
    assert root_size_note(shipped, at_8px).startswith("note: the root was pretrained at 24 px")
    # The built-in root's settings say so, and a folder of it reads as before.
    assert json.loads(json.dumps(make_settings().to_dict()))["root"] == "pretrained"
