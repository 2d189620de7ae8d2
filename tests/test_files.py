"""Files munet writes follow the umask, weights included (safetensors writes 0600 itself)."""

import os
import re
import stat
from pathlib import Path

import pytest
import torch

import munet
from munet.files import current_umask, save_safetensors_file, umask_mode

REPO = Path(munet.__file__).resolve().parent


@pytest.fixture
def umask_027():
    previous = os.umask(0o027)
    try:
        yield 0o640
    finally:
        os.umask(previous)


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_current_umask_reads_without_changing_it(umask_027):
    assert current_umask() == 0o027
    assert current_umask() == 0o027
    assert umask_mode() == 0o640


def test_save_safetensors_file_follows_the_umask(tmp_path, umask_027):
    from safetensors.torch import save_file

    save_file({"a": torch.zeros(2)}, str(tmp_path / "plain.safetensors"))
    assert mode(tmp_path / "plain.safetensors") == 0o600  # why the helper exists
    save_safetensors_file({"a": torch.zeros(2)}, tmp_path / "ours.safetensors")
    assert mode(tmp_path / "ours.safetensors") == umask_027


def test_state_dir_files_follow_the_umask(tmp_path, umask_027):
    from munet.config import apply_overrides, get_preset

    config = apply_overrides(get_preset("VitCpu"), ["num_layers=1", "ds_image_size=8"])
    munet.create_root_model(config, munet.SystemStore(str(tmp_path / "state")), "random_init")
    files = [p for p in (tmp_path / "state").rglob("*") if p.is_file() and p.name != ".lock"]
    shards = [p for p in files if p.suffix == ".safetensors"]
    assert shards and len(files) > len(shards)
    assert {p.name: mode(p) for p in files} == {p.name: umask_027 for p in files}


def test_checkpoint_and_search_model_weights_follow_the_umask(tmp_path, umask_027):
    from munet.models import VisionTransformer, VitArch
    from munet.models.checkpoints import save_safetensors
    from munet.search.objectives.vit import save_weights

    model = VisionTransformer(VitArch(8, 1, 2, 16, 4, 3), 8)
    save_weights(model, str(tmp_path / "search.safetensors"))
    assert mode(tmp_path / "search.safetensors") == umask_027
    save_safetensors(tmp_path / "ckpt.safetensors", {"head": {"w": torch.zeros(2)}})
    assert mode(tmp_path / "ckpt.safetensors") == umask_027


def test_every_safetensors_writer_goes_through_the_helper():
    """A new writer calling save_file directly would write private weights again."""
    direct = [
        str(path.relative_to(REPO))
        for path in REPO.rglob("*.py")
        if path.name != "files.py" and re.search(r"\bsave_file\(", path.read_text())
    ]
    assert direct == []
