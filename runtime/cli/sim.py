"""``pybmq sim``: run the broker simulator until SIGINT/SIGTERM."""

from __future__ import annotations

import argparse
import asyncio

from pybmq.cli.common import Subcommands, stop_on_signals
from pybmq.cli.validate import (
    auth_spec,
    byte_size,
    integer,
    listen_failure,
    port,
    readable_file,
    seconds,
    share,
    text,
)
from pybmq.errors import UsageError

__all__ = ["add_parser", "handler"]


def add_parser(subparsers: Subcommands) -> None:
    parser = subparsers.add_parser(
        "sim",
        help="run an in-memory BlazingMQ broker simulator",
        description=(
            "An in-memory, strict BlazingMQ broker for tests and demos. Domains ending in "
            ".priority, .fanout (appIds foo, bar, baz) and .broadcast exist; nothing else does."
        ),
        epilog="example: pybmq sim --port 0 --nack-share 0.01 -v",
    )
    parser.add_argument(
        "--host", type=text, default="127.0.0.1", help="address to listen on (default 127.0.0.1)"
    )
    parser.add_argument(
        "--port", type=port, default=30114, help="TCP port; 0 picks a free one (default 30114)"
    )
    parser.add_argument(
        "--heartbeat-ms",
        type=integer(1, 10**9),
        default=3000,
        help="heartbeat interval advertised to clients (default 3000)",
    )
    parser.add_argument(
        "--max-missed-heartbeats",
        type=integer(1, 10**6),
        default=10,
        help="drop a client after this many silent intervals (default 10)",
    )
    parser.add_argument(
        "--no-configure-stream",
        action="store_true",
        help="do not advertise SUBSCRIPTIONS:CONFIGURE_STREAM (clients then use configureQueueStream)",
    )
    parser.add_argument(
        "--no-properties-ex",
        action="store_true",
        help="do not advertise MPS:MESSAGE_PROPERTIES_EX (play a broker that takes the old "
        "message-properties format only)",
    )
    faults = parser.add_argument_group("fault injection")
    faults.add_argument(
        "--drop-after-events",
        type=integer(1),
        metavar="N",
        help="close a client's connection after every N events it sends",
    )
    faults.add_argument(
        "--drop-probability",
        type=share,
        default=0.0,
        metavar="P",
        help="close a client's connection after any event with probability P",
    )
    faults.add_argument(
        "--max-drops", type=integer(0), metavar="N", help="stop dropping connections after N drops"
    )
    faults.add_argument(
        "--seed", type=integer(0), help="seed of the fault injector's random choices"
    )
    faults.add_argument(
        "--ack-delay-ms", type=integer(0, 10**9), default=0, help="hold every ACK back this long"
    )
    faults.add_argument(
        "--nack-share",
        type=share,
        default=0.0,
        metavar="P",
        help="NACK this share of PUTs (STORAGE_FAILURE)",
    )
    faults.add_argument(
        "--no-heartbeats", action="store_true", help="never answer nor send heartbeats"
    )
    faults.add_argument(
        "--refuse-negotiation", action="store_true", help="refuse every client (E_REFUSED)"
    )
    faults.add_argument(
        "--restart-every",
        type=seconds,
        metavar="SECONDS",
        help="restart (same port, queues kept) this often",
    )
    security = parser.add_argument_group("authentication and TLS")
    security.add_argument(
        "--auth",
        type=auth_spec,
        action="append",
        default=[],
        metavar="MECH[:FILE]",
        help="require authentication: BASIC:<file of user:password lines> and/or ANONYMOUS "
        "(repeatable; without ANONYMOUS, clients that do not authenticate are refused; "
        "default: no authentication)",
    )
    security.add_argument(
        "--auth-lifetime-ms",
        type=integer(1, 10**9),
        metavar="MS",
        help="credential lifetime: clients must re-authenticate within it or are disconnected",
    )
    security.add_argument(
        "--tls-cert", type=readable_file, metavar="PEM", help="serve TLS with this certificate"
    )
    security.add_argument(
        "--tls-key", type=readable_file, metavar="PEM", help="the certificate's private key"
    )
    security.add_argument(
        "--tls-port",
        type=integer(0, 65535),
        metavar="PORT",
        help="with --tls-cert/--tls-key: keep --port plain and serve TLS on this port too "
        "(0: any free one), as a broker with a plain and a TLS listener; default: --port "
        "serves TLS only",
    )
    security.add_argument(
        "--tls-versions",
        type=text,
        default="TLSv1.3",
        metavar="LIST",
        help="the broker's tlsConfig.versions: TLS 1.3 is served whatever else it lists, as by "
        "the broker (default TLSv1.3)",
    )
    security.add_argument(
        "--tls-client-ca",
        type=readable_file,
        metavar="PEM",
        help="require client certificates signed by this CA",
    )
    limits = parser.add_argument_group("bounds")
    limits.add_argument(
        "--max-connections",
        type=integer(1, 10**7),
        default=10000,
        metavar="N",
        help="connections at once, TLS handshakes in progress included; more are closed at "
        "once (default 10000)",
    )
    limits.add_argument(
        "--max-memory",
        type=byte_size(1 << 20),
        default=1 << 30,
        metavar="SIZE",
        help="memory budget of all queues together: stored messages, what keeping each costs "
        "and the de-duplication windows; past it PUTs are NACKed LIMIT_BYTES and clients stay "
        "connected (bytes, or with KiB, MiB, GiB; default 1GiB)",
    )
    limits.add_argument(
        "--tls-handshake-timeout-ms",
        type=integer(1, 10**9),
        default=10000,
        metavar="MS",
        help="close a TLS connection whose handshake takes longer (default 10000)",
    )
    limits.add_argument(
        "--admin-user",
        type=text,
        action="append",
        default=None,
        metavar="USER",
        help="only this authenticated user may run admin commands (repeatable; default: any "
        "admin connection)",
    )
    parser.set_defaults(func=handler)


