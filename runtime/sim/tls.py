"""The simulator's TLS server context, as the broker's TLS listener behaves (upstream pull request
#1600): TLS 1.3 only, whatever ``versions`` lists (the broker's ``tlsConfig.versions`` takes a
comma-separated list and serves TLS 1.3 whatever else it names); no client certificate is asked
for unless ``client_ca`` is given (pybmq's addition: then one signed by it is required); a
certificate or key that cannot be read stops it before it listens (the broker aborts at start).
"""

from __future__ import annotations

import logging
import re
import ssl

from pybmq.errors import UsageError
from pybmq.sim.auth import AuthConfig

__all__ = ["DEFAULT_TLS_VERSIONS", "ignored_versions", "security_settings", "server_tls_context"]

log = logging.getLogger("pybmq.sim")

DEFAULT_TLS_VERSIONS = "TLSv1.3"
_SEPARATORS = re.compile(r"[, \t]+")


def ignored_versions(versions: str) -> list[str]:
    """The entries of a ``versions`` list the simulator does not serve (all but TLSv1.3),
    logged: the broker ignores them the same way."""
    ignored = [v for v in _SEPARATORS.split(versions) if v and v != "TLSv1.3"]
    if ignored:
        log.info("TLS versions %s ignored: TLS 1.3 is served, as by the broker", ignored)
    return ignored


def server_tls_context(
    cert: str, key: str, client_ca: str | None = None, versions: str = DEFAULT_TLS_VERSIONS
) -> ssl.SSLContext:
    ignored_versions(versions)
    try:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.minimum_version = ssl.TLSVersion.TLSv1_3
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
    tls_versions: str = DEFAULT_TLS_VERSIONS,
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
        context = server_tls_context(tls_cert, tls_key, tls_client_ca, tls_versions)
    return config, context
