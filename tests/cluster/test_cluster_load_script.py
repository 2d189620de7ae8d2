"""benchmarks/cluster_load.py at its smallest setting: two agents on a head and one worker node
(127.0.0.1), one reader, then the same agents one at a time; it prints both rates, 0 errors
and the ratio."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray")
pytest.importorskip("s3fs")
pytest.importorskip("moto.server")

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).parent.parent.parent / "benchmarks" / "cluster_load.py"


def test_cluster_load_smallest_setting():
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--agents", "2", "--cycles", "1", "--workers", "1",
         "--readers", "1", "--reader-pause", "0.2"],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"},
    )  # fmt: skip
    assert done.returncode == 0, (done.stdout, done.stderr[-3000:])
    out = done.stdout
    rows = re.findall(
        r"^(cluster \(2 nodes of 1 CPU\)|one at a time \(munet run\)): 2 agents x 1 cycles, "
        r"(\d+) commits in [\d.]+s: ([\d.]+) commits/min; 1 readers: (\d+) loads, "
        r"[\d.]+ loads/min; errors: 0$", out, re.MULTILINE)
    assert [r[0] for r in rows] == ["cluster (2 nodes of 1 CPU)", "one at a time (munet run)"], out
    # The same agents commit the same states both ways (a state per generation).
    assert rows[0][1] == rows[1][1] and int(rows[0][1]) >= 2 and float(rows[0][2]) > 0, out
    assert sum(int(r[3]) for r in rows) > 0, out  # the reader loaded the system
    assert "errors: 0\n" in out
    assert re.search(r"^ratio: commits/min, cluster \(2 nodes of 1 CPU\) / one at a time: "
                     r"\d+\.\d\d$", out, re.MULTILINE), out
