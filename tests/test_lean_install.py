"""`make demo` installs munet's core dependencies only (issue 31): the demo, end to end, must
import none of the optional extras' packages (Ray, JAX, S3, W&B, TensorBoard, transformers,
datasets, TFDS)."""

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
OPTIONAL = ("ray", "jax", "flax", "optax", "s3fs", "wandb", "tensorboard", "transformers",
            "datasets", "tensorflow_datasets", "moto")  # fmt: skip

SCRIPT = """
import sys
from munet.agents import run_demo
from tests.agents.conftest import TINY_OVERRIDES

run_demo(sys.argv[1], cycles=1, tasks=["digits", "synth/color"], overrides=TINY_OVERRIDES,
         echo=lambda line: None, progress=False, workers=1, multipath_tasks=1)
optional = sys.argv[2].split(",")
print(",".join(sorted(m for m in sys.modules if m.split(".")[0] in optional)))
"""


@pytest.mark.slow  # a demo in a fresh process (about 30 s on a loaded 2-core box)
def test_the_demo_imports_no_optional_package(tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "demo"), ",".join(OPTIONAL)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={"PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", f"the demo imported {result.stdout.strip()}"
    assert (tmp_path / "demo" / "report.html").is_file()


def test_make_demo_installs_the_core_package_only():
    makefile = (REPO / "Makefile").read_text()
    core = makefile.split("$(VENV)/.munet-core:", 1)[1].split("\n\n", 1)[0]
    assert "pip install --quiet -c constraints.txt -e .\n" in core and "[" not in core
    assert "demo: setup-demo" in makefile and "test: setup " in makefile
