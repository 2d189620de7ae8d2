"""Open a page in headless Chromium and report what happened: console errors, exceptions,
requests that left the page, load timings, and a screenshot.

Chromium is driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``: JSON
messages separated by NUL bytes on file descriptors 3 and 4), so no extra Python package and
no network port are needed. Used by the report's browser test and its benchmark.

    result = open_page("report.html", screenshot="report.png")
    assert not result.errors, result.errors
"""

from __future__ import annotations

import base64
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from munet.lifeline import die_with_parent

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")


class BrowserError(RuntimeError):
    """Chromium could not be started or did not answer in time."""


def find_chromium() -> str | None:
    """The Chromium executable: ``$MUNET_CHROMIUM``, else the first of :data:`CANDIDATES` on
    the PATH; None when there is none."""
    explicit = os.environ.get("MUNET_CHROMIUM")
    if explicit:
        return explicit if shutil.which(explicit) else None
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


@dataclass
class PageResult:
    """What loading a page produced.

    Attributes:
        errors: console errors, uncaught exceptions and error log entries, one line each.
        external_requests: URLs the page requested outside itself (not ``file:``/``data:``).
        load_ms: navigation start to the end of the load event.
        first_paint_ms: navigation start to the first contentful paint (None if not reported).
        page_height: the document's height in CSS px.
        value: the result of the ``evaluate`` expression, if one was given.
    """

    errors: list[str] = field(default_factory=list)
    external_requests: list[str] = field(default_factory=list)
    load_ms: float = float("nan")
    first_paint_ms: float | None = None
    page_height: int = 0
    value: Any = None


