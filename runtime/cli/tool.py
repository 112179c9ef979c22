"""``pybmq tool``: bmqtool's interactive mode over pybmq's client, line for line.

It reads bmqtool's commands on stdin, one per line (``start``, ``open uri="..." flags="read"``,
``post``, ``batch-post``, ``list``, ``confirm``, ``configure``, ``close``, ``stop``, ``quit``;
``help`` lists them), runs each over pybmq's asyncio client, and prints what bmqtool prints: a
``-->`` record when a command starts, a ``<--`` record with its result (``SUCCESS (0)``,
``REFUSED (-6)``...), session events (``==> EVENT received: ... STATE_RESTORED``), ACKs and
PUSHes (with -d), and ``Unconfirmed message listing: N messages``. So upstream BlazingMQ's
integration suite, which drives whatever client ``BLAZINGMQ_TOOL`` names through these lines,
can run with pybmq as its client (``make it-upstream``).

It takes bmqtool's options (-b, -d, -c, --verbosity, --logFormat, --timeout, --authnMechanism,
--authnData, --tlsAuthority, --tlsVersions); options of bmqtool's other modes are refused, and
-D, -t and --nosessioneventhandler are accepted and have no effect. End of input, ``quit``,
``bye`` or ``q`` stop the session and exit 0; SIGINT and SIGTERM stop it and exit 130 and 143.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import threading
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from pybmq.cli.common import Subcommands, describe
from pybmq.cli.tool_grammar import MAX_LINE, VERBS_TO_QUIT, CommandError, parse_command
from pybmq.cli.tool_output import DEFAULT_FORMAT, LEVELS, ToolLog
from pybmq.cli.validate import broker_url, integer, readable_file, text, writable_file

__all__ = [
    "EPILOG",
    "HELP",
    "OVERLONG",
    "SIGNAL_EXITS",
    "TLS_VERSIONS",
    "add_parser",
    "handler",
    "session_options",
    "tls_context",
]

T = TypeVar("T")

if TYPE_CHECKING:
    import ssl

    from pybmq.client.options import SessionOptions

EPILOG = (
    "example:\n"
    "  pybmq tool -b tcp://localhost:30114 -d\n"
    '  > start\n  > open uri="bmq://bmq.test.mem.priority/q1" flags="write,ack"\n'
    '  > post uri="bmq://bmq.test.mem.priority/q1" payload=["hello"]\n  > quit\n'
    "exit codes: 0 end of input or quit, 2 bad usage (the option is named), 130 SIGINT, "
    "143 SIGTERM"
)

HELP = """
Commands:
  start (async=true)
  stop (async=true)
  open uri="" flags="" (async=true) (maxUnconfirmedMessages=x) (maxUnconfirmedBytes=y) (consumerPriority=z)
    (subscriptions=[{"expression": "", ("correlationId": u), ("maxUnconfirmedMessages": v), ("maxUnconfirmedBytes": w), ("consumerPriority": p)}])
  configure uri="" (async=true) (maxUnconfirmedMessages=x) (maxUnconfirmedBytes=y) (consumerPriority=z) (subscriptions=[...])
  close uri="" (async=true)
  post uri="" payload=["",""] (async=true) (compressionAlgorithmType=[NONE|ZLIB])
    (messageProperties=[{"name": "", "value": "", "type": "E_STRING|E_INT"}])
  batch-post uri="" (msgSize=u) (eventSize=v) (eventsCount=w) (postInterval=x) (postRate=y)
  list (uri="")
  confirm uri="" guid="" ('*' for all, '+/-n' for oldest/latest 'n')
  help
  bye (or quit, q, end of input)"""

TLS_VERSIONS = ("TLSv1.2", "TLSv1.3")
SIGNAL_EXITS = {signal.SIGINT: 130, signal.SIGTERM: 143}
OVERLONG = "\0overlong"  # stands for a line over MAX_LINE (never a real command: NUL)


def _verbosity(value: str) -> str:
    if value.lower() not in LEVELS:
        raise argparse.ArgumentTypeError(f"one of {', '.join(LEVELS)}, got {value!r}")
    return value.lower()


def _tls_versions(value: str) -> tuple[str, ...]:
    versions = tuple(v.strip() for v in value.split(",") if v.strip())
    unknown = [v for v in versions if v not in TLS_VERSIONS]
    if not versions or unknown:
        raise argparse.ArgumentTypeError(
            f"a comma-separated list of {', '.join(TLS_VERSIONS)}, got {value!r}"
        )
    return versions


def _events_count(value: str) -> tuple[int, float]:
    """bmqtool's --eventscount: N events, or Ns seconds."""
    seconds = value[-1:] in ("s", "S")
    number = integer(0)(value[:-1] if seconds else value)
    return (0, float(number)) if seconds else (number, 0.0)


