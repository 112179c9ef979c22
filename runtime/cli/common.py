"""What every subcommand shares: logging flags, the session flags and their one builder, the
outcome of a run (exit codes), its summary line or JSON, and a progress bar only on a terminal."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import enum
import json
import logging
import os
import signal
import sys
from collections.abc import Coroutine, Iterator
from typing import IO, TYPE_CHECKING, Any, Protocol

from pybmq.cli.security import add_security_arguments, security_options
from pybmq.cli.validate import broker_url, seconds
from pybmq.errors import PybmqError, UsageError
from pybmq.printable import escape_controls
from pybmq.uri import BROKER_URI_ENV, DEFAULT_BROKER

if TYPE_CHECKING:
    from pybmq.client.options import SessionOptions
    from rich.progress import Progress

__all__ = [
    "EXIT_CODES",
    "STOP_SIGNALS",
    "ArgumentTarget",
    "Outcome",
    "Subcommands",
    "add_broker_argument",
    "add_json_argument",
    "add_logging_arguments",
    "add_session_arguments",
    "closed_pipe_is_quiet",
    "configure_logging",
    "describe",
    "latency_text",
    "progress_bar",
    "report",
    "session_options",
    "stop_on_signals",
    "supervise",
]


class Outcome(enum.Enum):
    """How a post/consume run ended, and its exit code (listed by ``EXIT_CODES``)."""

    DONE = ("done", 0)
    NACKED = ("nacked", 1)  # some posts were NACKed by the broker
    INCOMPLETE = ("incomplete", 1)  # consume --count not reached before --idle-timeout
    BAD_INPUT = ("bad input", 2)  # a message read from stdin cannot be posted (line named)
    FAILED = ("failed", 3)  # connection lost or refused, broker error
    TIMEOUT = ("timeout", 4)  # --timeout passed first
    SILENT = ("no answer", 5)  # the broker accepted the connection, then did not answer
    HANGUP = ("hung up", 129)  # SIGHUP (128 + 1)
    INTERRUPTED = ("interrupted", 130)  # Ctrl-C (SIGINT, 128 + 2)
    TERMINATED = ("terminated", 143)  # SIGTERM (128 + 15)

    @property
    def label(self) -> str:
        return self.value[0]

    @property
    def exit_code(self) -> int:
        return int(self.value[1])


EXIT_CODES = (
    "exit codes: 0 done, 1 {partial}, 2 bad usage (the flag is named) or bad input, "
    "3 connection lost or refused / broker error, 4 --timeout, 5 broker silent (connect, "
    "negotiate, open or close did not finish within its timeout), 129 SIGHUP, 130 Ctrl-C "
    "(SIGINT), 143 SIGTERM. post and consume print their summary on every exit but a usage "
    "error (refused before connecting)"
)

# The signals that end a post/consume run with its summary, and the outcome each gives.
STOP_SIGNALS = {
    signal.SIGINT: Outcome.INTERRUPTED,
    signal.SIGTERM: Outcome.TERMINATED,
    signal.SIGHUP: Outcome.HANGUP,
}


def describe(doc: str | None) -> str:
    """A module docstring as --help text: without its reST ``literal`` markup."""
    return (doc or "").replace("``", "")


def add_logging_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("logging")
    group.add_argument(
        "-v", "--verbose", action="count", default=0, help="more log output: -v INFO, -vv DEBUG"
    )
    group.add_argument(
        "-q", "--quiet", action="store_true", help="errors only: no progress, no warnings"
    )
    group.add_argument(
        "--log-level",
        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
        type=str.upper,
        help="log level (overrides -v/-q; default WARNING)",
    )


def configure_logging(args: argparse.Namespace) -> None:
    if args.log_level:
        level = getattr(logging, args.log_level)
    elif args.quiet:
        level = logging.ERROR
    else:
        level = (logging.WARNING, logging.INFO)[args.verbose] if args.verbose < 2 else logging.DEBUG
    logging.basicConfig(
        level=level, stream=sys.stderr, format="%(asctime)s %(name)s %(levelname)s %(message)s"
    )


class Subcommands(Protocol):
    """What a subcommand's ``add_parser`` uses of ``ArgumentParser.add_subparsers()``."""

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser: ...


class ArgumentTarget(Protocol):
    """A parser or an argument group: something ``add_argument`` can be called on."""

    def add_argument(self, *name_or_flags: str, **kwargs: Any) -> argparse.Action: ...


def add_broker_argument(parser: ArgumentTarget) -> None:
    """``--broker URL``, read back as ``args.broker`` (None: ``$BMQ_BROKER_URI`` or the default)."""
    parser.add_argument(
        "--broker",
        type=broker_url,
        default=None,
        help=f"broker URL (default ${BROKER_URI_ENV}, else {DEFAULT_BROKER})",
    )


