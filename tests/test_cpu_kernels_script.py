"""benchmarks/cpu_kernels.py runs end to end on a tiny model and prints a ratio line per choice.

(No timing is asserted; the figures are in docs/speed.md.)"""

import pytest
import torch

from tests.test_benchmark_scripts import load_script, ratios


@pytest.fixture
def restore_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_cpu_kernels_smoke(capsys, restore_threads):
    load_script("cpu_kernels").main(
        ["--preset", "VitCpu", "--num-layers", "1", "--image-size", "8", "--batch", "4",
         "--eval-batch", "8", "--rounds", "1", "--steps", "1", "--eval-batches", "1",
         "--precisions", "fp32,bf16", "--eval-batch-sizes", "4"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert out.startswith("cpu: ")
    # Per precision: dense and attention x train and eval, inference mode, one eval batch size.
    assert len(ratios(out)) == 2 * 6 and all(r > 0 for r in ratios(out))
    assert "eval no_grad/inference_mode bf16" in out and "eval batch 8/4 fp32" in out
