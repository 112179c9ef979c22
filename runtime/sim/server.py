"""The broker simulator's shells: asyncio (``BrokerSimulator``) and a thread (``ThreadedBrokerSimulator``).

Both are thin: sockets, the clock and a timer loop around the sans-I/O ``pybmq.sim.broker.Broker``.

    async with BrokerSimulator() as sim:          # listens on 127.0.0.1, ephemeral port
        ... connect a client to sim.url ...

    with ThreadedBrokerSimulator() as sim:        # for synchronous code and tests
        ... sim.url ...
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import Callable
from typing import Any, TypeVar

from pybmq.errors import PybmqError, UsageError
from pybmq.loopthread import LoopThread
from pybmq.sim.broker import Broker
from pybmq.sim.config import BrokerConfig, BrokerHooks
from pybmq.sim.faults import FaultConfig, FaultInjector
from pybmq.sim.session import ClientSession

__all__ = [
    "DISCONNECT_LINGER_S",
    "TIMER_MAX_SLEEP_S",
    "BrokerConfig",
    "BrokerHooks",
    "BrokerSimulator",
    "FaultConfig",
    "SimulatorError",
    "ThreadedBrokerSimulator",
]

log = logging.getLogger("pybmq.sim")
T = TypeVar("T")

# After answering a disconnect, wait this long for the client to close the connection itself.
DISCONNECT_LINGER_S = 5.0
TIMER_MAX_SLEEP_S = 0.25


class SimulatorError(PybmqError):
    """The simulator could not start or was used in the wrong state."""


class _Connection(asyncio.Protocol):
    """asyncio's side of one accepted socket; everything goes to its ``BrokerSimulator``."""

    def __init__(self, sim: BrokerSimulator) -> None:
        self.sim = sim
        self.session: ClientSession | None = None
        # Over the connection cap when accepted: closed as soon as it is made (with TLS, once
        # its handshake ends, which the handshake timeout bounds).
        self.refused = not sim.admit(self)
        self.transport: asyncio.Transport = None  # type: ignore[assignment]  # set on connect

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        if self.refused:
            transport.abort()
            return
        self.transport = transport
        self.session = self.sim.connected(transport)

    def data_received(self, data: bytes) -> None:
        assert self.session is not None
        self.sim.received(self.session, data)

    def pause_writing(self) -> None:
        """A client that does not read what we send: stop pushing to it, and stop reading it."""
        if self.session is not None and not self.session.closed:
            self.transport.pause_reading()
            self.sim.writing_paused(self.session, True)

    def resume_writing(self) -> None:
        if self.session is not None and not self.session.closed and self.session.paused:
            self.transport.resume_reading()
            self.sim.writing_paused(self.session, False)

    def connection_lost(self, exc: Exception | None) -> None:
        self.sim.lost(self, exc)