def add_session_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of every command that opens a session; read back by :func:`session_options`."""
    group = parser.add_argument_group("session")
    add_broker_argument(group)
    group.add_argument(
        "--connect-timeout",
        type=seconds,
        default=10.0,
        metavar="SECONDS",
        help="give up connecting after this long (default 10)",
    )
    group.add_argument(
        "--request-timeout",
        type=seconds,
        default=30.0,
        metavar="SECONDS",
        help="wait this long for the negotiation, open/close answers and ACKs (default 30)",
    )
    group.add_argument(
        "--reconnect",
        action="store_true",
        help="on a lost connection reconnect, reopen queues and resend unACKed posts",
    )
    group.add_argument(
        "--timeout",
        type=seconds,
        default=None,
        metavar="SECONDS",
        help="stop the whole run after this long, with a summary (default: no limit)",
    )
    add_security_arguments(parser)


def session_options(args: argparse.Namespace, **values: Any) -> SessionOptions:
    """SessionOptions from the flags of :func:`add_session_arguments` (plus ``values``). A
    stop waits at most ``--request-timeout`` (10 s at most), so a silent broker ends the run
    soon after the answer it did not give."""
    from pybmq.client.options import SessionOptions

    values = {**security_options(args), **values}
    extra = {"broker_uri": args.broker} if args.broker else {}
    return SessionOptions(
        request_timeout=args.request_timeout,
        ack_timeout=args.request_timeout,
        stop_timeout=min(args.request_timeout, 10.0),
        reconnect=args.reconnect,
        **extra,
        **values,
    )


def stop_on_signals() -> asyncio.Event:
    """An event set by SIGINT or SIGTERM, for the commands that serve until stopped (sim, tap)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    return stop


async def supervise(
    work: Coroutine[Any, Any, object], timeout: float | None
) -> tuple[Outcome | None, str]:
    """Run ``work``; SIGINT, SIGTERM, SIGHUP or ``timeout`` cancel it (its ``async with`` and
    ``finally`` blocks still close the session). Returns (None, "") when it finished, else the
    outcome that ended it and why.

    The timeout is the wait's own (``asyncio.wait``), never an exception caught by type: a
    ``RequestTimeoutError`` from the session is also a ``TimeoutError``, and means the broker
    did not answer, not that ``--timeout`` passed."""
    from pybmq.cli.content import ContentError
    from pybmq.cli.session import BrokerSilentError

    loop = asyncio.get_running_loop()
    task = loop.create_task(work)
    received: list[signal.Signals] = []

    def on_signal(sig: signal.Signals) -> None:
        if not received:
            received.append(sig)
        task.cancel()

    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, on_signal, sig)
    try:
        done, _ = await asyncio.wait({task}, timeout=timeout)
        if not done:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            if received:  # a signal came while the run was being stopped
                return STOP_SIGNALS[received[0]], f"stopped by {received[0].name}"
            return Outcome.TIMEOUT, f"no end within --timeout {timeout:g} s"
    finally:
        for sig in STOP_SIGNALS:
            loop.remove_signal_handler(sig)
    if received:
        if not task.cancelled():
            task.exception()  # an error while it was being stopped: the signal says why
        return STOP_SIGNALS[received[0]], f"stopped by {received[0].name}"
    if task.cancelled():
        raise asyncio.CancelledError
    error = task.exception()
    if error is None:
        return None, ""
    if isinstance(error, BrokerSilentError):
        return Outcome.SILENT, str(error)
    if isinstance(error, BrokenPipeError):  # `| head`: the reader has what it wanted
        return Outcome.DONE, "stdout closed by its reader"
    if isinstance(error, ContentError):
        return Outcome.BAD_INPUT, str(error)
    if isinstance(error, UsageError):
        raise error
    if isinstance(error, PybmqError):
        return Outcome.FAILED, str(error)
    raise error


def report(
    args: argparse.Namespace, summary: dict[str, Any], line: str, out: IO[str] | None = None
) -> int:
    """Print the run's summary (one line, or JSON with ``--json``) to ``out`` (default stdout;
    stderr when stdout carries the messages); returns its exit code."""
    out = out if out is not None else sys.stdout
    outcome: Outcome = summary.pop("outcome")
    reason = summary.pop("reason", "")
    exit_code = outcome.exit_code
    if args.json:
        document = {"outcome": outcome.label, "exit_code": exit_code, **summary}
        if reason:
            document["reason"] = reason
        print(json.dumps(document), file=out, flush=True)
    else:  # the reason may quote input: printed with its control characters escaped
        why = f" ({escape_controls(reason, keep_lines=False)})" if reason else ""
        print(f"{line}; {outcome.label}{why}", file=out, flush=True)
    return exit_code


def latency_text(latency: dict[str, float] | None) -> str:
    if latency is None:
        return ""
    return "; latency " + " ".join(f"{k} {v:.2f} ms" for k, v in latency.items())


def progress_bar(args: argparse.Namespace, name: str) -> Progress:
    """A progress bar with rate and ETA on stderr; disabled when stderr is not a terminal."""
    from pybmq.client.loadgen import progress_columns
    from rich.console import Console
    from rich.progress import Progress

    return Progress(
        *progress_columns(name),
        console=Console(stderr=True),
        disable=args.quiet or not sys.stderr.isatty(),
        transient=True,
    )


def add_json_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON object")


@contextlib.contextmanager
def closed_pipe_is_quiet() -> Iterator[None]:
    """A reader that went away (``| head``) is not an error: stop writing, no traceback."""
    try:
        yield
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # silence the flush at interpreter exit
