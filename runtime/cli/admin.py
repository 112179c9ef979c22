"""``pybmq admin WORD...``: send one admin command to a broker and print its answer.

The words are the command, as a broker's admin interface reads them (case-insensitive), e.g.
HELP, STAT SHOW, CLUSTERS LIST, DOMAINS DOMAIN <domain> INFOS,
DOMAINS DOMAIN <domain> QUEUE <queue> PURGE <appId|*>. pybmq negotiates as an admin client
(E_TCPADMIN) and sends an adminCommand control message, as upstream's admin tools do; the
answer is printed as the broker wrote it. --json asks the broker for JSON (ENCODING
JSON_COMPACT) and prints one object: {"command": ..., "result": <the broker's JSON>}. The
simulator (pybmq sim) answers HELP, STAT SHOW, CLUSTERS LIST and DOMAINS DOMAIN ... INFOS,
PURGE, QUEUE ... PURGE and QUEUE ... LIST; a real broker answers all of its commands.

example: pybmq admin DOMAINS DOMAIN bmq.test.mem.priority QUEUE q1 PURGE '*' --json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any

from pybmq.cli.common import Outcome, add_broker_argument, describe, supervise
from pybmq.errors import UsageError
from pybmq.uri import default_broker, parse_broker_url

EXIT_CODES = (
    "exit codes: 0 answered, 1 the broker answered with an error (--json), 2 bad usage, "
    "3 connection/broker failure, 4 --timeout, 130 Ctrl-C"
)
_READ = 1 << 16


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "admin",
        help="send an admin command to a broker (HELP, STAT SHOW, ... PURGE)",
        description=describe(__doc__),
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("words", nargs="+", metavar="WORD", help="the command, e.g. STAT SHOW")
    add_broker_argument(parser)
    parser.add_argument(
        "--json", action="store_true", help="ask for JSON and print one JSON object"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="give up after this long, connecting included (default 30)",
    )
    parser.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    if args.timeout <= 0:
        raise UsageError("--timeout must be > 0 seconds")
    url = args.broker or default_broker()
    host, port = parse_broker_url(url)
    command = " ".join(args.words)
    if args.json and args.words[0].upper() != "ENCODING":
        command = f"ENCODING JSON_COMPACT {command}"
    answer: list[str] = []
    outcome, reason = asyncio.run(supervise(_exchange(host, port, command, answer), args.timeout))
    if outcome is not None:
        print(f"pybmq admin: {url}: {reason}", file=sys.stderr)
        return outcome.exit_code
    return _print(args, command, answer[0])


async def _exchange(host: str, port: int, command: str, answer: list[str]) -> None:
    """Connect, negotiate, send ``command``; its answer's text is appended to ``answer``."""
    from pybmq.client.admin import AdminEngine
    from pybmq.errors import SessionStoppedError

    try:
        reader, writer = await asyncio.open_connection(host, port)
    except OSError as exc:
        why = os.strerror(exc.errno).lower() if exc.errno else str(exc)
        raise SessionStoppedError(f"cannot connect: {why}") from None
    engine = AdminEngine()
    engine.command(command)
    try:
        while not answer:
            writer.write(engine.data_to_send())
            await writer.drain()
            data = await reader.read(_READ)
            if not data:
                raise SessionStoppedError("the broker closed the connection")
            answer.extend(a.text for a in engine.receive_data(data))
    finally:
        writer.close()


def _print(args: argparse.Namespace, command: str, text: str) -> int:
    if not args.json:
        print(text, flush=True)
        return Outcome.DONE.exit_code
    document: dict[str, Any] = {"command": command}
    try:
        document["result"] = json.loads(text)
    except ValueError:
        document["text"] = text  # a broker's answer that is not JSON (some errors are not)
    print(json.dumps(document), flush=True)
    failed = isinstance(document.get("result"), dict) and "error" in document["result"]
    return 1 if failed or "text" in document else Outcome.DONE.exit_code
