"""The client's TLS context from ``SessionOptions``: the one given, or one built from CA (and
client certificate/key) paths; host names are always checked."""

from __future__ import annotations

import asyncio
import ssl

from pybmq.client.options import SessionOptions
from pybmq.errors import UsageError

__all__ = ["client_tls_context", "connect_failure"]


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


def connect_failure(broker: str, exc: BaseException, tls: bool, timeout: float) -> str:
    """A connect error, never with an empty reason (a timeout's str() is), saying when it is a
    TLS problem (and the likely mix-up)."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"TLS handshake with {broker} failed: certificate not trusted or wrong host ({exc})"
    if isinstance(exc, ssl.SSLError) or (tls and isinstance(exc, ConnectionError)):
        return f"TLS handshake with {broker} failed (is the broker listening for TLS?): {exc}"
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        reason = f"no connection within {timeout:g} s"
    elif isinstance(exc, OSError) and exc.strerror:
        reason = exc.strerror
    else:
        reason = str(exc) or type(exc).__name__
    return f"cannot connect to {broker}: {reason}"
