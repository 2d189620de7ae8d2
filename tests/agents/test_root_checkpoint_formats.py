"""`munet root --root checkpoint --set checkpoint_path=PATH` with the checkpoints users bring
from other libraries: a Hugging Face save_pretrained folder and a torch.save'd state dict."""

import torch
from transformers import ViTConfig, ViTModel

from munet.cli import main
from munet.models import resize_posembed
from munet.system import SystemStore

from .conftest import TINY_OVERRIDES

SETS = [arg for item in TINY_OVERRIDES for arg in ("--set", item)]


def mu4_vit_model():
    """A transformers ViTModel of munet's mu/4 size (the VitCpu preset's) at 16 px."""
    config = ViTConfig(
        hidden_size=64,
        num_hidden_layers=4,
        num_attention_heads=2,
        intermediate_size=256,
        image_size=16,
        patch_size=4,
        hidden_act="gelu_pytorch_tanh",
        layer_norm_eps=1e-6,
    )
    return ViTModel(config).eval()


def root_tensors(state):
    loaded = SystemStore(str(state)).load("VitCpu~root_model~checkpoint", ["VitCpu"])
    root = loaded.population.own_paths[0]
    return {component.name: component.tensors for component in root.components}


def check_root_is_the_models(tensors, model):
    # TINY_OVERRIDES: 1 block, 8 px images (a 2x2 grid), headless.
    assert sorted(tensors) == [
        "cls",
        "embedding",
        "encoder_norm",
        "encoderblock_0",
        "posembed_input",
    ]
    embeddings = model.embeddings
    assert torch.equal(
        tensors["embedding"]["weight"], embeddings.patch_embeddings.projection.weight
    )
    expected_posembed = resize_posembed(embeddings.position_embeddings.detach(), 2)
    assert torch.equal(tensors["posembed_input"]["pos_embedding"], expected_posembed)
    state = model.state_dict()
    qkv = torch.cat([state[f"layers.0.attention.{part}_proj.weight"] for part in "qkv"])
    assert torch.equal(tensors["encoderblock_0"]["attn.qkv.weight"], qkv)


def test_root_from_a_hugging_face_folder(tmp_path, capsys):
    model = mu4_vit_model()
    model.save_pretrained(tmp_path / "hf-vit")
    state = tmp_path / "state"
    args = ["root", "--agent", "VitCpu", "-d", str(state), "--root", "checkpoint"]
    code = main([*args, "--set", f"checkpoint_path={tmp_path / 'hf-vit'}", *SETS, "-q"])
    assert code == 0
    assert "VitCpu~root_model~checkpoint:0" in capsys.readouterr().out
    check_root_is_the_models(root_tensors(state), model)


def test_root_from_a_torch_saved_state_dict(tmp_path):
    model = mu4_vit_model()
    torch.save(model.state_dict(), tmp_path / "vit.pth")
    state = tmp_path / "state"
    args = ["root", "--agent", "VitCpu", "-d", str(state), "--root", "checkpoint"]
    assert main([*args, "--set", f"checkpoint_path={tmp_path / 'vit.pth'}", *SETS, "-q"]) == 0
    check_root_is_the_models(root_tensors(state), model)


def test_a_folder_that_is_no_checkpoint_is_bad_input(tmp_path, capsys):
    (tmp_path / "photos").mkdir()
    args = ["root", "--agent", "VitCpu", "-d", str(tmp_path / "state"), "--root", "checkpoint"]
    assert main([*args, "--set", f"checkpoint_path={tmp_path / 'photos'}", *SETS, "-q"]) == 2
    assert "save_pretrained folder with config.json" in capsys.readouterr().err
