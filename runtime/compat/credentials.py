"""``authn_credential_provider=``: the official SDK's authentication credential provider (its open
pull request #61, bloomberg/blazingmq-sdk-python), on the client's credential provider.

A provider is a callable taking nothing and returning ``(mechanism, data)`` (a ``str`` and
``bytes``) or ``None``. It is called before every authentication: the first one of each
connection (a reconnect authenticates again) and each re-authentication before the broker's
lifetime for the credential runs out, so a token can be refreshed between calls. As the pull
request's adapter does, a provider that raises or returns anything else is logged and counts as
``None``: no credential, so that connection cannot start (the C++ core's rule), and the session
keeps trying until its connect timeout, asking the provider again each time. It runs on the
session's I/O thread: keep it quick.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from pybmq.client.options import Credential, CredentialProvider

__all__ = ["AuthnCredentialProvider", "credential_provider"]

log = logging.getLogger("pybmq.compat")

AuthnCredentialProvider = Callable[[], "tuple[str, bytes] | None"]
"""A callable returning the credential to authenticate with, ``(mechanism, data)``, or None."""


def credential_provider(provider: AuthnCredentialProvider | None) -> CredentialProvider | None:
    """The client's provider for an official-SDK one (None: do not authenticate)."""
    if provider is None:
        return None
    if not callable(provider):
        raise TypeError("authn_credential_provider must be a callable or None")

    def credential() -> Credential | None:
        try:
            result = provider()
        except Exception:
            log.exception("Error in authentication credential callback")
            return None
        if result is None:
            return None
        if (
            not isinstance(result, tuple)
            or len(result) != 2
            or not isinstance(result[0], str)
            or not isinstance(result[1], bytes)
        ):
            log.error(
                "Error in authentication credential callback: it must return (str, bytes) or "
                "None, not %s",
                type(result).__name__,
            )
            return None
        mechanism, data = result
        if not mechanism:
            log.error("Error in authentication credential callback: an empty mechanism")
            return None
        return Credential(mechanism, data)

    return credential
