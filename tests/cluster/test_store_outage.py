"""An unreachable object store is an outage, not a munet bug: bounded retries, then one line
naming the endpoint and the failed operation, exit 9, committed states intact. Also the retry
policy and the error classification on their own."""

from __future__ import annotations

import errno
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from munet.cli.errors import EXIT_OS_ERROR, classify
from munet.system import StoreUnavailableError, SystemStore
from munet.system.outage import RetryPolicy, call_with_retries, is_transient
from tests.cluster.delay_proxy import DelayProxy

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

REPO = Path(__file__).resolve().parents[2]
INTACT = "committed states are intact: rerun when it is back"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once the socket is closed


def _munet(*argv: str, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "munet", *argv],
        env={**os.environ, "PYTHONPATH": str(REPO), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("munet: error")]


def test_retries_transient_errors_within_the_bound_then_names_endpoint_and_operation():
    calls = []

    def refused():
        calls.append(time.monotonic())
        raise ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")

    policy = RetryPolicy(attempts=3, total_seconds=5, first_delay=0.01)
    with pytest.raises(StoreUnavailableError) as err:
        call_with_retries(refused, "write s/state_1_0/manifest.json", "http://h:1 (s3)", policy)
    assert len(calls) == 3
    message = str(err.value)
    assert message.startswith("the object store at http://h:1 (s3) is unreachable: "
                              "write s/state_1_0/manifest.json failed after 3 tries")
    assert message.endswith(INTACT)
    assert classify(err.value) == (EXIT_OS_ERROR, message)
    # A permanent error is raised at once, untouched.
    calls.clear()

    def missing():
        calls.append(1)
        raise FileNotFoundError("s/state_1_0/manifest.json")

    with pytest.raises(FileNotFoundError):
        call_with_retries(missing, "read", "e", policy)
    assert calls == [1]
    # A transient error that clears is retried through.
    flaky = iter([TimeoutError("slow"), OSError(errno.EBUSY, "SlowDown"), "data"])

    def sometimes():
        value = next(flaky)
        if isinstance(value, Exception):
            raise value
        return value

    assert call_with_retries(sometimes, "read", "e", policy) == "data"


def test_transient_errors_are_recognised_through_their_causes():
    class EndpointConnectionError(Exception):  # botocore's, by name (optional dependency)
        pass

    wrapped = OSError(errno.EIO, "wrapped")
    wrapped.__cause__ = EndpointConnectionError("could not connect")
    assert is_transient(wrapped)
    assert not is_transient(PermissionError(errno.EACCES, "denied"))
    assert not is_transient(FileExistsError(errno.EEXIST, "exists"))


def test_no_server_at_all_exits_9_with_one_line(s3_endpoint):
    endpoint = f"http://127.0.0.1:{_closed_port()}"
    run = _munet("run", "--agent", "VitCpu", "--task", "digits", "--cycles", "1",
                 "-d", "s3://munet-nowhere/state",
                 env={"AWS_ENDPOINT_URL": endpoint, "MUNET_STORE_RETRY_SECONDS": "2"})
    _, stderr = run.communicate(timeout=180)
    assert run.returncode == EXIT_OS_ERROR, stderr[-2000:]
    (line,) = _error_lines(stderr)
    assert line.startswith(f"munet: error: the object store at {endpoint} (s3) is unreachable: ")
    assert line.endswith(INTACT) and "internal error" not in stderr
    tries = int(re.search(r"failed after (\d+) tries", line).group(1))
    assert 1 <= tries <= RetryPolicy().attempts


@pytest.mark.slow
def test_server_gone_mid_run_exits_9_and_keeps_committed_states(s3_endpoint, s3_url,
                                                               tiny_config, tiny_overrides):
    from munet.agents.root import create_root_model

    create_root_model(tiny_config, s3_url, "random_init")
    agent = "VitCpu~digits"
    store = SystemStore(s3_url)  # straight to the server, not through the proxy
    proxy = DelayProxy(int(s3_endpoint.rsplit(":", 1)[1]))
    sets = [arg for o in tiny_overrides for arg in ("--set", o)]
    run = _munet("run", "--agent", "VitCpu", "--task", "digits", "--cycles", "20",
                 "-d", s3_url, *sets,
                 env={"AWS_ENDPOINT_URL": proxy.url, "MUNET_STORE_RETRY_SECONDS": "2"})
    try:
        deadline = time.monotonic() + 300
        while not store.list_states(agent):  # let it commit something first
            assert run.poll() is None, run.communicate()[1][-2000:]
            assert time.monotonic() < deadline
            time.sleep(0.5)
        proxy.close()  # the store is gone for the run (and only for it)
        _, stderr = run.communicate(timeout=240)
    finally:
        proxy.close()
        if run.poll() is None:
            run.kill()
    assert run.returncode == EXIT_OS_ERROR, stderr[-3000:]
    (line,) = _error_lines(stderr)
    assert "munet: error: the object store at " in line and line.endswith(INTACT), line
    assert "internal error" not in stderr
    states = store.list_states(agent)
    assert states
    for state in states:
        store.verify_state(state)
    assert store.load(agent).cycle >= 0  # the run resumes from them
