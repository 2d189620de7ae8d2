"""Tiny CPU runs of the pretraining's maintained benchmarks: they run end to end and print their
ratio lines (no timing is asserted)."""

import re

import pytest
import torch

from tests.test_benchmark_scripts import load_script


@pytest.fixture
def restore_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_pretrain_throughput_prints_a_ratio_and_the_generator_share(capsys, restore_threads):
    figures = load_script("pretrain_throughput").main(["--quick", "--other-precision", "bf16"])
    out = capsys.readouterr().out
    # One ratio: line per place the batches are rendered, the default's (a process) last.
    lines = re.findall(r"^ratio: [0-9.]+ \(munet pretrain, rendering in a (\w+) / plain", out, re.M)
    assert lines == ["thread", "process"]
    assert "rendering takes" in out
    assert figures["plain"] > 0 and figures["generator"] > 0
    assert figures["process"]["munet"] > 0 and figures["thread"]["munet"] > 0
    assert figures["munet"] == figures["process"]["munet"]
    assert re.search(r"^ratio: [0-9.]+ \(plain PyTorch at bf16 / at fp32", out, re.M)
    assert figures["other_precision"]["plain"] > 0


def test_render_speed_renders_the_same_images_as_a_git_revision(capsys):
    # HEAD's renderer against this tree's: whatever a change does to the recipes' speed, it
    # must keep their images (the roots' data stream) bit for bit.
    figures = load_script("render_speed").main(["--against", "HEAD", "--quick", "--instances", "3"])
    assert figures["identical"] and figures["ratio"] > 0
    assert "images identical: yes" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="no-such-revision"):
        load_script("render_speed").main(["--against", "no-such-revision", "--quick"])
