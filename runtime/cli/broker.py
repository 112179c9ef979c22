"""``pybmq broker --bin PATH``: run a real BlazingMQ broker for the command line, until Ctrl-C.

It starts ``bmqbrkr`` (PATH, or ``$BMQ_BROKER_BIN``: a ``bmqbrkr.tsk`` or its launcher) with the
configuration the test suite uses: one node on 127.0.0.1, the test domains
bmq.test.{mem,persistent}.{priority,fanout,broadcast} (fanout apps foo, bar, baz); prints its URL
on the first line once it accepts clients; then waits. Ctrl-C or SIGTERM stops it cleanly, and its
folder (configuration, logs, storage) is removed unless --dir named one. On the default port,
``pybmq post`` and ``pybmq consume`` find it without --broker.

With ``--cluster N`` it starts a replicated cluster of N nodes on ephemeral ports and a proxy on
--port in front of them (legacy mode, elections shortened for tests, the persistent and
strongly consistent ``.sc`` test domains), waits until a leader and a primary are active, and
prints the proxy's URL first, then every node's (for ``endpoints``). Kill a node's pid to see a
failover.

example: pybmq broker --bin /path/to/bmqbrkr.tsk &
         pybmq post bmq://bmq.test.mem.priority/q1 hello
         pybmq broker --cluster 3 &
         pybmq post bmq://bmq.test.persistent.priority/q1 hello
exit codes: 0 stopped by Ctrl-C or SIGTERM, 2 bad usage (the flag is named: no broker
executable, a busy --port), 3 the broker did not start, or exited while running (its console
output is shown)
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

from pybmq.cli.common import Outcome, Subcommands, describe
from pybmq.cli.validate import existing_dir, integer, listen_failure, port, seconds, text
from pybmq.errors import UsageError

if TYPE_CHECKING:
    from pathlib import Path

DEFAULT_PORT = 30114
_POLL = 0.5


class Running(Protocol):
    """What this command needs of what it started (a broker; a cluster has the same)."""

    @property
    def url(self) -> str: ...

    @property
    def running(self) -> bool: ...

    @property
    def folder(self) -> Path: ...


def add_parser(subparsers: Subcommands) -> None:
    parser = subparsers.add_parser(
        "broker",
        help="run a real BlazingMQ broker (bmqbrkr) for the command line",
        description=describe(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--bin",
        type=text,
        default=None,
        metavar="PATH",
        help="the broker executable, bmqbrkr.tsk or its launcher (default $BMQ_BROKER_BIN)",
    )
    parser.add_argument(
        "--port",
        type=port,
        default=DEFAULT_PORT,
        help=f"TCP port on 127.0.0.1; 0 picks a free one (default {DEFAULT_PORT})",
    )
    parser.add_argument(
        "--dir",
        type=existing_dir,
        default=None,
        help="keep configuration, logs and storage in this folder (default: a temporary one, "
        "removed at the end); persistent queues survive a restart on the same folder",
    )
    parser.add_argument(
        "--cluster",
        type=integer(1, 9),
        default=None,
        metavar="N",
        help="a replicated cluster of N nodes (ephemeral ports) behind a proxy on --port",
    )
    parser.add_argument(
        "--start-timeout",
        type=seconds,
        default=60.0,
        metavar="SECONDS",
        help="give up if it does not accept clients within this long (default 60)",
    )
    parser.set_defaults(func=handler)


def _executable(args: argparse.Namespace) -> str:
    import os
    import shutil

    from pybmq.testing.real_broker import BROKER_BIN_ENV, broker_executable

    given = args.bin or broker_executable()
    if given is None:
        raise UsageError(f"--bin: no broker executable given, and ${BROKER_BIN_ENV} is not set")
    found = shutil.which(given) or (given if os.access(given, os.X_OK) else None)
    if found is None or os.path.isdir(found):
        flag = "--bin" if args.bin else f"${BROKER_BIN_ENV}"
        raise UsageError(f"{flag} {given}: not an executable file")
    return os.path.abspath(found)  # the broker runs in its own folder: a relative path would break


def _free(port_number: int) -> int:
    """``port_number`` if nothing listens on it (0: a free one); else UsageError naming --port."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port_number))
        except OSError as exc:
            raise UsageError(listen_failure("--port", port_number, exc)) from None
        bound: int = probe.getsockname()[1]
        return bound


@contextlib.contextmanager
def _started(args: argparse.Namespace) -> Iterator[Running]:
    """What the flags ask for, running for the block: one broker, or a cluster with a proxy."""
    from pybmq.testing.real_broker import RealBroker

    executable = _executable(args)
    if args.cluster is not None:
        from pybmq.testing.cluster import RealCluster

        with RealCluster(
            executable,
            args.dir,
            nodes=args.cluster,
            proxy=True,
            proxy_port=_free(args.port),
            start_timeout=args.start_timeout,
            ready_timeout=args.start_timeout,
        ) as cluster:
            yield cluster
        return
    with RealBroker(
        executable, args.dir, port=_free(args.port), start_timeout=args.start_timeout
    ) as broker:
        yield broker


def _wait_for_stop(running: Running) -> signal.Signals | None:
    """Until SIGINT or SIGTERM (returned), or the broker exits by itself (None)."""
    stop = threading.Event()
    received: list[signal.Signals] = []

    def on_signal(signum: int, _frame: Any) -> None:
        received.append(signal.Signals(signum))
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        while not stop.wait(_POLL):
            if not running.running:
                return None
        return received[0]
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _console_tail(running: Running) -> str:
    console = running.folder / "console.log"
    try:
        return console.read_bytes()[-2000:].decode(errors="replace")
    except OSError:
        return ""


def handler(args: argparse.Namespace) -> int:
    from pybmq.testing.real_broker import BrokerStartError

    # SIGTERM while the broker starts: the same clean way out as Ctrl-C (the broker runs in a
    # session of its own, so nothing else would stop it).
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        with _started(args) as running:
            kept = "kept" if args.dir else "removed when it stops"
            print(f"pybmq broker listening on {running.url}", flush=True)
            for node_url in getattr(running, "urls", ()):  # a cluster's members
                print(f"pybmq broker: cluster node {node_url}", flush=True)
            print(
                f"pybmq broker: logs and storage in {running.folder} ({kept}); Ctrl-C stops it",
                flush=True,
            )
            stopped_by = _wait_for_stop(running)
            if stopped_by is None:
                tail = _console_tail(running)
                print(f"pybmq broker: the broker exited by itself\n{tail}", file=sys.stderr)
                return Outcome.FAILED.exit_code
            print(f"pybmq broker stopping ({stopped_by.name})", flush=True)
    except BrokerStartError as exc:
        print(f"pybmq broker: {exc}", file=sys.stderr)
        return Outcome.FAILED.exit_code
    return 0
