"""Authentication and TLS flags shared by the commands that connect (``post``, ``consume``,
``admin``).

The credential material is read from a file, never from the command line (where ``ps`` shows
it), and read again at every (re-)authentication so a rotated token is picked up.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def add_security_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("authentication and TLS")
    group.add_argument(
        "--auth",
        metavar="MECH",
        help="authenticate with this mechanism (e.g. BASIC, ANONYMOUS) before negotiating",
    )
    group.add_argument(
        "--auth-file",
        metavar="FILE",
        help="file holding the credential material (BASIC: user:password); re-read each time",
    )
    group.add_argument("--tls-ca", metavar="PEM", help="connect with TLS, trusting this CA")
    group.add_argument("--tls-cert", metavar="PEM", help="client certificate (with --tls-key)")
    group.add_argument("--tls-key", metavar="PEM", help="the client certificate's key")
    group.add_argument(
        "--tls-server-name", metavar="NAME", help="name the broker's certificate must carry"
    )


def security_options(args: argparse.Namespace) -> dict[str, Any]:
    """SessionOptions keywords for the flags given (empty when none are)."""
    from pybmq.client.options import Credential
    from pybmq.errors import UsageError

    options: dict[str, Any] = {}
    if args.auth_file and not args.auth:
        raise UsageError("--auth-file needs --auth MECH")
    if args.auth:
        mechanism = args.auth
        material = Path(args.auth_file) if args.auth_file else None

        def provider() -> Credential:
            data = material.read_bytes().rstrip(b"\r\n") if material is not None else b""
            return Credential(mechanism, data)

        options["credential_provider"] = provider
    for name in ("tls_ca", "tls_cert", "tls_key", "tls_server_name"):
        if getattr(args, name):
            options[name] = getattr(args, name)
    return options
