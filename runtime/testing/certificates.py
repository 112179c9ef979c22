"""A test CA and a broker certificate it signs, made on the spot (with ``trustme``), as PEM files
a broker's ``tlsConfig`` and a client's ``tls_ca`` name.

    certs = TestCertificates.make(folder)              # for localhost and 127.0.0.1
    expired = TestCertificates.make(folder, expired=True)

The certificate names ``localhost`` and ``127.0.0.1`` (clients may use either URL) and is valid
for a day around now, or expired an hour ago with ``expired=True``. ``trustme`` is a test
dependency (``pip install trustme``); a missing one is a UsageError that says so.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

from pybmq.errors import UsageError

__all__ = ["SERVER_NAMES", "TestCertificates"]

SERVER_NAMES = ("localhost", "127.0.0.1")


@dataclass(frozen=True)
class TestCertificates:
    """PEM files: ``ca`` (what clients trust), ``certificate`` and ``key`` (the broker's)."""

    __test__ = False  # not a pytest test class, despite its name

    ca: Path
    certificate: Path
    key: Path

    @classmethod
    def make(
        cls,
        folder: Path,
        *,
        names: tuple[str, ...] = SERVER_NAMES,
        expired: bool = False,
    ) -> TestCertificates:
        """A new CA and a certificate for ``names`` it signs, written into ``folder``
        (created): ``ca.pem``, ``server.pem``, ``server.key``."""
        try:
            import trustme
        except ModuleNotFoundError:
            raise UsageError(
                "test certificates need the trustme package (pip install trustme)"
            ) from None
        folder.mkdir(parents=True, exist_ok=True)
        now = datetime.datetime.now(datetime.timezone.utc)
        if expired:
            not_before, not_after = now - datetime.timedelta(days=2), now - datetime.timedelta(
                hours=1
            )
        else:
            not_before, not_after = now - datetime.timedelta(hours=1), now + datetime.timedelta(
                days=1
            )
        authority = trustme.CA()
        leaf = authority.issue_cert(*names, not_before=not_before, not_after=not_after)
        made = cls(folder / "ca.pem", folder / "server.pem", folder / "server.key")
        authority.cert_pem.write_to_path(str(made.ca))
        leaf.cert_chain_pems[0].write_to_path(str(made.certificate))
        leaf.private_key_pem.write_to_path(str(made.key))
        return made
