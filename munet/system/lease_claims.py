"""The claim files of the agent lease (munet.system.lease): what one holds, how it reads, how a
holder is named in messages, and the lease's ttl."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

DEFAULT_LEASE_TTL = 30.0
#: Environment variable overriding the default ttl (seconds), e.g. for tests.
LEASE_TTL_ENV = "MUNET_LEASE_TTL"


def default_lease_ttl() -> float:
    """`MUNET_LEASE_TTL` when set (seconds > 0), else 30 s.

    Raises:
        ValueError: the variable is not a positive number.
    """
    text = os.environ.get(LEASE_TTL_ENV)
    if not text:
        return DEFAULT_LEASE_TTL
    try:
        ttl = float(text)
    except ValueError:
        ttl = -1.0
    if not ttl > 0:
        raise ValueError(f"{LEASE_TTL_ENV}={text!r}: expected a number of seconds > 0")
    return ttl


@dataclass
class Claim:
    """One claim file: who claims the agent, until when, and which claims it supersedes."""

    token: str
    holder: dict[str, Any]
    expires: float
    supersedes: list[str] = field(default_factory=list)

    def live(self, now: float) -> bool:
        return self.expires > now

    def to_bytes(self) -> bytes:
        return json.dumps(
            {
                "token": self.token,
                "holder": self.holder,
                "expires": self.expires,
                "supersedes": self.supersedes,
            }
        ).encode()

    @staticmethod
    def from_bytes(token: str, data: bytes) -> Claim:
        """A claim; an unreadable one (a torn or foreign file) counts as expired."""
        try:
            raw = json.loads(data.decode())
            return Claim(
                token,
                dict(raw.get("holder") or {}),
                float(raw["expires"]),
                [str(t) for t in raw.get("supersedes") or []],
            )
        except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, ValueError,
                AttributeError):
            return Claim(token, {}, float("-inf"))


def describe_holder(holder: dict[str, Any] | None) -> str:
    """`pid 12 on host h since T (launch L)` for messages."""
    if not holder:
        return "an unknown process"
    text = f"pid {holder.get('pid')} on host {holder.get('host')} since {holder.get('since')}"
    if holder.get("tag"):
        text += f" (launch {holder['tag']})"
    return text
