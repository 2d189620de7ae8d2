"""A full disk during a save (issue 17, item 6): committed states stay whole, no temporary
files stay behind, and the rerun after space is freed resumes.

The state dir is a small tmpfs mounted in a private mount namespace (`unshare -rm`: no root
needed where unprivileged user namespaces are allowed); a real writer process commits states
until the file system is full. Skipped, with the reason, where such a mount is impossible.
"""

import json
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
WORKERS = pathlib.Path(__file__).with_name("workers.py")

DRIVER = r"""
import json, os, subprocess, sys
sys.path.insert(0, {repo!r})
from munet.system import SystemStore

root, out, workers = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(root, exist_ok=True)
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", root], check=True)
agent = "Crash~task"
result = {{}}

def writer(status, cycles):
    proc = subprocess.run(
        [sys.executable, workers, "writer", root, "--size", "128", "--gens", "3",
         "--cycles", str(cycles), "--status", status],
        capture_output=True, text=True, timeout=300,
    )
    lines = open(status).read().splitlines() if os.path.exists(status) else []
    return proc.returncode, lines

code, lines = writer(out + "/status-1", 10**6)
result["first_exit"] = code
result["first_lines"] = lines[-3:]
committed = [l.split()[1:] for l in lines if l.startswith("committed")]
result["last_committed"] = committed[-1] if committed else None
agent_dir = os.path.join(root, agent)
result["leftovers"] = [n for n in os.listdir(agent_dir) if n.startswith(".tmp-")]
store = SystemStore(root)
result["verified"] = {{s.name: store.verify_state(s) for s in store.list_states(agent)}}
loaded = store.load(agent)
result["loaded"] = [loaded.cycle, loaded.generation]
# Free space (a bigger file system), then rerun: it resumes where the committed state ends.
subprocess.run(["mount", "-o", "remount,size=64m", root], check=True)
target = loaded.cycle + 2
code, lines = writer(out + "/status-2", target)
result["second_exit"] = code
result["second_lines"] = [lines[0], lines[-1]] if lines else []
result["target"] = target
json.dump(result, open(out + "/result.json", "w"))
"""


def _run_in_namespace(tmp_path: pathlib.Path) -> dict:
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot make a mount namespace here (unshare -rm: {probe.stderr.strip()})")
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER.format(repo=str(REPO)))
    proc = subprocess.run(
        [
            "unshare",
            "-rm",
            sys.executable,
            str(driver),
            str(tmp_path / "mnt"),
            str(tmp_path),
            str(WORKERS),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if "mount" in proc.stderr and "permission denied" in proc.stderr.lower():
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()[-300:]}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads((tmp_path / "result.json").read_text())


@pytest.mark.slow
def test_full_disk_during_saves_keeps_committed_states_and_the_rerun_resumes(tmp_path):
    result = _run_in_namespace(tmp_path)
    # The writer died of the full disk, after committing some states.
    assert result["first_exit"] != 0
    assert result["first_lines"][-1].startswith("error OSError: [Errno 28] No space left"), result
    assert result["last_committed"] is not None
    # Nothing temporary left; every committed state whole; the latest is the last committed.
    assert result["leftovers"] == []
    assert result["verified"] and all(count > 0 for count in result["verified"].values())
    assert result["loaded"] == [int(x) for x in result["last_committed"]]
    # The rerun with space resumes from it and completes.
    assert result["second_exit"] == 0, result
    assert result["second_lines"][0] == f"ready {result['loaded'][0]} {result['loaded'][1]}"
    assert result["second_lines"][-1] == f"done {result['target']} 0"
