import pytest
import torch

from munet.agents import SinglepathAgent, create_root_model
from munet.models import VitArch, init_components, resize_posembed, save_npz
from munet.system import SystemStore


def write_augreg_like_checkpoint(path, image_size=16):
    """A Google-layout .npz of the mu/4 size (4 blocks) at 16 px, with a 3-class head."""
    arch = VitArch.from_size("mu/4", num_classes=3)
    components = init_components(arch, image_size, torch.Generator().manual_seed(5))
    save_npz(path, components, arch)
    return components


def test_checkpoint_root_loads_the_file_headless(tmp_path, tiny_config):
    file = tmp_path / "mu4.npz"
    source = write_augreg_like_checkpoint(file)
    tiny_config.checkpoint_path = str(file)
    tiny_config.hparams_defaults["ds_image_size"] = 16
    root = create_root_model(tiny_config, tmp_path / "state", "checkpoint")
    assert root.agent_id == "VitCpu~root_model~checkpoint"
    names = [c.name for c in root.components]
    assert names == ["embedding", "cls", "posembed_input", "encoderblock_0", "encoder_norm"]
    block = root.component("encoderblock_0").tensors
    assert torch.equal(block["attn.qkv.weight"], source["encoderblock_0"]["attn.qkv.weight"])
    assert all(c.train_locks == {root.agent_id} for c in root.components)
    # Creating it again is a no-op returning the same path.
    again = create_root_model(tiny_config, tmp_path / "state", "checkpoint")
    assert again.full_id == root.full_id


def test_new_image_size_takes_the_checkpoint_posembed_resized(tmp_path, tiny_config):
    file = tmp_path / "mu4.npz"
    source = write_augreg_like_checkpoint(file)
    tiny_config.checkpoint_path = str(file)
    tiny_config.hparams_defaults["ds_image_size"] = 16
    state = tmp_path / "state"
    create_root_model(tiny_config, state, "checkpoint")
    # Force 8 px for this agent's first generation: the root's 16 px embedding does not fit.
    tiny_config.hparams_defaults["ds_image_size"] = 8
    agent = SinglepathAgent(tiny_config, "digits", state, progress=False, echo=lambda _: None)
    report = agent.run(1)
    first = report.generations[0].paths[0]
    posembed = first.component("posembed_input")
    assert posembed.agent_id == "VitCpu~digits"  # A new component of the agent.
    assert "posembed: posembed_input" in first.metrics["reuse"]
    expected = resize_posembed(source["posembed_input"]["pos_embedding"], 2)
    store = SystemStore(str(state))
    assert store.latest_state("VitCpu~digits").name == "state_1_0"
    # Before training it was exactly the checkpoint's embedding resized to a 2x2 grid.
    cached = agent._posembed_cache[(str(file), 8)]["pos_embedding"]
    assert cached.shape == expected.shape
    assert torch.allclose(cached, expected)


def test_checkpoint_root_needs_an_existing_file(tmp_path, tiny_config):
    with pytest.raises(ValueError, match="needs a local checkpoint file"):
        create_root_model(tiny_config, tmp_path, "checkpoint")
    tiny_config.checkpoint_path = str(tmp_path / "missing.npz")
    with pytest.raises(ValueError, match="does not exist"):
        create_root_model(tiny_config, tmp_path, "checkpoint")
    with pytest.raises(ValueError, match="unknown root model kind 'imagenet'"):
        create_root_model(tiny_config, tmp_path, "imagenet")


def test_checkpoint_root_of_a_registered_preset_says_how_to_fetch_it(tmp_path, monkeypatch):
    from munet.config import get_preset

    monkeypatch.setenv("MUNET_CHECKPOINT_DIR", str(tmp_path / "ckpts"))
    with pytest.raises(ValueError, match=r"munet checkpoint fetch VitT3.*ckpts/Ti_16-i21k"):
        create_root_model(get_preset("VitT3"), tmp_path / "state", "checkpoint")
