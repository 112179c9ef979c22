"""``pybmq tap --listen HOST:PORT --broker URL --out FILE``: a recording proxy.

Clients connect to the tap as to a broker; the tap connects each of them to the real broker,
forwards every byte unchanged both ways, and appends each complete event, with its direction,
connection number and time, to FILE. ``pybmq decode FILE`` prints the recording. Runs until
Ctrl-C or SIGTERM, then prints how many connections and events it saw. With --mask-payloads the
file can be shared: every message payload and any authentication material is recorded as X bytes
of the same length (headers, properties and sizes stay); the traffic itself is never changed.

example: pybmq tap --listen 127.0.0.1:30115 --broker tcp://localhost:30114 --out session.tap
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import time
from typing import BinaryIO

from pybmq.cli.common import Subcommands, describe, stop_on_signals
from pybmq.cli.validate import broker_url, host_port, listen_failure, writable_file
from pybmq.errors import ProtocolError, UsageError
from pybmq.uri import parse_broker_url

__all__ = ["Recorder", "add_parser", "handler"]

log = logging.getLogger("pybmq.cli.tap")
_READ = 1 << 16


def add_parser(subparsers: Subcommands) -> None:
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
    parser.set_defaults(func=handler)


class Recorder:
    """Appends events to the capture; frames each direction of each connection on its own."""

    def __init__(self, out: BinaryIO, mask: bool = False) -> None:
        from pybmq.wire.capture import MAGIC

        self.out = out
        self.mask = mask
        self.events = [0, 0]
        out.write(MAGIC)

    def record(self, direction: int, connection: int, events: list[bytes]) -> None:
        from pybmq.wire.capture import encode_record, mask_event

        now = time.time_ns()
        for event in events:
            if self.mask:
                event = mask_event(event)
            self.out.write(encode_record(direction, connection, now, event))
        self.out.flush()
        self.events[direction] += len(events)


async def _pump(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    recorder: Recorder,
    direction: int,
    connection: int,
) -> None:
    from pybmq.wire.framing import EventReader

    framer: EventReader | None = EventReader()
    try:
        while data := await reader.read(_READ):
            writer.write(data)
            if framer is not None:
                try:
                    recorder.record(direction, connection, [e.data for e in framer.feed(data)])
                except ProtocolError as exc:  # keep forwarding; stop recording this direction
                    log.warning("connection %d: not recording any more: %s", connection, exc)
                    framer = None
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


async def _serve(args: argparse.Namespace) -> int:
    host, port = args.listen
    broker_host, broker_port = parse_broker_url(args.broker)
    recorder: Recorder | None = None
    connections = 0

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        assert recorder is not None  # set right after the server starts, before any client
        connections += 1
        number = connections
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(
                broker_host, broker_port
            )
        except OSError as exc:
            log.error("connection %d: cannot reach %s: %s", number, args.broker, exc)
            writer.close()
            return
        await asyncio.gather(
            _pump(reader, upstream_writer, recorder, 0, number),
            _pump(upstream_reader, writer, recorder, 1, number),
        )

    try:
        server = await asyncio.start_server(on_client, host, port)
    except OSError as exc:
        raise UsageError(listen_failure("--listen", f"{host}:{port}", exc)) from None
    try:  # opened once listening works: a busy port does not truncate an earlier capture
        out = open(args.out, "wb")  # noqa: SIM115 - closed in finally below
    except OSError as exc:
        server.close()
        raise UsageError(f"cannot write --out {args.out}: {exc.strerror}") from None
    recorder = Recorder(out, args.mask_payloads)
    bound = server.sockets[0].getsockname()
    stop = stop_on_signals()
    print(f"pybmq tap listening on tcp://{bound[0]}:{bound[1]} -> {args.broker}", flush=True)
    try:
        await stop.wait()
    finally:
        server.close()
        out.close()
        sent, received = recorder.events
        print(
            f"pybmq tap stopped: {connections} connections, {sent} events client->broker, "
            f"{received} broker->client, written to {args.out}",
            flush=True,
        )
    return 0


def handler(args: argparse.Namespace) -> int:
    return asyncio.run(_serve(args))
