"""A system grown at a hybrid ViT size (a ResNet stem before the patch embedding), through the
`munet` commands: export (munet's folder, ONNX; `--format hf` refused before anything is
written), predict, the immutability test (`munet test`), the report and the leaderboard, and a
multipath agent of another model size combining the hybrid paths."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from PIL import Image

from munet.cli import main
from munet.models import arch as arch_module
from munet.models.arch import StemArch, VitSize, register_vit_size
from munet.models.export import load_exported
from tests.agents.conftest import TINY_OVERRIDES
from tests.report.html_check import parse_page

# A custom hybrid size (registered for this module's tests only): a stride-1 root of 8
# channels and one bottleneck stage, then 2 x 2 patches of its 32-channel map.
SIZE_NAME = "test-R+mu/2"
SIZE = VitSize(
    width=16, depth=2, num_heads=2, mlp_dim=32, patch_size=2,
    stem=StemArch(width=8, stages=(1,), root_kernel=3, root_stride=1, root_pool=False, groups=4),
)  # fmt: skip
HYBRID_SETS = [a for item in [*TINY_OVERRIDES, f"model={SIZE_NAME}"] for a in ("--set", item)]
# The multipath preset keeps its own (plain) model size and image sizes.
MULTI_SETS = [
    a
    for item in TINY_OVERRIDES
    if "num_layers" not in item and "ds_image_size" not in item
    for a in ("--set", item)
]


@pytest.fixture(scope="module")
def hybrid_size():
    known = SIZE_NAME in arch_module.vit_sizes()
    register_vit_size(SIZE_NAME, SIZE)
    yield SIZE_NAME
    if not known:
        arch_module._SIZES.pop(SIZE_NAME, None)


@pytest.fixture(scope="module")
def hybrid_state(hybrid_size, tmp_path_factory):
    """Root and singlepath agents at the hybrid size (digits at 8 px, synth/shape at 16 px),
    then a multipath agent (of the preset's plain size) on digits; one cycle each."""
    state = tmp_path_factory.mktemp("hybrid") / "state"
    assert main(["root", "--agent", "VitCpu", "-d", str(state), *HYBRID_SETS, "-q"]) == 0
    for task, extra in (("digits", []), ("synth/shape", ["--set", "ds_image_size=16"])):
        assert main(["run", "--agent", "VitCpu", "--task", task, "--cycles", "1",
                     "-d", str(state), *HYBRID_SETS, *extra, "-q"]) == 0  # fmt: skip
    assert main(["run", "--agent", "MultiVitCpu", "--task", "digits", "--cycles", "1",
                 "-d", str(state), *MULTI_SETS, "-q"]) == 0  # fmt: skip
    return state


def _pictures(folder, count=3):
    folder.mkdir()
    rng = np.random.default_rng(1)
    for index in range(count):
        pixels = rng.integers(0, 256, (8 + 5 * index, 8 + 3 * index, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(folder / f"p{index}.png")
    return folder


def test_a_hybrid_path_exports_with_its_stem_and_predicts(hybrid_state, tmp_path, capsys):
    out = tmp_path / "export"
    assert main(["export", "-d", str(hybrid_state), "--task", "digits", "--agent", "VitCpu",
                 "--out", str(out)]) == 0  # fmt: skip
    config = json.loads((out / "config.json").read_text())
    assert config["model"]["type"] == "vit"
    assert config["model"]["arch"]["stem"] == SIZE.stem.to_dict()
    assert {"stem_root.conv.weight", "stem_block1.unit1.conv1.weight"} <= set(config["tensors"])
    model, preprocess = load_exported(out)
    assert model.arch.is_hybrid and preprocess.image_size == 8
    images = _pictures(tmp_path / "images")
    capsys.readouterr()
    assert main(["predict", str(out), str(images), "--top-k", "2", "--format", "json"]) == 0
    predictions = json.loads(capsys.readouterr().out)
    assert len(predictions) == 3
    for entry in predictions:
        assert [p["class"] for p in entry["predictions"]] == [
            str(p["index"]) for p in entry["predictions"]
        ]  # digits' class names are the digits
    with torch.no_grad():
        first = model(preprocess([str(images / "p0.png")])).softmax(-1)[0]
    assert predictions[0]["predictions"][0]["index"] == int(first.argmax())


def test_a_hybrid_path_exports_to_onnx(hybrid_state, tmp_path, capsys):
    onnxruntime = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    for fmt in ("munet", "onnx"):
        assert main(["export", "-d", str(hybrid_state), "--task", "synth/shape", "--format",
                     fmt, "--out", str(tmp_path / fmt)]) == 0  # fmt: skip
    model, preprocess = load_exported(tmp_path / "munet")
    assert model.arch.is_hybrid and preprocess.image_size == 16
    images = torch.rand(4, 3, 16, 16, generator=torch.Generator().manual_seed(0)) * 2 - 1
    session = onnxruntime.InferenceSession(str(tmp_path / "onnx" / "model.onnx"))
    (logits,) = session.run(["logits"], {"pixel_values": images.numpy()})
    with torch.no_grad():
        np.testing.assert_allclose(logits, model(images).numpy(), rtol=1e-5, atol=1e-5)


def test_format_hf_refuses_a_hybrid_path_before_anything_is_written(
    hybrid_state, tmp_path, capsys, monkeypatch
):
    import munet.agents.published as published

    def no_data(*args, **kwargs):
        raise AssertionError("the refusal must come before the task's data is read")

    monkeypatch.setattr(published, "task_of", no_data)
    out = tmp_path / "new" / "hf"
    capsys.readouterr()
    assert main(["export", "-d", str(hybrid_state), "--task", "digits", "--agent", "VitCpu",
                 "--format", "hf", "--out", str(out)]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert "munet: error: path VitCpu~digits:" in err and "a hybrid ViT" in err
    assert "transformers 5.x has no ViT-hybrid class" in err
    assert "--format onnx" in err and "--format munet" in err
    assert not (tmp_path / "new").exists()


def test_a_multipath_agent_combines_hybrid_paths_at_their_own_size(hybrid_state, tmp_path,
                                                                  capsys):  # fmt: skip
    from munet.agents.published import PublishedSystem
    from munet.system import SystemStore

    system = PublishedSystem.load(SystemStore(str(hybrid_state)))
    (path,) = system.paths["MultiVitCpu~digits"][-1:]
    refs = path.hparams["paths"]
    # The multipath agent's own size is the preset's plain one; each slot records the size its
    # path was grown at.
    assert system.configs["MultiVitCpu~digits"]["model"] != SIZE_NAME
    assert {ref["agent_id"] for ref in refs.values()} == {"VitCpu~digits", "VitCpu~synth~shape"}
    assert all(ref["model"] == SIZE_NAME for ref in refs.values())
    out = tmp_path / "multipath"
    assert main(["export", "-d", str(hybrid_state), "--task", "digits", "--agent",
                 "MultiVitCpu", "--out", str(out)]) == 0  # fmt: skip
    module, preprocess = load_exported(out)
    assert preprocess.image_size == [8, 16]
    for slot in ("path_0", "path_1"):
        assert getattr(module, slot).arch.is_hybrid
    assert module.path_1.arch.num_classes == 0  # another task's path runs headless
    capsys.readouterr()
    assert main(["predict", str(out), str(_pictures(tmp_path / "images"))]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) >= 3


def test_munet_test_reproduces_every_hybrid_path(hybrid_state, capsys):
    capsys.readouterr()
    assert main(["test", "-d", str(hybrid_state), "--format", "json"]) == 0
    entries = json.loads(capsys.readouterr().out)
    assert {e["agent_id"] for e in entries} == {
        "VitCpu~digits", "VitCpu~synth~shape", "MultiVitCpu~digits"
    }  # fmt: skip
    assert all(e["status"] == "ok" for e in entries), entries


def test_the_report_and_leaderboard_show_the_stem(hybrid_state, tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", "-d", str(hybrid_state), "--out", str(out), "--png"]) == 0
    printed = capsys.readouterr()
    assert "report of 2 tasks (3 task agents), 3 published paths" in printed.out
    page = out.read_text()
    parser = parse_page(page)
    assert parser.errors == []
    # The strips label the stem's components `stem` and `s1`, before the patch embedding.
    assert page.count('">stem<small>') >= 2 and page.count('">s1<small>') >= 2
    assert page.index('">stem<small>') < page.index('">s1<small>') < page.index('">emb<small>')
    assert 'id="classes"' in page  # per-class metrics evaluated through the exported model
    assert list(tmp_path.glob("r-*.png"))
    assert main(["leaderboard", "-d", str(hybrid_state), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    from munet.agents.published import PublishedSystem
    from munet.system import SystemStore

    digits = next(r for r in rows if r["agent_id"] == "VitCpu~digits")
    system = PublishedSystem.load(SystemStore(str(hybrid_state)))
    path = next(p for p in system.paths["VitCpu~digits"] if p.id == digits["id"])
    # stem_root, stem_block1, embedding, cls, posembed_input, the blocks, encoder_norm, head.
    assert [c.name for c in path.components][:3] == ["stem_root", "stem_block1", "embedding"]
    assert len(digits["components"].split(",")) == 7 + int(path.hparams["num_layers"])