def _max_unconfirmed(value: str) -> tuple[int, int]:
    messages, _, size = value.partition(":")
    if not size:
        raise argparse.ArgumentTypeError(f"MSGS:BYTES, got {value!r}")
    return integer(0)(messages), integer(0)(size)


def _properties(value: str) -> list[dict[str, Any]]:
    from pybmq.cli.tool_grammar import CommandError, properties_field

    try:
        return properties_field(json.loads(value))
    except (ValueError, CommandError) as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_parser(subparsers: Subcommands) -> None:
    parser = subparsers.add_parser(
        "tool",
        help="bmqtool's interactive mode over pybmq (for upstream's integration suite)",
        description=describe(__doc__),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    parser.add_argument(
        "-b", "--broker", type=broker_url, default="tcp://localhost:30114",
        help="broker URL (default tcp://localhost:30114)",
    )  # fmt: skip
    parser.add_argument(
        "--mode", choices=("cli", "auto"), default="cli",
        help="cli, the interactive mode (the default), or auto: produce or consume on its own "
        "(bmqtool's storage and syschk modes are not here)",
    )  # fmt: skip
    parser.add_argument("-d", "--dumpmsg", action="store_true", help="print each PUSH and ACK")
    parser.add_argument(
        "-c", "--confirmmsg", action="store_true",
        help="confirm each message as it comes (list then shows none)",
    )  # fmt: skip
    parser.add_argument(
        "-v", "--verbosity", type=_verbosity, default="info", metavar="LEVEL",
        help=f"print records of this level and above: {', '.join(LEVELS)} (default info)",
    )  # fmt: skip
    parser.add_argument(
        "--logFormat", dest="log_format", type=text, default=DEFAULT_FORMAT, metavar="FORMAT",
        help="record format: %%d date, %%t thread, %%s severity, %%c category, %%F file, "
        "%%l line, %%m message, %%p pid, %%%% a percent sign; \\n a newline "
        f"(default {DEFAULT_FORMAT.replace('%', '%%')!r})",
    )  # fmt: skip
    parser.add_argument(
        "--timeout", type=integer(1, 2**31 - 1), default=300, metavar="SECONDS",
        help="connect, open, configure, close and disconnect timeout (default 300)",
    )  # fmt: skip
    group = parser.add_argument_group("authentication and TLS")
    group.add_argument(
        "--authnMechanism", dest="authn_mechanism", type=text, default=None, metavar="MECH",
        help="authenticate with this mechanism (e.g. BASIC) before negotiating",
    )  # fmt: skip
    group.add_argument(
        "--authnData", dest="authn_data", type=text, metavar="DATA",
        help="the credential (BASIC: user:password); visible to ps, as with bmqtool",
    )  # fmt: skip
    group.add_argument(
        "--tlsAuthority", dest="tls_authority", type=readable_file, metavar="PEM",
        help="connect with TLS, trusting the CA certificates in this file",
    )  # fmt: skip
    group.add_argument(
        "--tlsVersions", dest="tls_versions", type=_tls_versions, default=("TLSv1.3",),
        metavar="LIST", help="TLS versions to allow, e.g. TLSv1.2,TLSv1.3 (default TLSv1.3)",
    )  # fmt: skip
    auto = parser.add_argument_group("--mode auto")
    auto.add_argument("-q", "--queueuri", type=text, metavar="URI", help="the queue")
    auto.add_argument(
        "-f", "--queueflags", type=text, metavar="FLAGS", help="e.g. write,ack or read"
    )
    auto.add_argument(
        "--eventscount", type=_events_count, default=(0, 0.0), metavar="N",
        help="events to post, or seconds to post with an s suffix (default 0: until stopped)",
    )  # fmt: skip
    auto.add_argument("-e", "--eventsize", type=integer(1, 1 << 20), default=1, metavar="N",
                      help="messages per event (default 1)")  # fmt: skip
    auto.add_argument("-m", "--msgsize", type=integer(0, 1 << 26), default=1024, metavar="BYTES",
                      help="payload size without --messagepattern (default 1024)")  # fmt: skip
    auto.add_argument("-r", "--postrate", type=integer(1, 1 << 20), default=1, metavar="N",
                      help="events per --postinterval (default 1)")  # fmt: skip
    auto.add_argument("-i", "--postinterval", type=integer(0, 1 << 31), default=1000,
                      metavar="MS", help="milliseconds between posts (default 1000)")  # fmt: skip
    auto.add_argument("--messagepattern", type=text, metavar="TEXT",
                      help="payloads are TEXT then the message number, %%09d")  # fmt: skip
    auto.add_argument(
        "--messageProperties", type=_properties, default=[], metavar="JSON",
        help='properties of every post, [{"name": "p", "value": "v", "type": "E_STRING"}] '
        "(default none)",
    )  # fmt: skip
    auto.add_argument(
        "-u", "--maxunconfirmed", type=_max_unconfirmed, default=(1024, 33554432),
        metavar="MSGS:BYTES", help="a reader's flow control (default 1024:33554432)",
    )  # fmt: skip
    auto.add_argument("--log", type=writable_file, metavar="FILE",
                      help="one line per PUT, ACK, PUSH and CONFIRM")  # fmt: skip
    ignored = parser.add_argument_group("accepted for bmqtool compatibility, no effect")
    ignored.add_argument("-D", "--memorydebug", action="store_true", help="(no effect)")
    ignored.add_argument("-t", "--threads", type=integer(1, 1024), metavar="N", help="(no effect)")
    ignored.add_argument("--nosessioneventhandler", action="store_true", help="(no effect)")
    ignored.add_argument(
        "--shutdownGrace", type=integer(0, 1 << 31), metavar="S", help="(no effect)"
    )
    parser.set_defaults(func=handler, own_logging=True)


def tls_context(args: argparse.Namespace) -> ssl.SSLContext | None:
    """The client TLS context for --tlsAuthority, limited to --tlsVersions."""
    import ssl

    from pybmq.errors import UsageError

    if args.tls_authority is None:
        return None
    try:
        context = ssl.create_default_context(cafile=args.tls_authority)
    except (OSError, ssl.SSLError) as exc:
        raise UsageError(
            f"--tlsAuthority {args.tls_authority}: not a usable CA certificate ({exc})"
        ) from None
    by_name = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
    versions = sorted(by_name[v] for v in args.tls_versions)
    context.minimum_version, context.maximum_version = versions[0], versions[-1]
    return context


def session_options(args: argparse.Namespace, tls: ssl.SSLContext | None) -> SessionOptions:
    """bmqtool's session: --timeout for connect, open, configure, close and disconnect; the
    broker's ACKs waited for as long as bmqtool's own default timeout (300 s)."""
    from pybmq.client.options import Credential, SessionOptions

    values: dict[str, Any] = {}
    if args.authn_mechanism:
        credential = Credential(args.authn_mechanism, (args.authn_data or "").encode())
        values["credential_provider"] = lambda: credential
    if tls is not None:
        values["tls"] = tls
    timeout = float(args.timeout)
    return SessionOptions(
        broker_uri=args.broker,
        open_timeout=timeout,
        configure_timeout=timeout,
        close_timeout=timeout,
        disconnect_timeout=timeout,
        stop_timeout=min(timeout, 10.0),
        ack_timeout=300.0,
        user_agent_prefix="pybmq-tool",
        **values,
    )


def handler(args: argparse.Namespace) -> int:
    from pybmq.errors import UsageError

    if args.authn_data and not args.authn_mechanism:
        raise UsageError("--authnData needs --authnMechanism")
    tls = tls_context(args)
    session_options(args, tls)  # a bad combination is a usage error before any input is read
    log = ToolLog(args.log_format, args.verbosity)
    if args.mode == "auto" and (not args.queueuri or not args.queueflags):
        raise UsageError("--mode auto needs --queueuri and --queueflags")
    try:
        if args.mode == "auto":
            return asyncio.run(_auto(args, log, session_options(args, tls)))
        return asyncio.run(_main(args, log, tls))
    except KeyboardInterrupt:
        return 130


def _read_lines(loop: asyncio.AbstractEventLoop, lines: asyncio.Queue[str | None]) -> None:
    """stdin, a line at a time, onto ``lines`` (waiting while it is full); None at the end.

    It reads the file descriptor itself, not ``sys.stdin``: a daemon thread blocked inside a
    buffered reader's lock makes the interpreter abort at exit."""

    def put(line: str | None) -> None:
        asyncio.run_coroutine_threadsafe(lines.put(line), loop).result()

    pending = b""
    overlong = False
    try:
        fd = sys.stdin.fileno()
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            pending += chunk
            *complete, pending = pending.split(b"\n")
            for raw in complete:
                if overlong:  # the end of a line already refused
                    overlong = False
                    continue
                put(raw.decode("utf-8", "replace"))
            if len(pending) > MAX_LINE:
                if not overlong:
                    put(OVERLONG)
                overlong, pending = True, b""
        if pending and not overlong:
            put(pending.decode("utf-8", "replace"))
    except (OSError, ValueError, RuntimeError, asyncio.CancelledError):
        pass
    finally:
        if not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                asyncio.run_coroutine_threadsafe(lines.put(None), loop)


async def _main(args: argparse.Namespace, log: ToolLog, tls: ssl.SSLContext | None) -> int:
    from pybmq.cli.tool_session import ToolSession

    loop = asyncio.get_running_loop()
    lines: asyncio.Queue[str | None] = asyncio.Queue(maxsize=1000)
    threading.Thread(target=_read_lines, args=(loop, lines), daemon=True).start()
    tool = ToolSession(
        log,
        lambda: session_options(args, tls),
        dump=args.dumpmsg,
        auto_confirm=args.confirmmsg,
    )
    try:
        code = await _until_signal(_command_loop(tool, log, lines))
    finally:
        await tool.shutdown()
        log.info("Goodbye.", "BMQTOOL.APPLICATION")
    return code or 0


async def _auto(args: argparse.Namespace, log: ToolLog, options: SessionOptions) -> int:
    from pybmq.cli.tool_auto import run_auto

    return await _until_signal(run_auto(args, log, options))


async def _until_signal(coroutine: Coroutine[Any, Any, T]) -> T | int:
    """``coroutine``'s result, or the exit code of the signal (SIGNAL_EXITS) that cancelled it."""
    loop = asyncio.get_running_loop()
    work = loop.create_task(coroutine)
    stopped_by: list[signal.Signals] = []

    def on_signal(sig: signal.Signals) -> None:
        stopped_by.append(sig)
        work.cancel()

    for sig in SIGNAL_EXITS:
        loop.add_signal_handler(sig, on_signal, sig)
    try:
        return await work
    except asyncio.CancelledError:
        if not stopped_by:
            raise
        return SIGNAL_EXITS[stopped_by[0]]


async def _command_loop(tool: Any, log: ToolLog, lines: asyncio.Queue[str | None]) -> None:
    log.info(
        "Welcome to pybmq tool (bmqtool's commands over pybmq).\n"
        "Type 'help' to see the list of commands. Ctrl-D to quit."
    )
    while True:
        line = await lines.get()
        if line is None:
            return
        line = line.strip()
        if not line:
            continue
        if line in VERBS_TO_QUIT:
            return
        if line == "help":
            log.info(HELP)
            continue
        if line == OVERLONG:
            log.error(f"Unable to decode: a command line has at most {MAX_LINE} characters")
            continue
        try:
            command = parse_command(line)
        except CommandError as exc:
            log.error(
                str(exc)
                if str(exc).startswith(("Unknown", "'"))
                else f"Unable to decode: {line}\n{exc}"
            )
            continue
        await tool.run(command)
