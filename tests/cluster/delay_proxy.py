"""A TCP proxy on 127.0.0.1 that, once armed, holds every byte a client sends for a while, or
until released: a writer whose requests are delayed in the network past its lease (tests of
fenced commits); closed, it cuts every connection: the server seems gone (outage tests).

Bytes received while the hold lasts are forwarded when it ends, even if the client gave up
meanwhile, as a network delivers packets it had queued.
"""

from __future__ import annotations

import socket
import threading
import time


class DelayProxy:
    """Forwards 127.0.0.1:`port` to `target_port`; `arm(marker, seconds)` starts holding,
    `release()` ends the hold early.

    Args:
        target_port: the server's port on 127.0.0.1.

    Attributes:
        port: where clients connect.
        triggered_at: monotonic time the hold started (None: not yet).
    """

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._marker: bytes | None = None
        self._seconds = 0.0
        self._hold_until = 0.0
        self.triggered_at: float | None = None
        self._released = threading.Event()
        self._closed = False
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def arm(self, marker: bytes, seconds: float) -> None:
        """Hold everything sent from the first chunk holding `marker` on, for `seconds`."""
        with self._lock:
            self._marker, self._seconds = marker, seconds

    def release(self) -> None:
        """End the hold now: what it held is forwarded, and nothing more is held."""
        with self._lock:
            self._hold_until = 0.0
        self._released.set()

    @property
    def holding(self) -> bool:
        """Whether the hold has started and not ended yet."""
        with self._lock:
            return (
                self.triggered_at is not None
                and not self._released.is_set()
                and time.monotonic() < self._hold_until
            )

    def close(self) -> None:
        """Stop: refuse new connections and cut the open ones (the server seems gone)."""
        self._closed = True
        self._listener.close()
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for s in sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(("127.0.0.1", self.target_port), timeout=10)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            with self._lock:
                self._sockets += [client, server]
            threading.Thread(target=self._upstream, args=(client, server), daemon=True).start()
            threading.Thread(target=self._downstream, args=(server, client), daemon=True).start()

    def _hold(self, chunk: bytes) -> None:
        with self._lock:
            now = time.monotonic()
            if self._marker is not None and self._marker in chunk and self.triggered_at is None:
                self.triggered_at = now
                self._hold_until = now + self._seconds
            wait = self._hold_until - now
        if wait > 0:
            self._released.wait(wait)

    def _upstream(self, client: socket.socket, server: socket.socket) -> None:
        try:
            while True:
                chunk = client.recv(65536)
                if not chunk:
                    break
                self._hold(chunk)
                server.sendall(chunk)
        except OSError:
            pass
        finally:
            try:
                server.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    @staticmethod
    def _downstream(server: socket.socket, client: socket.socket) -> None:
        try:
            while True:
                chunk = server.recv(65536)
                if not chunk:
                    break
                client.sendall(chunk)
        except OSError:
            pass
        finally:
            for s in (client, server):
                try:
                    s.close()
                except OSError:
                    pass
