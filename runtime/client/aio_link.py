"""The socket side of :class:`~pybmq.client.aio.AsyncSession`: one connection at a time.

A ``Link`` opens a connection (TCP, and TLS when configured), writes bytes, tells whether the
socket's write buffer is over its high-water mark, pauses or resumes reading, and drops or closes
the connection. What arrives on it goes to the callables its owner gave; bytes and news from a
connection that was already dropped are ignored, so a late read never reaches a new connection's
engine state.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Callable

from pybmq.client.tls import open_connection
from pybmq.errors import UsageError


class _Protocol(asyncio.Protocol):
    """asyncio's side of one connection; everything goes to its ``Link``."""

    def __init__(self, link: Link) -> None:
        self.link = link

    def data_received(self, data: bytes) -> None:
        self.link.received(self, data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.link.lost(self, exc)

    def pause_writing(self) -> None:
        self.link.writing_paused(high=True)

    def resume_writing(self) -> None:
        self.link.writing_paused(high=False)


# What ``Link.connect`` returns and ``Link.use`` takes: a connection not yet in use.
Connection = tuple[asyncio.Transport, _Protocol]


class Link:
    """One connection to the broker at a time, with its write watermarks and read pause.

    ``on_data(bytes)``, ``on_lost(exc)`` and ``on_watermark(high)`` are called on the loop for
    the connection in use only. Past ``high_water`` buffered bytes the link is not ``writable``
    until the buffer is down to ``low_water``.
    """

    def __init__(
        self,
        *,
        on_data: Callable[[bytes], None],
        on_lost: Callable[[Exception | None], None],
        on_watermark: Callable[[bool], None],
        tls: ssl.SSLContext | None,
        tls_server_name: str | None,
        connect_timeout: float,
        high_water: int,
        low_water: int,
        tls_handshake_timeout: float = 2.0,
    ) -> None:
        if not 0 <= low_water <= high_water:
            raise UsageError("watermarks need 0 <= write_low_water <= write_high_water")
        self._on_data = on_data
        self._on_lost = on_lost
        self._on_watermark = on_watermark
        self.tls = tls
        self._tls_server_name = tls_server_name
        self.connect_timeout = connect_timeout
        self.tls_handshake_timeout = tls_handshake_timeout
        self.high_water = high_water
        self._low_water = low_water
        self.transport: asyncio.Transport | None = None
        self._protocol: _Protocol | None = None
        self._writable = asyncio.Event()
        self._writable.set()

    # ------------------------------------------------------------------ the protocol's calls

    def received(self, protocol: _Protocol, data: bytes) -> None:
        if protocol is self._protocol:  # a dropped connection's late bytes are ignored
            self._on_data(data)

    def lost(self, protocol: _Protocol, exc: Exception | None) -> None:
        if protocol is self._protocol:
            self.transport = None
            self._on_lost(exc)

    def writing_paused(self, high: bool) -> None:
        if high:
            self._writable.clear()
        else:
            self._writable.set()
        self._on_watermark(high)

    # ------------------------------------------------------------------ the owner's calls

    @property
    def writable(self) -> bool:
        """False while the socket's write buffer is over its high-water mark."""
        return self._writable.is_set()

    async def wait_writable(self) -> None:
        if not self._writable.is_set():
            await self._writable.wait()

    def set_writable(self) -> None:
        """Release writers waiting for the buffer (the connection is gone: they fail instead)."""
        self._writable.set()

    @property
    def open(self) -> bool:
        """A connection is in use and not closing."""
        return self.transport is not None and not self.transport.is_closing()

    @property
    def buffered(self) -> int:
        """Bytes in the socket's write buffer."""
        transport = self.transport
        return transport.get_write_buffer_size() if transport is not None else 0

    async def connect(self, host: str, port: int) -> Connection:
        """TCP within connect_timeout, then (with TLS) the handshake, checking the server name,
        within tls_handshake_timeout (``pybmq.client.tls.open_connection``)."""
        return await open_connection(
            lambda: _Protocol(self),
            host,
            port,
            tls=self.tls,
            server_name=self._tls_server_name,
            connect_timeout=self.connect_timeout,
            handshake_timeout=self.tls_handshake_timeout,
        )

    def use(self, connection: Connection) -> None:
        """Make ``connection`` the one in use."""
        transport, protocol = connection
        self._protocol = protocol
        self.transport = transport
        transport.set_write_buffer_limits(high=self.high_water, low=self._low_water)

    def write(self, data: bytes) -> None:
        transport = self.transport
        if transport is not None and not transport.is_closing():
            transport.write(data)

    def pause_reading(self, pause: bool) -> None:
        assert self.transport is not None
        if pause:
            self.transport.pause_reading()
        else:
            self.transport.resume_reading()

    def abort(self) -> None:
        """Drop the connection at once (it is lost; what it still says is ignored)."""
        self._protocol = None
        transport, self.transport = self.transport, None
        if transport is not None:
            transport.abort()
        self._writable.set()

    def close(self) -> None:
        """Close the connection in use, if any, and ignore it from now on."""
        self._protocol = None
        if self.transport is not None:
            with contextlib.suppress(Exception):
                self.transport.close()
            self.transport = None


__all__ = ["Connection", "Link"]
