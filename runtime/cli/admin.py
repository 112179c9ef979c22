"""``pybmq admin WORD...``: send one admin command to a broker and print its answer.

The words are the command, as a broker's admin interface reads them (case-insensitive), e.g.
HELP, STAT SHOW, CLUSTERS LIST, DOMAINS DOMAIN <domain> INFOS,
DOMAINS DOMAIN <domain> QUEUE <queue> PURGE <appId|*>. pybmq negotiates as an admin client
(E_TCPADMIN) and sends an adminCommand control message, as upstream's admin tools do; the
answer is printed as the broker wrote it; an answer starting with "Error" (an unknown or failed
command) exits 1. --json asks the broker for JSON (ENCODING JSON_COMPACT) and prints one object:
{"command": ..., "result": <the broker's JSON>}, where a text table the broker put in a string
(the simulator's STAT SHOW) becomes {"summary": ..., "rows": [{column: cell}, ...]}. With the
single word '-' the commands are read from stdin, one per line, over one connection. The
simulator (pybmq sim) answers HELP, STAT SHOW, CLUSTERS LIST and DOMAINS DOMAIN ... INFOS,
PURGE, QUEUE ... PURGE and QUEUE ... LIST; a real broker answers all of its commands.

example: pybmq admin DOMAINS DOMAIN bmq.test.mem.priority QUEUE q1 PURGE '*' --json
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from pybmq.cli.admin_tables import is_error_text, structured
from pybmq.cli.common import Outcome, Subcommands, add_broker_argument, describe
from pybmq.cli.security import add_security_arguments, security_options
from pybmq.cli.validate import seconds
from pybmq.errors import UsageError
from pybmq.printable import escape_controls
from pybmq.uri import default_broker

if TYPE_CHECKING:
    from pybmq.client.options import SessionOptions

__all__ = ["EXIT_CODES", "add_parser", "handler"]

EXIT_CODES = (
    "exit codes: 0 answered, 1 the broker answered with an error (an unknown or failed "
    "command), 2 bad usage, "
    "3 connection/broker failure, 4 --timeout, 130 Ctrl-C"
)
_READ = 1 << 16


def add_parser(subparsers: Subcommands) -> None:
    parser = subparsers.add_parser(
        "admin",
        help="send an admin command to a broker (HELP, STAT SHOW, ... PURGE)",
        description=describe(__doc__),
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "words",
        nargs="+",
        metavar="WORD",
        help="the command, e.g. STAT SHOW; '-' reads one command per line from stdin",
    )
    add_broker_argument(parser)
    parser.add_argument(
        "--json", action="store_true", help="ask for JSON and print one JSON object"
    )
    parser.add_argument(
        "--timeout",
        type=seconds,
        default=30.0,
        metavar="SECONDS",
        help="give up connecting, or waiting for an answer, after this long (default 30)",
    )
    add_security_arguments(parser)
    parser.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    from pybmq.client.options import SessionOptions
    from pybmq.errors import PybmqError, RequestTimeoutError

    url = args.broker or default_broker()
    options = SessionOptions(broker_uri=url, **security_options(args))
    status = Outcome.DONE.exit_code

    def on_answer(command: str, text: str) -> None:
        nonlocal status
        status = max(status, _print(args, command, text))

    commands = _stdin_commands() if args.words == ["-"] else _one(" ".join(args.words))
    try:
        asyncio.run(_exchange(options, _encoded(args, commands), args.timeout, on_answer))
    except UsageError:
        raise
    except PybmqError as exc:
        text = str(exc) if url in str(exc) else f"{url}: {exc}"
        print(f"pybmq admin: {text}", file=sys.stderr)
        timed_out = isinstance(exc, RequestTimeoutError)
        return (Outcome.TIMEOUT if timed_out else Outcome.FAILED).exit_code
    return status


async def _one(command: str) -> AsyncIterator[str]:
    yield command


async def _stdin_commands() -> AsyncIterator[str]:
    """One command per line of stdin (blank lines and # comments skipped), read off the loop so
    heartbeats are answered while a person types."""
    loop = asyncio.get_running_loop()
    while line := await loop.run_in_executor(None, sys.stdin.readline):
        command = line.split("#", 1)[0].strip()
        if command:
            yield command


async def _encoded(args: argparse.Namespace, commands: AsyncIterator[str]) -> AsyncIterator[str]:
    async for command in commands:
        first = command.split()[:1]
        if args.json and [w.upper() for w in first] != ["ENCODING"]:
            command = f"ENCODING JSON_COMPACT {command}"
        yield command


async def _exchange(
    options: SessionOptions,
    commands: AsyncIterator[str],
    timeout: float,
    on_answer: Callable[[str, str], None],
) -> None:
    """Connect (TCP or TLS), authenticate if asked, negotiate, then send each command and hand
    its answer to ``on_answer``; each step (connecting, each answer) must finish within
    ``timeout`` seconds."""
    from pybmq.client.admin import AdminEngine
    from pybmq.client.tls import connect_error, open_streams
    from pybmq.errors import PybmqError, RequestTimeoutError, SessionStoppedError

    url = options.broker_uri
    try:
        reader, writer = await open_streams(options, connect_timeout=timeout, limit=_READ)
    except (OSError, asyncio.TimeoutError) as exc:
        error = connect_error(url, exc, options.uses_tls, timeout)
        if isinstance(exc, asyncio.TimeoutError):
            raise RequestTimeoutError(str(error)) from None
        raise error from None
    loop = asyncio.get_running_loop()
    engine = AdminEngine(options, now=loop.time())
    answers: asyncio.Queue[str | BaseException] = asyncio.Queue()
    timer = asyncio.Event()  # set when the engine may have a new deadline

    async def pump() -> None:  # reads all the time: heartbeats are answered between commands
        try:
            while data := await reader.read(_READ):
                for answer in engine.receive_data(data, loop.time()):
                    answers.put_nowait(answer.text)
                writer.write(engine.data_to_send())
                timer.set()
            answers.put_nowait(engine.closed_error())
        except (PybmqError, OSError) as exc:
            answers.put_nowait(exc)

    async def tick() -> None:  # re-authentication before the credential's lifetime runs out
        try:
            while True:
                deadline = engine.next_deadline()
                delay = None if deadline is None else max(deadline - loop.time(), 0.0)
                timer.clear()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(timer.wait(), delay)
                engine.handle_timeout(loop.time())
                writer.write(engine.data_to_send())
        except (PybmqError, OSError) as exc:
            answers.put_nowait(exc)

    reading = loop.create_task(pump())
    ticking = loop.create_task(tick())
    writer.write(engine.data_to_send())  # the negotiation (or the authentication)
    try:
        async for command in commands:
            engine.command(command)
            writer.write(engine.data_to_send())
            try:
                answer = await asyncio.wait_for(answers.get(), timeout)
            except asyncio.TimeoutError:
                raise RequestTimeoutError(
                    f"no answer to {command!r} within --timeout {timeout:g} s"
                ) from None
            if isinstance(answer, PybmqError):
                raise answer
            if isinstance(answer, OSError):
                raise SessionStoppedError(f"connection lost: {answer}")
            if isinstance(answer, BaseException):
                raise answer
            on_answer(command, answer)
    finally:
        reading.cancel()
        ticking.cancel()
        writer.close()


def _print(args: argparse.Namespace, command: str, text: str) -> int:
    if not args.json:
        print(escape_controls(text), flush=True)  # an answer may echo a client's bytes
        return 1 if is_error_text(text) else Outcome.DONE.exit_code
    document: dict[str, Any] = {"command": command}
    try:
        document["result"] = structured(json.loads(text))
    except ValueError:
        document["text"] = text  # a broker's answer that is not JSON (some errors are not)
    print(json.dumps(document), flush=True)
    failed = isinstance(document.get("result"), dict) and "error" in document["result"]
    return 1 if failed or "text" in document else Outcome.DONE.exit_code
