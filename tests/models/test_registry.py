import pytest
import torch

from munet.cli import main
from munet.models import AssembledVit, VitArch, init_components, registry, save_npz
from munet.models.registry import (
    CheckpointUnavailable,
    checkpoint_spec,
    checkpoint_specs,
    fetch_checkpoint,
    load_registered_checkpoint,
)


def test_registry_holds_the_seed_presets():
    specs = checkpoint_specs()
    assert set(specs) == {"Vit", "VitB", "VitT3", "VitRTi", "VitR26S", "VitR50L"}
    assert specs["VitB"].url == (
        "https://storage.googleapis.com/vit_models/augreg/"
        "B_16-i21k-300ep-lr_0.001-aug_medium1-wd_0.1-do_0.0-sd_0.0.npz"
    )
    assert specs["Vit"].filename.startswith("L_16-i21k-300ep-lr_0.001-aug_medium2-wd_0.03-")
    assert specs["Vit"].filename.endswith("-sd_0.1.npz")
    assert specs["VitT3"].filename.startswith("Ti_16-i21k-300ep-lr_0.001-aug_light1-wd_0.1-")
    t3 = specs["VitT3"].arch()
    assert (t3.width, t3.num_layers, t3.num_heads, t3.num_classes) == (192, 3, 3, 0)
    assert (specs["Vit"].image_size, specs["VitB"].image_size, specs["VitT3"].image_size) == (
        384,
        80,
        32,
    )
    known = "known: Vit, VitB, VitT3, VitRTi"
    with pytest.raises(KeyError, match=f"unknown checkpoint 'VitX'; {known}"):
        checkpoint_spec("VitX")


def test_registry_holds_the_recommended_augreg_hybrids():
    """vit_jax's README: the recommended pre-trained checkpoints of the hybrids."""
    specs = checkpoint_specs()
    assert specs["VitR26S"].url == (
        "https://storage.googleapis.com/vit_models/augreg/"
        "R26_S_32-i21k-300ep-lr_0.001-aug_light1-wd_0.1-do_0.0-sd_0.0.npz"
    )
    assert specs["VitRTi"].filename.startswith("R_Ti_16-i21k-300ep-lr_0.001-aug_none-wd_0.03-")
    assert specs["VitR50L"].filename.endswith("-aug_medium1-wd_0.1-do_0.1-sd_0.1.npz")
    for name, size in (("VitRTi", "R+Ti/16"), ("VitR26S", "R26+S/32"), ("VitR50L", "R50+L/32")):
        arch = specs[name].arch()
        assert arch.is_hybrid and arch == VitArch.from_size(size, num_classes=0)
        assert arch.grid_size(specs[name].image_size) == 7  # stride 32 at 224 px


def _fake_ti16_file(directory):
    """A full-depth Ti/16 checkpoint written under the registered VitT3 file name."""
    arch = VitArch.from_size("Ti/16", num_layers=4, num_classes=0)
    components = init_components(arch, 32, torch.Generator().manual_seed(0))
    path = directory / checkpoint_spec("VitT3").filename
    save_npz(path, components, arch)
    return path, components


def test_fetch_offline_fails_at_once_naming_file_and_place(tmp_path, monkeypatch, capsys):
    # Port 9 on localhost refuses connections: the offline case without touching the network.
    monkeypatch.setattr(registry, "AUGREG_BASE_URL", "http://127.0.0.1:9/")
    filename = checkpoint_spec("VitB").filename
    with pytest.raises(CheckpointUnavailable, match=f"put it at {tmp_path / filename}"):
        fetch_checkpoint("VitB", tmp_path, timeout_s=5)
    assert main(["checkpoint", "fetch", "VitB", "--dest", str(tmp_path)]) == 9
    err = capsys.readouterr().err
    assert filename in err and str(tmp_path) in err
    assert list(tmp_path.iterdir()) == []  # no partial file left


def test_fetch_downloads_checks_and_renames(tmp_path, monkeypatch, capsys):
    source = tmp_path / "mirror"
    source.mkdir()
    _, components = _fake_ti16_file(source)
    monkeypatch.setattr(registry, "AUGREG_BASE_URL", source.as_uri() + "/")
    dest = tmp_path / "dest"
    assert main(["checkpoint", "fetch", "VitT3", "--dest", str(dest)]) == 0
    target = dest / checkpoint_spec("VitT3").filename
    assert capsys.readouterr().out.strip() == str(target)
    assert [p.name for p in dest.iterdir()] == [target.name]
    loaded = load_registered_checkpoint("VitT3", directory=dest)  # capped to 3 layers
    assert sorted(k for k in loaded if k.startswith("encoderblock_")) == [
        "encoderblock_0",
        "encoderblock_1",
        "encoderblock_2",
    ]
    assert torch.equal(
        loaded["encoderblock_2"]["mlp.fc1.weight"], components["encoderblock_2"]["mlp.fc1.weight"]
    )
    AssembledVit(checkpoint_spec("VitT3").arch(), 32, loaded)  # fits the preset's arch


def test_fetch_refuses_a_corrupt_download(tmp_path, monkeypatch):
    source = tmp_path / "mirror"
    source.mkdir()
    (source / checkpoint_spec("VitT3").filename).write_bytes(b"<html>not found</html>")
    monkeypatch.setattr(registry, "AUGREG_BASE_URL", source.as_uri() + "/")
    dest = tmp_path / "dest"
    with pytest.raises(CheckpointUnavailable, match="not a valid checkpoint"):
        fetch_checkpoint("VitT3", dest)
    assert list(dest.iterdir()) == []


def test_list_shows_presence(tmp_path, capsys):
    _fake_ti16_file(tmp_path)
    assert main(["checkpoint", "list", "--dest", str(tmp_path)]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert "present" in lines["VitT3"] and "missing" in lines["VitB"]
    assert checkpoint_spec("Vit").url in lines["Vit"]


def test_unknown_name_and_missing_file(tmp_path, capsys):
    assert main(["checkpoint", "fetch", "VitX", "--dest", str(tmp_path)]) == 2
    assert "known: Vit, VitB, VitT3, VitRTi, VitR26S, VitR50L" in capsys.readouterr().err
    with pytest.raises(CheckpointUnavailable, match="munet checkpoint fetch VitB"):
        load_registered_checkpoint("VitB", directory=tmp_path)


def test_a_registered_hybrid_loads_from_its_file(tmp_path):
    spec = checkpoint_spec("VitRTi")
    arch = spec.arch(num_layers=1)
    components = init_components(arch, 32, torch.Generator().manual_seed(0))
    save_npz(tmp_path / spec.filename, components, arch)
    loaded = load_registered_checkpoint("VitRTi", image_size=32, num_layers=1, directory=tmp_path)
    assert list(loaded) == ["stem_root", "embedding", "cls", "posembed_input", "encoderblock_0",
                            "encoder_norm"]  # fmt: skip
    assert torch.equal(loaded["stem_root"]["conv.weight"], components["stem_root"]["conv.weight"])
