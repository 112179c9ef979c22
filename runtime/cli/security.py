"""Authentication and TLS flags shared by the commands that connect (``post``, ``consume``,
``admin``; ``tap`` takes the TLS ones for its connections to the broker).

The credential material is read from a file, never from the command line (where ``ps`` shows
it), and read again at every (re-)authentication so a rotated token is picked up.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Protocol

from pybmq.cli.validate import readable_file, seconds, text

__all__ = [
    "ArgumentGroup",
    "add_security_arguments",
    "add_tls_arguments",
    "security_options",
    "tls_options",
]


def add_security_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("authentication and TLS")
    group.add_argument(
        "--auth",
        type=text,
        metavar="MECH",
        help="authenticate with this mechanism (e.g. BASIC, ANONYMOUS) before negotiating",
    )
    group.add_argument(
        "--auth-file",
        type=readable_file,
        metavar="FILE",
        help="file holding the credential material (BASIC: user:password); re-read each time",
    )
    add_tls_arguments(group)


class ArgumentGroup(Protocol):
    """A parser or one of its argument groups: what flags are added to."""

    def add_argument(self, *names: str, **settings: Any) -> Any: ...


def add_tls_arguments(group: ArgumentGroup) -> None:
    """The client side's TLS flags (``tls_options`` reads them)."""
    group.add_argument(
        "--tls-ca", type=readable_file, metavar="PEM", help="connect with TLS, trusting this CA"
    )
    group.add_argument(
        "--tls-cert", type=readable_file, metavar="PEM", help="client certificate (with --tls-key)"
    )
    group.add_argument(
        "--tls-key", type=readable_file, metavar="PEM", help="the client certificate's key"
    )
    group.add_argument(
        "--tls-server-name",
        type=text,
        metavar="NAME",
        help="name the broker's certificate must carry",
    )
    group.add_argument(
        "--tls-handshake-timeout",
        type=seconds,
        metavar="SECONDS",
        help="the TLS handshake must end within this (default 2; a plain port never answers)",
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
            if material is None:
                return Credential(mechanism, b"")
            try:
                data = material.read_bytes().rstrip(b"\r\n")
            except OSError as exc:  # gone or unreadable since the start: say which file
                raise UsageError(f"--auth-file {material}: {exc.strerror or exc}") from None
            return Credential(mechanism, data)

        options["credential_provider"] = provider
    return {**options, **tls_options(args)}


def tls_options(args: argparse.Namespace) -> dict[str, Any]:
    """SessionOptions keywords for the TLS flags given, their files checked first."""
    options: dict[str, Any] = {}
    for name in ("tls_ca", "tls_cert", "tls_key", "tls_server_name", "tls_handshake_timeout"):
        if getattr(args, name):
            options[name] = getattr(args, name)
    _check_tls_files(args)
    return options


def _check_tls_files(args: argparse.Namespace) -> None:
    """Load the PEM files once before connecting, so a wrong one is named with its flag."""
    import ssl

    from pybmq.errors import UsageError

    if args.tls_ca:
        try:
            ssl.create_default_context(cafile=args.tls_ca)
        except (OSError, ssl.SSLError) as exc:
            raise UsageError(
                f"--tls-ca {args.tls_ca}: not a usable CA certificate ({exc})"
            ) from None
    if args.tls_key and not args.tls_cert:
        raise UsageError("--tls-key needs --tls-cert")
    if args.tls_cert:
        try:
            ssl.create_default_context().load_cert_chain(args.tls_cert, args.tls_key)
        except (OSError, ssl.SSLError) as exc:
            pair = f"--tls-cert {args.tls_cert}" + (
                f" / --tls-key {args.tls_key}" if args.tls_key else ""
            )
            raise UsageError(f"{pair}: not a usable certificate and key ({exc})") from None