class BrokerSimulator:
    """An in-memory BlazingMQ broker on a TCP port (asyncio).

    ``host``/``port`` given here are where ``start()`` (and ``async with``) listen by default.
    With ``tls`` (a server context, ``pybmq.sim.tls.server_tls_context``) that one port serves
    TLS only; with ``tls_port`` too it stays plain and a TLS listener opens beside it on
    ``tls_port`` (0: an ephemeral one; ``tls_url``), as a broker with a plain and a TLS
    listener. Either way the handshake starts as a connection is accepted.
    """

    def __init__(
        self,
        config: BrokerConfig | None = None,
        hooks: BrokerHooks | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        faults: FaultConfig | None = None,
        tls: ssl.SSLContext | None = None,
        tls_port: int | None = None,
    ) -> None:
        if tls_port is not None and tls is None:
            raise UsageError("a TLS listener (tls_port) needs a TLS context (tls)")
        if faults is not None:
            if hooks is not None:
                raise UsageError("give hooks= or faults=, not both")
            hooks = FaultInjector(faults)
        self.broker = Broker(config, hooks)
        self._listen = (host, port)
        self._tls = tls  # a server context (pybmq.sim.tls.server_tls_context): clients need TLS
        self._server: asyncio.base_events.Server | None = None
        self._tls_listen = tls_port  # None: no listener beside the main one
        self._tls_server: asyncio.base_events.Server | None = None
        self._tls_port = 0
        self._transports: dict[ClientSession, asyncio.Transport] = {}
        # Every accepted connection not closed yet → when it was accepted, TLS handshakes in
        # progress included (asyncio drops a failed handshake without telling its protocol, so
        # one with no session past the handshake timeout is forgotten: see _open_connections).
        self._connections: dict[_Connection, float] = {}
        self._timer: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.host = "127.0.0.1"
        self._port = 0

    @property
    def port(self) -> int:
        if self._server is None:
            raise SimulatorError("the simulator is not started")
        return self._port

    @property
    def url(self) -> str:
        """``tcp://host:port``, the form both pybmq and the official SDK take as broker address."""
        return f"tcp://{self.host}:{self.port}"

    @property
    def tls_port(self) -> int:
        """The TLS listener's port (with ``tls_port``; else the only port, when it serves TLS)."""
        if self._tls_server is None:
            if self._tls is not None:
                return self.port
            raise SimulatorError("the simulator serves no TLS")
        return self._tls_port

    @property
    def tls_url(self) -> str:
        """``tcp://host:tls_port``: clients connect with TLS options to this URL."""
        return f"tcp://{self.host}:{self.tls_port}"

    async def start(self, host: str | None = None, port: int | None = None) -> None:
        if self._server is not None:
            raise SimulatorError("the simulator is already started")
        host = self._listen[0] if host is None else host
        port = self._listen[1] if port is None else port
        self._loop = asyncio.get_running_loop()
        beside = self._tls_listen is not None
        self._server, self._port = await self._open_listener(
            host, port, None if beside else self._tls
        )
        if beside:
            tls_port = self._tls_port or self._tls_listen or 0  # the same port on a restart
            try:
                self._tls_server, self._tls_port = await self._open_listener(
                    host, tls_port, self._tls
                )
            except BaseException:
                self._server.close()
                self._server = None
                raise
        self.host = host
        self._timer = self._loop.create_task(self._run_timers())
        log.info("listening on %s", self.url + (f" and TLS on {self.tls_url}" if beside else ""))

    async def _open_listener(
        self, host: str, port: int, tls: ssl.SSLContext | None
    ) -> tuple[asyncio.base_events.Server, int]:
        assert self._loop is not None
        handshake = self.broker.config.tls_handshake_timeout_ms / 1000 if tls else None
        try:
            server = await self._loop.create_server(
                lambda: _Connection(self), host, port, ssl=tls, ssl_handshake_timeout=handshake
            )
        except OSError as exc:
            raise SimulatorError(f"cannot listen on {host}:{port}: {exc}") from exc
        bound: int = server.sockets[0].getsockname()[1]
        return server, bound

    async def stop(self) -> None:
        """Stop listening and drop every connection (clients see the connection go down)."""
        if self._server is None:
            return
        server, self._server = self._server, None
        server.close()
        tls_server, self._tls_server = self._tls_server, None
        if tls_server is not None:
            tls_server.close()
        if self._timer is not None:
            self._timer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._timer
        for session, transport in list(self._transports.items()):
            session.connection_lost("simulator stopped")
            transport.abort()
        self._transports.clear()
        await server.wait_closed()
        if tls_server is not None:
            await tls_server.wait_closed()

    async def restart(self) -> None:
        """Close every connection and stop listening, then listen again on the same port; the
        queues and their messages are kept (a broker restart with persistent storage)."""
        port = self.port
        await self.stop()
        await self.start(self.host, port)

    async def serve_forever(self) -> None:
        if self._server is None:
            raise SimulatorError("the simulator is not started")
        await self._server.serve_forever()

    async def __aenter__(self) -> BrokerSimulator:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- the protocol's calls (one _Connection per accepted socket) ---------------------------

    def admit(self, connection: _Connection) -> bool:
        """A socket was accepted: False (and counted as refused) over the connection cap."""
        if self._open_connections() >= self.broker.config.max_connections:
            self.broker.stats.refused_connections += 1
            return False
        self._connections[connection] = self._now()
        return True

    def connected(self, transport: asyncio.Transport) -> ClientSession:
        """An admitted connection is up: its broker session."""
        peer = transport.get_extra_info("peername")
        peer_text = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        session = self.broker.connect(peer_text, self._now())
        self._transports[session] = transport
        transport.set_write_buffer_limits(high=self.broker.config.write_high_water_bytes)
        log.info("session %d: connection from %s", session.session_id, peer_text)
        return session

    def received(self, session: ClientSession, data: bytes) -> None:
        session.receive_data(data, self._now())
        self._flush()

    def writing_paused(self, session: ClientSession, paused: bool) -> None:
        """The socket's write buffer crossed its high (``paused``) or low watermark."""
        session.set_paused(paused, self._now())
        if not paused:
            self._flush()

    def lost(self, connection: _Connection, exc: Exception | None) -> None:
        self._connections.pop(connection, None)
        session = connection.session
        if session is not None:
            self._transports.pop(session, None)
            session.connection_lost(
                "connection closed by peer" if exc is None else f"connection lost: {exc}"
            )
            self._flush()

    # -- shell internals ---------------------------------------------------------------------

    def _open_connections(self) -> int:
        """Connections served now: with a session, or still within their TLS handshake."""
        connections = self._connections
        if len(connections) < self.broker.config.max_connections:
            return len(connections)  # under the cap: no need to look for stale handshakes
        cutoff = self._now() - self.broker.config.tls_handshake_timeout_ms / 1000 - 1.0
        for stale in [c for c, t in connections.items() if c.session is None and t < cutoff]:
            del connections[stale]
        return len(connections)

    def _now(self) -> float:
        assert self._loop is not None
        return self._loop.time()

    def _flush(self) -> None:
        for session in self.broker.take_dirty():
            transport = self._transports.get(session)
            data = session.data_to_send()
            if transport is None:
                continue
            if data:
                transport.write(data)
            if session.closed:
                self._transports.pop(session, None)
                if session.close_reason == "client disconnected":
                    assert self._loop is not None
                    self._loop.call_later(DISCONNECT_LINGER_S, transport.close)
                else:
                    transport.close()

    async def _run_timers(self) -> None:
        while True:
            deadline = self.broker.next_deadline()
            now = self._now()
            delay = (
                TIMER_MAX_SLEEP_S
                if deadline is None
                else min(max(deadline - now, 0.0), TIMER_MAX_SLEEP_S)
            )
            await asyncio.sleep(delay)
            self.broker.on_timer(self._now())
            self._flush()


