"""The client's TLS: its context from ``SessionOptions`` (the one given, or one built from CA and
client certificate/key paths; host names are always checked), the connect that starts TLS right
after TCP, as the broker expects, and the errors that say which side of the handshake failed.

A TLS client pointed at a plain BlazingMQ port gets no answer at all (the broker reads the
ClientHello as the start of a very large frame and waits for the rest), so the handshake has its
own short bound, ``tls_handshake_timeout``, well under the connect timeout.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from typing import TypeVar

from pybmq.client.options import SessionOptions
from pybmq.errors import SessionStoppedError, TlsHandshakeError, UsageError
from pybmq.uri import parse_broker_url

P = TypeVar("P", bound=asyncio.BaseProtocol)

# OpenSSL's verification results worth their own words (X509_V_ERR_*).
_EXPIRED = 10
_HOSTNAME_MISMATCH = 62


class HandshakeTimeout(ConnectionAbortedError):
    """No TLS answer within the handshake bound (asyncio reports its own bound this way)."""


__all__ = [
    "HandshakeTimeout",
    "client_tls_context",
    "connect_error",
    "connect_failure",
    "open_connection",
    "open_streams",
]


def client_tls_context(options: SessionOptions) -> ssl.SSLContext | None:
    """None for plain TCP."""
    if options.tls is not None:
        return options.tls
    if options.tls_ca is None:
        return None
    try:
        context = ssl.create_default_context(cafile=options.tls_ca)
        if options.tls_cert is not None:
            context.load_cert_chain(options.tls_cert, options.tls_key)
    except (OSError, ssl.SSLError) as exc:
        raise UsageError(f"cannot load TLS files: {exc}") from exc
    return context


async def open_connection(
    factory: Callable[[], P],
    host: str,
    port: int,
    *,
    tls: ssl.SSLContext | None,
    server_name: str | None,
    connect_timeout: float,
    handshake_timeout: float,
) -> tuple[asyncio.Transport, P]:
    """TCP within ``connect_timeout``; with ``tls``, the handshake starts as soon as TCP is up
    and must end within ``handshake_timeout`` (HandshakeTimeout), checking ``server_name``
    (default: ``host``)."""
    loop = asyncio.get_running_loop()
    if tls is None:
        connecting = loop.create_connection(factory, host, port)
        bound = connect_timeout
    else:
        connecting = loop.create_connection(
            factory,
            host,
            port,
            ssl=tls,
            server_hostname=server_name or host,
            ssl_handshake_timeout=handshake_timeout,
        )
        bound = connect_timeout + handshake_timeout
    try:
        transport, protocol = await asyncio.wait_for(connecting, bound)
    except ConnectionAbortedError as exc:
        # With TLS, asyncio ends a handshake past its bound this way (3.10 to 3.13 alike).
        if tls is None:
            raise
        raise HandshakeTimeout(f"no TLS answer within {handshake_timeout:g} s") from exc
    assert isinstance(transport, asyncio.Transport)
    return transport, protocol


async def open_streams(
    options: SessionOptions, *, connect_timeout: float, limit: int
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """``open_connection`` to ``options.broker_uri`` with its TLS options, as asyncio streams
    (what ``asyncio.open_connection`` returns, reading ``limit`` bytes at most at a time), for
    the tools that read and write a broker connection as streams (``pybmq admin``, ``tap``)."""
    host, port = parse_broker_url(options.broker_uri)
    reader = asyncio.StreamReader(limit=limit)
    transport, protocol = await open_connection(
        lambda: asyncio.StreamReaderProtocol(reader),
        host,
        port,
        tls=client_tls_context(options),
        server_name=options.tls_server_name,
        connect_timeout=connect_timeout,
        handshake_timeout=options.tls_handshake_timeout,
    )
    return reader, asyncio.StreamWriter(transport, protocol, reader, asyncio.get_running_loop())


def _tls_failure(exc: BaseException, tls: bool) -> bool:
    """An error of the handshake itself: TLS said no, or the peer hung up in the middle of it
    (a refused TCP connection comes before any TLS)."""
    if isinstance(exc, ssl.SSLError):
        return True
    return tls and isinstance(exc, ConnectionError) and not isinstance(exc, ConnectionRefusedError)


def connect_failure(broker: str, exc: BaseException, tls: bool, timeout: float) -> str:
    """A connect error, never with an empty reason (a timeout's str() is), saying when it is a
    TLS problem (and the likely mix-up)."""
    if isinstance(exc, HandshakeTimeout):
        return (
            f"TLS handshake with {broker} failed: {exc} "
            "(is the broker listening for TLS? a plain BlazingMQ port never answers TLS)"
        )
    if isinstance(exc, ssl.SSLCertVerificationError):
        detail = exc.verify_message or exc.reason or str(exc)
        if exc.verify_code == _HOSTNAME_MISMATCH:
            why = f"is issued for another host name ({detail}; tls_server_name sets the name)"
        elif exc.verify_code == _EXPIRED:
            why = f"has expired ({detail})"
        else:
            why = f"is not trusted: not signed by the CA given in tls_ca ({detail})"
        return f"TLS handshake with {broker} failed: the broker's certificate {why}"
    if _tls_failure(exc, tls):
        return f"TLS handshake with {broker} failed (is the broker listening for TLS?): {exc}"
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        reason = f"no connection within {timeout:g} s"
    elif isinstance(exc, OSError) and exc.strerror:
        reason = exc.strerror
    else:
        reason = str(exc) or type(exc).__name__
    return f"cannot connect to {broker}: {reason}"


def connect_error(
    broker: str, exc: BaseException, tls: bool, timeout: float
) -> SessionStoppedError:
    """The typed error for a failed connect: TlsHandshakeError when TLS is why (with its
    reason), else SessionStoppedError; the message is ``connect_failure``'s."""
    message = connect_failure(broker, exc, tls, timeout)
    if isinstance(exc, HandshakeTimeout):
        return TlsHandshakeError(message, "timeout")
    if isinstance(exc, ssl.SSLCertVerificationError):
        return TlsHandshakeError(message, "certificate", exc.verify_code)
    if _tls_failure(exc, tls):
        return TlsHandshakeError(message, "handshake")
    return SessionStoppedError(message)
