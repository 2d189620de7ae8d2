import json
import shutil

import pytest
import torch
from safetensors.torch import load_file

import munet.pretrain.roots as roots_module
from munet.agents.root import create_root_model, default_root_kind, root_agent_id
from munet.config import apply_overrides, get_preset
from munet.pretrain import builtin_roots, verify_root
from munet.pretrain.loop import pretrain
from munet.pretrain.roots import sha256_file
from munet.system import SystemStore

TINY = ["num_layers=1", "hparams_mutation_ranges.num_layers=[0, 1]", "ds_image_size=8",
        "hparams_mutation_ranges.ds_image_size=[8]"]  # fmt: skip


def root_tensors(state_dir, config, kind):
    loaded = SystemStore(str(state_dir)).load(root_agent_id(config, kind), [])
    return {c.name: c.tensors for c in loaded.population.own_paths[0].components}


def test_shipped_roots_match_their_cards():
    shipped = builtin_roots()
    assert {"VitCpuHybrid", "VitCpu", "VitT3"} <= set(shipped)
    for name, root in shipped.items():
        verify_root(root)  # sha256 of the file == the card's
        card = root.card()
        assert card["preset"] == name and card["sha256"] == sha256_file(root.file)
        assert card["steps"] > 0 and card["command"].startswith("munet pretrain --agent " + name)
        assert root.file.stat().st_size < 4 * 1024 * 1024
        # The measured figures name the root they measured by content, and the three
        # fine-tuning budgets are on validation (the test split holds what was read once).
        for split in ("validation", "test"):
            assert card[split]["new_sha256"] == card["sha256"]
        budgets = {b for figures in card["validation"]["results"].values()
                   for b in figures["finetune"]}  # fmt: skip
        assert budgets == {"128", "384", "1152"}
    assert shipped["VitT3"].card()["dtype"] == "float16"


@pytest.fixture
def tiny_root(tmp_path, tiny_spec):
    """A tiny pretrained root, shipped as VitCpu's in a temporary roots dir."""
    result = pretrain(tiny_spec, tmp_path / "work", steps=2, progress=False, eval_examples=8)
    directory = tmp_path / "roots"
    directory.mkdir()
    shutil.copy(result.root_file, directory / "VitCpu.safetensors")
    shutil.copy(result.card_file, directory / "VitCpu.json")
    return directory


def test_a_root_model_from_a_tiny_pretrained_checkpoint(tmp_path, tiny_root):
    file = tiny_root / "VitCpu.safetensors"
    config = apply_overrides(get_preset("VitCpu"), [*TINY, f"checkpoint_path={file}"])
    create_root_model(config, tmp_path / "state", "checkpoint")
    tensors = root_tensors(tmp_path / "state", config, "checkpoint")
    saved = load_file(str(file))
    assert torch.equal(tensors["embedding"]["weight"], saved["embedding.weight"])
    assert torch.equal(
        tensors["encoderblock_0"]["mlp.fc1.weight"], saved["encoderblock_0.mlp.fc1.weight"]
    )


def test_the_pretrained_kind_loads_the_builtin_root_and_checks_its_hash(
    tmp_path, tiny_root, monkeypatch
):
    monkeypatch.setattr(roots_module, "ROOTS_DIR", tiny_root)
    config = apply_overrides(get_preset("VitCpu"), TINY)
    assert default_root_kind(config) == "pretrained"
    create_root_model(config, tmp_path / "state", "pretrained")
    tensors = root_tensors(tmp_path / "state", config, "pretrained")
    saved = load_file(str(tiny_root / "VitCpu.safetensors"))
    assert torch.equal(tensors["embedding"]["weight"], saved["embedding.weight"])
    # A model the root does not fit (more blocks than it has) falls back to random init.
    assert default_root_kind(apply_overrides(get_preset("VitCpu"), ["num_layers=2"])) == (
        "random_init"
    )
    # A damaged file is refused, naming both hashes.
    card = json.loads((tiny_root / "VitCpu.json").read_text())
    (tiny_root / "VitCpu.safetensors").write_bytes(b"x" * 100)
    with pytest.raises(ValueError, match=card["sha256"]):
        create_root_model(config, tmp_path / "other", "pretrained")


def test_a_preset_without_a_builtin_root_names_the_ones_with_one(tmp_path):
    with pytest.raises(ValueError, match="no built-in pretrained root.*VitCpu"):
        create_root_model(get_preset("VitB"), tmp_path, "pretrained")
    assert default_root_kind(get_preset("VitB")) == "random_init"
    assert default_root_kind(get_preset("VitCpu")) == "pretrained"
    # VitT3's root (GPU-pretrained, ahead of random init on validation) is its default too.
    assert default_root_kind(get_preset("VitT3")) == "pretrained"


def test_a_card_marked_not_default_leaves_random_init_the_default(tiny_root, monkeypatch):
    monkeypatch.setattr(roots_module, "ROOTS_DIR", tiny_root)
    config = apply_overrides(get_preset("VitCpu"), TINY)
    assert default_root_kind(config) == "pretrained"
    card = json.loads((tiny_root / "VitCpu.json").read_text())
    (tiny_root / "VitCpu.json").write_text(json.dumps({**card, "default_root": False}))
    assert default_root_kind(config) == "random_init"


def test_the_shipped_vitcpu_root_becomes_the_default_root_model(tmp_path):
    config = get_preset("VitCpu")
    create_root_model(config, tmp_path, default_root_kind(config))
    tensors = root_tensors(tmp_path, config, "pretrained")
    saved = load_file(str(builtin_roots()["VitCpu"].file))
    assert torch.equal(tensors["encoderblock_3"]["attn.qkv.weight"],
                       saved["encoderblock_3.attn.qkv.weight"].float())  # fmt: skip
