"""The simulator's TLS server context: its certificate and key, and optionally the CA whose
client certificates it requires."""

from __future__ import annotations

import ssl

from pybmq.errors import UsageError
from pybmq.sim.auth import AuthConfig

__all__ = ["security_settings", "server_tls_context"]


def server_tls_context(cert: str, key: str, client_ca: str | None = None) -> ssl.SSLContext:
    try:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key)
        if client_ca is not None:
            context.load_verify_locations(client_ca)
            context.verify_mode = ssl.CERT_REQUIRED
    except (OSError, ssl.SSLError) as exc:
        raise UsageError(f"cannot load TLS files: {exc}") from exc
    return context


def security_settings(
    auth: list[str] | None = None,
    auth_lifetime_ms: int | None = None,
    tls_cert: str | None = None,
    tls_key: str | None = None,
    tls_client_ca: str | None = None,
) -> tuple[AuthConfig | None, ssl.SSLContext | None]:
    """The simulator's authentication and TLS from ``pybmq sim``'s flags (or the pytest
    marker's keywords of the same names): no ``auth`` means no AUTHENTICATION exchange."""
    if (tls_cert is None) != (tls_key is None):
        raise UsageError("--tls-cert and --tls-key go together")
    if tls_client_ca is not None and tls_cert is None:
        raise UsageError("--tls-client-ca needs --tls-cert/--tls-key")
    if auth_lifetime_ms is not None and not auth:
        raise UsageError("--auth-lifetime-ms needs --auth")
    config = AuthConfig.from_spec(list(auth), auth_lifetime_ms) if auth else None
    context = None
    if tls_cert is not None and tls_key is not None:
        context = server_tls_context(tls_cert, tls_key, tls_client_ca)
    return config, context
