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
from typing import TYPE_CHECKING, Any, Protocol

from pybmq.cli.security import add_security_arguments, security_options
from pybmq.errors import PybmqError, UsageError
from pybmq.uri import BROKER_URI_ENV, DEFAULT_BROKER

if TYPE_CHECKING:
    from pybmq.client.options import SessionOptions
    from rich.progress import Progress


class Outcome(enum.Enum):
    """How a post/consume run ended, and its exit code (documented in docs/guide/cli.md)."""

    DONE = ("done", 0)
    NACKED = ("nacked", 1)  # some posts were NACKed by the broker
    INCOMPLETE = ("incomplete", 1)  # consume --count not reached before --idle-timeout
    FAILED = ("failed", 3)  # connection lost or refused, broker error
    TIMEOUT = ("timeout", 4)  # --timeout passed first
    INTERRUPTED = ("interrupted", 130)  # Ctrl-C (SIGINT)

    @property
    def label(self) -> str:
        return self.value[0]

    @property
    def exit_code(self) -> int:
        return int(self.value[1])


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
        default=None,
        help=f"broker URL (default ${BROKER_URI_ENV}, else {DEFAULT_BROKER})",
    )


def add_session_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of every command that opens a session; read back by :func:`session_options`."""
    group = parser.add_argument_group("session")
    add_broker_argument(group)
    group.add_argument(
        "--connect-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="give up connecting after this long (default 10)",
    )
    group.add_argument(
        "--request-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="wait this long for open/close answers and ACKs (default 30)",
    )
    group.add_argument(
        "--reconnect",
        action="store_true",
        help="on a lost connection reconnect, reopen queues and resend unACKed posts",
    )
    group.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="stop the whole run after this long, with a summary (default: no limit)",
    )
    add_security_arguments(parser)


def session_options(args: argparse.Namespace, **values: Any) -> SessionOptions:
    """SessionOptions from the flags of :func:`add_session_arguments` (plus ``values``)."""
    from pybmq.client.options import SessionOptions

    for name in ("connect_timeout", "request_timeout", "timeout"):
        value = getattr(args, name)
        if value is not None and value <= 0:
            raise UsageError(f"--{name.replace('_', '-')} must be > 0 seconds")
    values = {**security_options(args), **values}
    extra = {"broker_uri": args.broker} if args.broker else {}
    return SessionOptions(
        request_timeout=args.request_timeout,
        ack_timeout=args.request_timeout,
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
    """Run ``work``; Ctrl-C or ``timeout`` cancels it (its ``async with`` blocks still close the
    session). Returns (None, "") when it finished, else the outcome that ended it and why."""
    loop = asyncio.get_running_loop()
    task = loop.create_task(work)
    interrupted = False

    def on_sigint() -> None:
        nonlocal interrupted
        interrupted = True
        task.cancel()

    loop.add_signal_handler(signal.SIGINT, on_sigint)
    try:
        await asyncio.wait_for(asyncio.shield(task), timeout)
        return None, ""
    except asyncio.TimeoutError:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return Outcome.TIMEOUT, f"no end within --timeout {timeout:g} s"
    except asyncio.CancelledError:
        if interrupted:
            return Outcome.INTERRUPTED, "interrupted"
        raise
    except UsageError:
        raise
    except PybmqError as exc:
        return Outcome.FAILED, str(exc)
    finally:
        loop.remove_signal_handler(signal.SIGINT)


def report(args: argparse.Namespace, summary: dict[str, Any], line: str) -> int:
    """Print the run's summary (one line, or JSON with ``--json``); returns its exit code."""
    outcome: Outcome = summary.pop("outcome")
    reason = summary.pop("reason", "")
    exit_code = outcome.exit_code
    if args.json:
        document = {"outcome": outcome.label, "exit_code": exit_code, **summary}
        if reason:
            document["reason"] = reason
        print(json.dumps(document), flush=True)
    else:
        why = f" ({reason})" if reason else ""
        print(f"{line}; {outcome.label}{why}", flush=True)
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
