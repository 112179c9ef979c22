"""A recording TCP relay on 127.0.0.1: clients connect to it, it relays to the broker, and keeps
what the clients sent, so a test can read the client's events as they went over the wire."""

from __future__ import annotations

import contextlib
import socket
import threading
from types import TracebackType

from pybmq.wire.framing import Event, iter_events

MAX_CAPTURE = 16 * 1024 * 1024  # bytes kept per direction: a test's traffic is far below
MAX_CONNECTIONS = 8
CHUNK = 65536


class WireTap:
    """Relay ``127.0.0.1:<ephemeral>`` → ``broker`` (``host``, ``port``); ``sent`` is every byte
    the clients sent, in order, per connection."""

    def __init__(self, host: str, port: int) -> None:
        self._target = (host, port)
        self._server = socket.create_server(("127.0.0.1", 0))
        self._server.settimeout(0.2)
        self.port = self._server.getsockname()[1]
        self.url = f"tcp://127.0.0.1:{self.port}"
        self.sent: list[bytearray] = []
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._closing = threading.Event()
        self._lock = threading.Lock()
        accept = threading.Thread(target=self._accept, name="wire-tap-accept", daemon=True)
        accept.start()
        self._threads.append(accept)

    def _accept(self) -> None:
        while not self._closing.is_set() and len(self.sent) < MAX_CONNECTIONS:
            try:
                client, _ = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            broker = socket.create_connection(self._target, timeout=10)
            broker.settimeout(None)
            captured = bytearray()
            with self._lock:
                self.sent.append(captured)
                self._sockets += [client, broker]
            for src, dst, keep in ((client, broker, captured), (broker, client, None)):
                pump = threading.Thread(
                    target=self._pump, args=(src, dst, keep), name="wire-tap-pump", daemon=True
                )
                pump.start()
                self._threads.append(pump)

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket, keep: bytearray | None) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(CHUNK):
                if keep is not None and len(keep) + len(data) <= MAX_CAPTURE:
                    keep += data
                dst.sendall(data)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    def events(self, connection: int = 0) -> list[Event]:
        """The complete events the client of ``connection`` sent so far."""
        with self._lock:
            data = bytes(self.sent[connection])
        out: list[Event] = []
        with contextlib.suppress(Exception):  # a partial last event: what came before counts
            for item in iter_events(data):
                if isinstance(item, Event):
                    out.append(item)
        return out

    def close(self) -> None:
        self._closing.set()
        self._server.close()
        with self._lock:
            for sock in self._sockets:
                with contextlib.suppress(OSError):
                    sock.close()
        for thread in self._threads:
            thread.join(5)

    def __enter__(self) -> WireTap:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