class _Pipe:
    """The DevTools protocol over Chromium's pipe: numbered calls, and the events seen."""

    def __init__(self, write_fd: int, read_fd: int) -> None:
        self._write = os.fdopen(write_fd, "wb", buffering=0)
        self._read_fd = read_fd
        self._messages: queue.Queue = queue.Queue()
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        threading.Thread(target=self._reader, daemon=True).start()

    def _reader(self) -> None:
        buffer = b""
        with os.fdopen(self._read_fd, "rb", buffering=0) as source:
            while True:
                chunk = source.read(1 << 16)
                if not chunk:
                    self._messages.put(None)
                    return
                buffer += chunk
                while b"\0" in buffer:
                    message, buffer = buffer.split(b"\0", 1)
                    self._messages.put(json.loads(message))

    def _next(self, deadline: float) -> dict[str, Any]:
        try:
            message = self._messages.get(timeout=max(0.01, deadline - time.monotonic()))
        except queue.Empty:
            raise BrowserError("Chromium did not answer in time") from None
        if message is None:
            raise BrowserError("Chromium closed the DevTools pipe")
        if "method" in message:
            self.events.append(message)
        return message

    def call(self, method: str, params: dict | None = None, session: str | None = None,
             timeout: float = 30.0) -> dict[str, Any]:  # fmt: skip
        self._next_id += 1
        request: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            request["sessionId"] = session
        self._write.write(json.dumps(request).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            message = self._next(deadline)
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise BrowserError(f"{method}: {message['error']}")
                return message.get("result", {})

    def wait_event(self, method: str, timeout: float = 30.0) -> dict[str, Any]:
        for event in self.events:
            if event["method"] == method:
                return event
        deadline = time.monotonic() + timeout
        while True:
            message = self._next(deadline)
            if message.get("method") == method:
                return message


def _describe_event(event: dict[str, Any]) -> str | None:
    method, params = event["method"], event.get("params", {})
    if method == "Runtime.exceptionThrown":
        details = params.get("exceptionDetails", {})
        text = details.get("exception", {}).get("description") or details.get("text")
        return f"exception: {text}"
    if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
        args = " ".join(str(a.get("value", a.get("description", ""))) for a in params["args"])
        return f"console.{params['type']}: {args}"
    if method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
        entry = params["entry"]
        return f"log ({entry.get('source')}): {entry.get('text')} {entry.get('url', '')}".strip()
    return None


def open_page(
    page: str | os.PathLike[str],
    screenshot: str | os.PathLike[str] | None = None,
    width: int = 1440,
    height: int = 900,
    evaluate: str | None = None,
    timeout: float = 60.0,
    chromium: str | None = None,
) -> PageResult:
    """Loads a local HTML file in headless Chromium (a fresh profile, no network use).

    Args:
        page: the HTML file.
        screenshot: where to write a PNG of the viewport after loading (optional).
        width, height: the viewport (a laptop screen by default).
        evaluate: a JavaScript expression to evaluate after loading (its JSON value returned).
        timeout: seconds for each step.
        chromium: the executable (default: :func:`find_chromium`).

    Returns:
        Errors, requests outside the page, timings and the page height.

    Raises:
        BrowserError: Chromium is missing, would not start or did not answer.
    """
    executable = chromium or find_chromium()
    if executable is None:
        raise BrowserError("no Chromium found (install it: apt-get install chromium)")
    url = Path(page).resolve().as_uri()
    profile = tempfile.mkdtemp(prefix="munet-chromium-")
    to_browser_r, to_browser_w = os.pipe()
    from_browser_r, from_browser_w = os.pipe()

    parent_pid = os.getpid()

    def place_fds() -> None:  # In the child: the pipe ends at fds 3 and 4.
        # The browser dies with munet (a killed `munet report --png` leaves no Chromium).
        die_with_parent(parent_pid, watchdog=False)
        high_r, high_w = os.dup(to_browser_r), os.dup(from_browser_w)
        os.dup2(high_r, 3)
        os.dup2(high_w, 4)

    args = [
        executable, "--headless=new", "--remote-debugging-pipe", "--no-sandbox",
        "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--mute-audio",
        "--disable-extensions", "--disable-background-networking", "--disable-sync",
        "--no-default-browser-check", f"--user-data-dir={profile}", "about:blank",
    ]  # fmt: skip
    process = subprocess.Popen(
        args,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        close_fds=False,
        preexec_fn=place_fds,  # noqa: PLW1509  (fds must be in place before exec)
    )
    os.close(to_browser_r)
    os.close(from_browser_w)
    pipe = _Pipe(to_browser_w, from_browser_r)
    try:
        target = pipe.call("Target.createTarget", {"url": "about:blank"}, timeout=timeout)
        session = pipe.call(
            "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}
        )["sessionId"]
        for domain in ("Runtime", "Log", "Page", "Network"):
            pipe.call(f"{domain}.enable", session=session, timeout=timeout)
        pipe.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            session=session,
        )
        pipe.events.clear()
        pipe.call("Page.navigate", {"url": url}, session=session, timeout=timeout)
        pipe.wait_event("Page.loadEventFired", timeout=timeout)
        probe = (
            "JSON.stringify({nav: performance.getEntriesByType('navigation')[0],"
            " paint: performance.getEntriesByType('paint'),"
            " height: document.documentElement.scrollHeight})"
        )
        measured = json.loads(
            pipe.call("Runtime.evaluate", {"expression": probe, "returnByValue": True},
                      session=session)["result"]["value"]
        )  # fmt: skip
        result = PageResult(
            load_ms=float(measured["nav"]["loadEventEnd"]),
            page_height=int(measured["height"]),
        )
        for paint in measured["paint"]:
            if paint["name"] == "first-contentful-paint":
                result.first_paint_ms = float(paint["startTime"])
        if evaluate is not None:
            answer = pipe.call(
                "Runtime.evaluate",
                {"expression": f"JSON.stringify({evaluate})", "returnByValue": True},
                session=session,
            )
            if "exceptionDetails" in answer:
                raise BrowserError(f"evaluating {evaluate!r}: {answer['exceptionDetails']}")
            result.value = json.loads(answer["result"].get("value", "null"))
        if screenshot is not None:
            shot = pipe.call("Page.captureScreenshot", {"format": "png"}, session=session)
            Path(screenshot).write_bytes(base64.b64decode(shot["data"]))
        for event in pipe.events:
            line = _describe_event(event)
            if line:
                result.errors.append(line)
            if event["method"] == "Network.requestWillBeSent":
                requested = event["params"]["request"]["url"]
                if not requested.startswith(("file:", "data:", "about:")):
                    result.external_requests.append(requested)
        return result
    finally:
        try:
            pipe.call("Browser.close", timeout=5)
        except BrowserError:
            pass
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(profile, ignore_errors=True)