async def _serve(args: argparse.Namespace) -> int:
    # Imported here so that `pybmq --help` does not load the engine and the generated codecs.
    from pybmq.sim.config import BrokerConfig
    from pybmq.sim.faults import FaultConfig
    from pybmq.sim.server import BrokerSimulator, SimulatorError
    from pybmq.sim.tls import security_settings

    auth, tls = security_settings(
        args.auth,
        args.auth_lifetime_ms,
        args.tls_cert,
        args.tls_key,
        args.tls_client_ca,
        args.tls_versions,
    )
    config = BrokerConfig(
        heartbeat_interval_ms=args.heartbeat_ms,
        max_missed_heartbeats=args.max_missed_heartbeats,
        advertise_subscriptions=not args.no_configure_stream,
        extended_properties=not args.no_properties_ex,
        auth=auth,
        max_connections=args.max_connections,
        memory_limit_bytes=args.max_memory,
        tls_handshake_timeout_ms=args.tls_handshake_timeout_ms,
        admin_users=frozenset(args.admin_user) if args.admin_user else None,
    )
    faults = FaultConfig(
        drop_after_events=args.drop_after_events,
        drop_probability=args.drop_probability,
        max_drops=args.max_drops,
        seed=args.seed,
        ack_delay_ms=args.ack_delay_ms,
        nack_share=args.nack_share,
        answer_heartbeats=not args.no_heartbeats,
        refuse_negotiation=args.refuse_negotiation,
    )
    sim = BrokerSimulator(
        config, faults=faults if faults.active else None, tls=tls, tls_port=args.tls_port
    )
    try:
        await sim.start(args.host, args.port)
    except SimulatorError as exc:
        cause = exc.__cause__
        if not isinstance(cause, OSError):
            raise
        where = f"{args.host}:{args.port}"
        raise UsageError(listen_failure("--host/--port/--tls-port", where, cause)) from None
    stop = stop_on_signals()
    tls_beside = f" and TLS on {sim.tls_url}" if args.tls_port is not None else ""
    print(f"pybmq sim listening on {sim.url}{tls_beside}", flush=True)
    try:
        while True:
            try:
                await asyncio.wait_for(stop.wait(), args.restart_every)
                break
            except asyncio.TimeoutError:
                await sim.restart()
                print(f"pybmq sim restarted on {sim.url}", flush=True)
    finally:
        await sim.stop()
        stats = sim.broker.stats
        print(
            f"pybmq sim stopped: {stats.sessions} sessions, {stats.puts} PUTs, {stats.pushes} PUSHes, "
            f"{stats.confirms} CONFIRMs, {stats.nacks} NACKs, {len(stats.violations)} protocol violations",
            flush=True,
        )
    return 0


def _check_tls_files(args: argparse.Namespace) -> None:
    """Load the PEM files before listening, so a wrong one is named with its flag."""
    import ssl

    if bool(args.tls_cert) != bool(args.tls_key):
        raise UsageError("--tls-cert and --tls-key go together")
    if args.tls_port is not None and not args.tls_cert:
        raise UsageError("--tls-port needs --tls-cert and --tls-key")
    try:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        if args.tls_cert:
            flags = f"--tls-cert {args.tls_cert} / --tls-key {args.tls_key}"
            context.load_cert_chain(args.tls_cert, args.tls_key)
        if args.tls_client_ca:
            flags = f"--tls-client-ca {args.tls_client_ca}"
            context.load_verify_locations(cafile=args.tls_client_ca)
    except (OSError, ssl.SSLError) as exc:
        raise UsageError(f"{flags}: not usable ({exc})") from None


def handler(args: argparse.Namespace) -> int:
    _check_tls_files(args)
    return asyncio.run(_serve(args))
