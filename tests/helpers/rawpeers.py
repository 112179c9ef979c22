"""Peers that speak raw bytes, for the tap's bounds: a "broker" that discards what it gets and
sends what it is told, and clients that do the same, each side on its own threads (blocking
sockets on 127.0.0.1, ephemeral ports, every wait bounded)."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterable

Stream = Callable[[], Iterable[bytes]]
_TIMEOUT = 120.0


def _discard(sock: socket.socket, counted: list[int]) -> None:
    try:
        while data := sock.recv(1 << 16):
            counted[0] += len(data)
    except OSError:
        pass


def _send(sock: socket.socket, stream: Stream) -> None:
    try:
        for chunk in stream():
            sock.sendall(chunk)
    except OSError:
        pass


class RawPeer:
    """One connection's two halves on threads: ``stream()``'s chunks sent, everything received
    discarded and counted (``received``)."""

    def __init__(self, sock: socket.socket, stream: Stream | None) -> None:
        sock.settimeout(_TIMEOUT)
        self.sock = sock
        self._received = [0]
        self.threads = [threading.Thread(target=_discard, args=(sock, self._received), daemon=True)]
        if stream is not None:
            self.threads.append(threading.Thread(target=_send, args=(sock, stream), daemon=True))
        for thread in self.threads:
            thread.start()

    @property
    def received(self) -> int:
        return self._received[0]

    def sent(self, timeout: float = _TIMEOUT) -> None:
        """Wait until everything was sent."""
        for thread in self.threads[1:]:
            thread.join(timeout)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        for thread in self.threads:
            thread.join(_TIMEOUT)


class RawBroker:
    """Listens on an ephemeral port; each connection gets a ``RawPeer`` sending ``stream``."""

    def __init__(self, stream: Stream | None = None) -> None:
        self.stream = stream
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"tcp://127.0.0.1:{self.server.getsockname()[1]}"
        self.peers: list[RawPeer] = []
        self._closed = threading.Event()
        self._accepting = threading.Thread(target=self._accept, daemon=True)
        self._accepting.start()

    def _accept(self) -> None:
        self.server.settimeout(0.1)  # a close() does not wake a blocked accept(): poll
        while not self._closed.is_set():
            try:
                sock, _ = self.server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.peers.append(RawPeer(sock, self.stream))

    def close(self) -> None:
        self._closed.set()
        self._accepting.join(_TIMEOUT)
        self.server.close()
        for peer in self.peers:
            peer.close()


def connect(url: str, stream: Stream | None = None) -> RawPeer:
    host, port = url.removeprefix("tcp://").rsplit(":", 1)
    return RawPeer(socket.create_connection((host, int(port)), timeout=_TIMEOUT), stream)
