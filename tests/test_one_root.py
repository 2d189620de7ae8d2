"""One root for everyone (issue 31): the Python API's default root is the one `munet root`
(and `munet demo`) creates, so the README's snippet gives the system the CLI gives."""

import re
from pathlib import Path

import torch

import munet
from munet.cli import main
from munet.system import SystemStore

README = Path(__file__).resolve().parent.parent / "README.md"


def root_tensors(state_dir: Path, preset: str) -> dict[str, dict[str, torch.Tensor]]:
    """{component name: tensors} of the only root model of ``preset`` in ``state_dir``."""
    store = SystemStore(str(state_dir))
    (root_id,) = store.agent_ids([preset])
    population = store.load(root_id, [preset]).population
    (path,) = population.own_paths
    return {c.name: dict(c.tensors) for c in path.components}


def test_the_readme_snippet_builds_the_root_the_cli_builds(tmp_path, capsys):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    snippet = next(block for block in blocks if "create_root_model" in block)
    root_line = next(line for line in snippet.splitlines() if "create_root_model" in line)
    assert root_line.strip().startswith("munet.create_root_model(config, store)")

    # The preset the snippet uses (munet's CPU default).
    (preset,) = re.findall(r'config = munet\.get_preset\("(\w+)"\)', snippet)
    assert preset == "VitCpuHybrid"
    assert main(["root", "--agent", preset, "-d", str(tmp_path / "cli"), "-q"]) == 0
    assert f"{preset}~root_model~pretrained" in capsys.readouterr().out
    # The snippet's first lines, as written (the agent runs after them are left out).
    store = munet.SystemStore(str(tmp_path / "api"))
    config = munet.get_preset(preset)
    path = munet.create_root_model(config, store)
    assert munet.default_root_kind(config) == "pretrained"
    assert path.full_id.startswith(f"{preset}~root_model~pretrained")

    cli, api = root_tensors(tmp_path / "cli", preset), root_tensors(tmp_path / "api", preset)
    assert cli.keys() == api.keys() and len(cli) > 3
    for name in cli:
        assert cli[name].keys() == api[name].keys()
        for tensor in cli[name]:
            assert torch.equal(cli[name][tensor], api[name][tensor]), (name, tensor)


def test_the_default_root_keeps_the_kind_a_state_dir_has(tmp_path):
    config = munet.get_preset("VitCpu")
    munet.create_root_model(config, tmp_path, "random_init")
    again = munet.create_root_model(config, tmp_path)  # no second (pretrained) root
    assert again.full_id.startswith("VitCpu~root_model~random_init")
    assert SystemStore(str(tmp_path)).agent_ids(["VitCpu"]) == ["VitCpu~root_model~random_init"]
    # Where the preset ships no root, the default is random init.
    vitb = munet.get_preset("VitB")
    assert munet.default_root_kind(vitb) == "random_init"
