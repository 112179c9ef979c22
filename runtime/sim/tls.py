"""The simulator's TLS server context: its certificate and key, and optionally the CA whose
client certificates it requires."""

from __future__ import annotations

import ssl

from pybmq.errors import UsageError


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
