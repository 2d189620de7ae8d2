"""Object-store outages: which errors are transient, bounded retries, and the one error an
outage ends in (`StoreUnavailableError`, exit 9 from the command line).

An unreachable store (no server, a server killed mid-run, a network cut, throttling) is an
expected failure, not a bug: every request of `FsspecFS` goes through `call_with_retries`,
which retries transient errors with exponential backoff, bounded in count and in total time,
then raises `StoreUnavailableError` naming the endpoint and the operation that failed. Other
errors (a missing file, a refused permission, a failed precondition) are raised at once.

The client library's own retries are turned off where munet opens the store
(`client_retry_options`): layered retries multiply (s3fs 5 x botocore 5 tries with up to 15 s
of backoff ended a run against a dead endpoint only after 12-28 s), and only one layer can bound
the total.
"""

from __future__ import annotations

import errno
import logging
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from munet.system.errors import StoreUnavailableError

log = logging.getLogger("munet.system")

T = TypeVar("T")

# Errors of the network or of an overloaded server, by class name so that no optional client
# library (botocore, aiohttp) has to be imported to recognise them.
_TRANSIENT_NAMES = frozenset(
    {
        "EndpointConnectionError",  # botocore: connection refused, DNS failure
        "ConnectTimeoutError",
        "ReadTimeoutError",
        "ConnectionClosedError",
        "HTTPClientError",
        "ClientConnectionError",  # aiohttp
        "ServerDisconnectedError",
        "ClientPayloadError",
        "FSTimeoutError",  # fsspec
    }
)
_TRANSIENT_ERRNOS = frozenset(
    getattr(errno, name)
    for name in (
        "ECONNREFUSED", "ECONNRESET", "ECONNABORTED", "ETIMEDOUT", "EHOSTUNREACH",
        "ENETUNREACH", "ENETDOWN", "EPIPE", "EBUSY", "EREMOTEIO",  # s3fs: SlowDown, 500
    )
    if hasattr(errno, name)
)
_TRANSIENT_HTTP = frozenset({500, 502, 503, 504})


def is_transient(err: BaseException) -> bool:
    """Whether `err` (or an error it was raised from) is a network failure or an overloaded
    server: worth retrying, and an outage if it persists."""
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, (ConnectionError, TimeoutError)):
            return True
        if any(cls.__name__ in _TRANSIENT_NAMES for cls in type(current).__mro__):
            return True
        if isinstance(current, OSError) and current.errno in _TRANSIENT_ERRNOS:
            return True
        response = getattr(current, "response", None)  # botocore ClientError
        if isinstance(response, dict):
            status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if status in _TRANSIENT_HTTP:
                return True
        current = current.__cause__ or current.__context__
    return False


@dataclass(frozen=True)
class RetryPolicy:
    """How long to keep trying a request that fails with a transient error.

    Attributes:
        attempts: tries in all (the first included).
        total_seconds: no retry starts after this long since the first try.
        first_delay: seconds before the first retry; doubled each time (with jitter).
    """

    attempts: int = 5
    total_seconds: float = 20.0
    first_delay: float = 0.25

    @staticmethod
    def from_env() -> RetryPolicy:
        """The default policy, with `MUNET_STORE_RETRY_SECONDS` as its total when set."""
        text = os.environ.get("MUNET_STORE_RETRY_SECONDS")
        if not text:
            return RetryPolicy()
        try:
            seconds = float(text)
        except ValueError:
            seconds = -1.0
        if not seconds >= 0:
            raise ValueError(
                f"MUNET_STORE_RETRY_SECONDS={text!r}: expected a number of seconds >= 0"
            )
        return RetryPolicy(total_seconds=seconds)


def call_with_retries(
    request: Callable[[], T], operation: str, endpoint: str, policy: RetryPolicy
) -> T:
    """`request()`, retried on transient errors within `policy`.

    Args:
        request: one request to the store.
        operation: what it does, for messages (`write STATE/manifest.json`).
        endpoint: where the store is, for messages.
        policy: the bounds.

    Raises:
        StoreUnavailableError: still failing with transient errors at the bound.
        Exception: any other error of `request`, at once.
    """
    started = time.monotonic()
    delay = policy.first_delay
    attempt = 0
    while True:
        attempt += 1
        try:
            return request()
        except Exception as err:
            if not is_transient(err):
                raise
            elapsed = time.monotonic() - started
            if attempt >= policy.attempts or elapsed + delay > policy.total_seconds:
                raise StoreUnavailableError(
                    f"the object store at {endpoint} is unreachable: {operation} failed "
                    f"after {attempt} tries in {elapsed:.1f}s ({_short(err)}); committed "
                    "states are intact: rerun when it is back",
                    endpoint=endpoint,
                    operation=operation,
                ) from err
            log.debug("%s at %s failed (%s); retrying in %.2fs", operation, endpoint,
                     _short(err), delay)
            time.sleep(delay * random.uniform(0.5, 1.0))
            delay *= 2


def _short(err: BaseException) -> str:
    text = " ".join(str(err).split())
    if len(text) > 160:
        text = text[:157] + "..."
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def client_retry_options(protocol: str) -> dict[str, Any]:
    """Storage options that turn the client library's own retries off (munet retries, with
    one bound), for the protocols munet knows; {} for others."""
    if protocol in ("s3", "s3a"):
        return {"config_kwargs": {"retries": {"total_max_attempts": 1}}}
    return {}


def disable_client_retries(fs: Any) -> None:
    """Turn off the retries a filesystem object does itself (s3fs: `retries` tries of each
    request), so munet's bound is the only one."""
    if type(fs).__module__.split(".")[0] == "s3fs":
        fs.retries = 1


def endpoint_of(fs: Any) -> str:
    """Where an fsspec filesystem sends its requests, for messages."""
    protocol = fs.protocol[0] if isinstance(fs.protocol, (tuple, list)) else fs.protocol
    endpoint = getattr(fs, "endpoint_url", None) or (
        getattr(fs, "client_kwargs", None) or {}
    ).get("endpoint_url")
    if not endpoint and protocol in ("s3", "s3a"):
        endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    return f"{endpoint} ({protocol})" if endpoint else f"{protocol}://"
