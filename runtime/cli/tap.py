"""``pybmq tap --listen HOST:PORT --broker URL --out FILE``: a recording proxy.

Clients connect to the tap as to a broker; the tap connects each of them to the real broker,
forwards every byte unchanged both ways, and appends each event, with its direction, connection
number and time, to FILE. ``pybmq decode FILE`` prints the recording. Runs until Ctrl-C or
SIGTERM, then closes every connection and prints how many connections and events it saw. With
--mask-payloads the file can be shared: every message payload and any authentication material is
recorded as X bytes of the same length (headers, properties and sizes stay); the traffic itself
is never changed.

Everything it holds is bounded: an event is passed on as it arrives, never held whole; of an
event over --snaplen only the first --snaplen bytes are recorded (as tcpdump's snap length;
decode shows it cut); at most --max-connections clients at once (more are closed at once); and
a capture file grows to --max-capture-size, then recording stops (traffic still passes) or,
with --rotate N, FILE moves to FILE.1 (keeping N old files) and a new FILE starts.

TLS: with --tls-ca the tap connects to the broker's TLS listener (checking its certificate as
a client does); with --listen-tls-cert/--listen-tls-key it serves TLS 1.3 to its clients too.
It sees, and records, the traffic inside TLS.

example: pybmq tap --listen 127.0.0.1:30115 --broker tcp://localhost:30114 --out session.tap
example: pybmq tap --broker tcp://localhost:30115 --tls-ca ca.pem --out tls.tap
exit codes: 0 stopped by Ctrl-C or SIGTERM, 2 bad usage (the flag is named: a busy --listen
port, an --out that cannot be written)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import ssl
from typing import TYPE_CHECKING

from pybmq.cli.common import Subcommands, describe, stop_on_signals
from pybmq.cli.security import add_tls_arguments, tls_options
from pybmq.cli.tap_capture import Recorder
from pybmq.cli.validate import (
    broker_url,
    host_port,
    integer,
    listen_failure,
    readable_file,
    writable_file,
)
from pybmq.errors import ProtocolError, UsageError

if TYPE_CHECKING:
    from pybmq.client.options import SessionOptions

__all__ = [
    "DEFAULT_MAX_CAPTURE",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_SNAPLEN",
    "Recorder",
    "Tap",
    "add_parser",
    "handler",
]

log = logging.getLogger("pybmq.cli.tap")
_READ = 1 << 16
_CONNECT_TIMEOUT = 10.0
DEFAULT_SNAPLEN = 1 << 20
DEFAULT_MAX_CONNECTIONS = 64
DEFAULT_MAX_CAPTURE = 1 << 30


def add_parser(subparsers: Subcommands) -> None:
    from pybmq.wire.framing import MAX_EVENT_SIZE

    parser = subparsers.add_parser(
        "tap",
        help="record live traffic between clients and a broker (for pybmq decode)",
        description=describe(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--listen",
        type=host_port,
        default="127.0.0.1:30115",
        help="HOST:PORT for clients (default 127.0.0.1:30115)",
    )
    parser.add_argument(
        "--broker", type=broker_url, required=True, help="the real broker, tcp://host:port"
    )
    parser.add_argument(
        "--out", type=writable_file, required=True, help="capture file to write (replaced)"
    )
    parser.add_argument(
        "--mask-payloads",
        action="store_true",
        help="record payloads and authentication material as X bytes (length kept)",
    )
    parser.add_argument(
        "--snaplen",
        type=integer(64, MAX_EVENT_SIZE),
        default=DEFAULT_SNAPLEN,
        metavar="BYTES",
        help=f"record at most this much of each event; a longer one is recorded cut, marked so "
        f"(default {DEFAULT_SNAPLEN})",
    )
    parser.add_argument(
        "--max-connections",
        type=integer(1),
        default=DEFAULT_MAX_CONNECTIONS,
        metavar="N",
        help=f"clients at once; more are closed on arrival (default {DEFAULT_MAX_CONNECTIONS})",
    )
    parser.add_argument(
        "--max-capture-size",
        type=integer(1 << 16),
        default=DEFAULT_MAX_CAPTURE,
        metavar="BYTES",
        help=f"the largest capture file (default {DEFAULT_MAX_CAPTURE}); then recording stops, "
        "or the file rotates with --rotate",
    )
    parser.add_argument(
        "--rotate",
        type=integer(0, 1000),
        default=0,
        metavar="N",
        help="at --max-capture-size, move FILE to FILE.1 (FILE.1 to FILE.2 ..., keeping N) and "
        "start a new FILE (default 0: stop recording)",
    )
    tls = parser.add_argument_group("TLS")
    add_tls_arguments(tls)  # to the broker
    tls.add_argument(
        "--listen-tls-cert",
        type=readable_file,
        metavar="PEM",
        help="serve TLS to clients with this certificate (with --listen-tls-key)",
    )
    tls.add_argument(
        "--listen-tls-key", type=readable_file, metavar="PEM", help="that certificate's key"
    )
    parser.set_defaults(func=handler)


async def _pump(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    recorder: Recorder,
    direction: int,
    connection: int,
    snaplen: int,
) -> None:
    """Forward one direction as it comes (one read at a time, waiting for the other side to
    take it), recording each event, at most ``snaplen`` bytes of it held."""
    from pybmq.wire.capture import SnapFramer

    framer: SnapFramer | None = SnapFramer(snaplen)
    try:
        while data := await reader.read(_READ):
            writer.write(data)
            if framer is not None:
                try:
                    recorder.record(direction, connection, framer.feed(data))
                except ProtocolError as exc:  # keep forwarding; stop recording this direction
                    log.warning("connection %d: not recording any more: %s", connection, exc)
                    framer = None
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


class Tap:
    """The connections of one tap run: each client with its upstream, at most ``limit``."""

    def __init__(
        self, args: argparse.Namespace, recorder: Recorder, upstream: SessionOptions
    ) -> None:
        self.args = args
        self.recorder = recorder
        self.upstream = upstream  # how to reach the broker: its URL, TLS options and bounds
        self.connections = 0  # accepted, in all
        self.refused = 0  # closed on arrival, over --max-connections
        self.tasks: set[asyncio.Task[None]] = set()

    async def on_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self.tasks) >= self.args.max_connections:
            self.refused += 1
            log.warning("a client refused: --max-connections %d reached", self.args.max_connections)
            writer.close()
            return
        task = asyncio.current_task()
        assert task is not None
        self.tasks.add(task)
        self.connections += 1
        try:
            await self._serve(self.connections, reader, writer)
        except asyncio.CancelledError:
            writer.close()  # the tap is stopping: close this client; no traceback
        finally:
            self.tasks.discard(task)

    async def _serve(
        self, number: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        from pybmq.client.tls import connect_failure, open_streams

        try:
            upstream = await open_streams(
                self.upstream, connect_timeout=_CONNECT_TIMEOUT, limit=_READ
            )
        except (OSError, asyncio.TimeoutError, UsageError) as exc:  # a CA file gone since start
            why = connect_failure(self.args.broker, exc, self.upstream.uses_tls, _CONNECT_TIMEOUT)
            log.error("connection %d: %s", number, why)
            writer.close()
            return
        up_reader, up_writer = upstream
        snaplen = self.args.snaplen
        pumps = (
            asyncio.ensure_future(_pump(reader, up_writer, self.recorder, 0, number, snaplen)),
            asyncio.ensure_future(_pump(up_reader, writer, self.recorder, 1, number, snaplen)),
        )
        try:
            await asyncio.gather(*pumps)
        finally:
            for pump in pumps:
                pump.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)
            up_writer.close()
            writer.close()

    async def close(self) -> None:
        """Cancel every connection and wait for each to close."""
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


async def _serve(args: argparse.Namespace) -> int:
    from pybmq.client.options import SessionOptions

    host, port = args.listen
    tap: Tap | None = None
    upstream = SessionOptions(broker_uri=args.broker, **tls_options(args))
    serving = _listen_tls(args)

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        assert tap is not None  # set right after the server starts, before any client
        await tap.on_client(reader, writer)

    try:
        server = await asyncio.start_server(on_client, host, port, limit=_READ, ssl=serving)
    except OSError as exc:
        raise UsageError(listen_failure("--listen", f"{host}:{port}", exc)) from None
    try:  # opened once listening works: a busy port does not truncate an earlier capture
        recorder = Recorder(args.out, args.mask_payloads, args.max_capture_size, args.rotate)
    except OSError as exc:
        server.close()
        raise UsageError(f"cannot write --out {args.out}: {exc.strerror}") from None
    tap = Tap(args, recorder, upstream)
    bound = server.sockets[0].getsockname()
    stop = stop_on_signals()
    legs = (" (TLS)" if serving else "", " (TLS)" if upstream.uses_tls else "")
    print(
        f"pybmq tap listening on tcp://{bound[0]}:{bound[1]}{legs[0]} -> {args.broker}{legs[1]}",
        flush=True,
    )
    try:
        await stop.wait()
    finally:
        server.close()
        await tap.close()
        with contextlib.suppress(OSError):
            recorder.close()
        sent, received = recorder.events
        refused = f", {tap.refused} refused (--max-connections)" if tap.refused else ""
        print(
            f"pybmq tap stopped: {tap.connections} connections{refused}, {sent} events "
            f"client->broker, {received} broker->client, written to {args.out}"
            f"{recorder.summary()}",
            flush=True,
        )
    return 0


def _listen_tls(args: argparse.Namespace) -> ssl.SSLContext | None:
    """The clients' side's TLS: a server context as the broker's (TLS 1.3), or None."""
    if bool(args.listen_tls_cert) != bool(args.listen_tls_key):
        raise UsageError("--listen-tls-cert and --listen-tls-key go together")
    if not args.listen_tls_cert:
        return None
    from pybmq.sim.tls import server_tls_context

    try:
        return server_tls_context(args.listen_tls_cert, args.listen_tls_key)
    except UsageError as exc:
        raise UsageError(
            f"--listen-tls-cert {args.listen_tls_cert} / --listen-tls-key "
            f"{args.listen_tls_key}: {exc}"
        ) from None


def handler(args: argparse.Namespace) -> int:
    if args.max_capture_size < args.snaplen + 64:
        raise UsageError(
            f"--max-capture-size {args.max_capture_size} must hold an event of --snaplen "
            f"{args.snaplen} (at least {args.snaplen + 64})"
        )
    return asyncio.run(_serve(args))
