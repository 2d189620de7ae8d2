"""Fixtures for the cluster tests: an S3 server (moto) and a Ray instance, both on 127.0.0.1
only and bounded in time, and tiny agent configs."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.agents.conftest import TINY_OVERRIDES  # The VitCpu preset shrunk to a few steps.

WORKERS = Path(__file__).parent.parent / "system" / "workers.py"

S3_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def s3_endpoint():
    """A moto S3 server on 127.0.0.1 for the session; sets the AWS_* variables s3fs reads."""
    pytest.importorskip("s3fs")
    pytest.importorskip("moto.server")
    port = _free_port()
    log = open(os.devnull, "wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=log,
        stderr=log,
    )
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                raise RuntimeError("the moto S3 server did not start") from None
            time.sleep(0.1)
    saved = {k: os.environ.get(k) for k in (*S3_ENV, "AWS_ENDPOINT_URL")}
    os.environ.update(S3_ENV, AWS_ENDPOINT_URL=endpoint)
    try:
        yield endpoint
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


@pytest.fixture
def s3_url(s3_endpoint):
    """`s3://<fresh bucket>/state` on the test server."""
    import s3fs

    bucket = f"munet-{secrets.token_hex(4)}"
    s3fs.S3FileSystem(skip_instance_cache=True).mkdir(bucket)
    return f"s3://{bucket}/state"


@pytest.fixture
def tiny_config():
    from munet.config import apply_overrides, get_preset

    return apply_overrides(get_preset("VitCpu"), TINY_OVERRIDES)


def run_worker(*argv: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    """A tests/system/workers.py process (its own interpreter, so it can be SIGKILLed)."""
    return subprocess.Popen(
        [sys.executable, str(WORKERS), *argv],
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def wait_for_line(status: Path, prefix: str, timeout: float = 120.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = status.read_text().splitlines() if status.exists() else []
        for line in lines:
            if line.startswith(prefix):
                return line
            if line.startswith("error"):
                raise AssertionError(f"worker failed: {line}")
        time.sleep(0.05)
    raise AssertionError(f"no {prefix!r} line in {timeout}s")


@pytest.fixture
def worker_process():
    """Start tests/system/workers.py processes (killed at teardown if still running)."""
    started: list[subprocess.Popen] = []

    def start(*argv: str, env: dict[str, str] | None = None) -> subprocess.Popen:
        process = run_worker(*argv, env=env)
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait(30)


@pytest.fixture
def wait_line():
    return wait_for_line


@pytest.fixture
def tiny_overrides():
    return list(TINY_OVERRIDES)