class ThreadedBrokerSimulator:
    """``BrokerSimulator`` on its own event loop thread, for synchronous code and tests."""

    def __init__(
        self,
        config: BrokerConfig | None = None,
        hooks: BrokerHooks | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        faults: FaultConfig | None = None,
        tls: ssl.SSLContext | None = None,
        tls_port: int | None = None,
    ) -> None:
        self._sim = BrokerSimulator(
            config, hooks, host=host, port=port, faults=faults, tls=tls, tls_port=tls_port
        )
        self._io: LoopThread | None = None

    @property
    def broker(self) -> Broker:
        """The engine; read it through ``call`` while the simulator runs (it lives on its thread)."""
        return self._sim.broker

    @property
    def port(self) -> int:
        return self._sim.port

    @property
    def url(self) -> str:
        return self._sim.url

    @property
    def tls_url(self) -> str:
        return self._sim.tls_url

    def start(
        self, host: str | None = None, port: int | None = None, timeout: float = 10.0
    ) -> None:
        if self._io is not None:
            raise SimulatorError("the simulator is already started")
        io = LoopThread("pybmq-sim")
        try:
            io.run(self._sim.start(host, port), timeout)
        except TimeoutError:
            io.stop()
            raise SimulatorError(f"the simulator did not start within {timeout}s") from None
        except BaseException:
            io.stop()
            raise
        self._io = io

    def _running(self) -> LoopThread:
        if self._io is None:
            raise SimulatorError("the simulator is not started")
        return self._io

    def call(self, fn: Callable[[Broker], T], timeout: float = 10.0) -> T:
        """Run ``fn(broker)`` on the simulator's thread and return its result."""
        io = self._running()

        async def invoke() -> T:
            return fn(self._sim.broker)

        return io.run(invoke(), timeout)

    def restart(self, timeout: float = 10.0) -> None:
        """``BrokerSimulator.restart`` on the simulator's thread."""
        self._running().run(self._sim.restart(), timeout)

    def stop(self, timeout: float = 10.0) -> None:
        if self._io is None:
            return
        io, self._io = self._io, None
        try:
            io.run(self._sim.stop(), timeout)
        finally:
            io.stop(timeout)

    def __enter__(self) -> ThreadedBrokerSimulator:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
