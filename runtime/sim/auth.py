"""What the simulated broker asks of a client before and during a session: the AUTHENTICATION
exchange (mqba_authenticator) with a built-in BASIC mechanism ("user:password" against a
credentials file, as mqbauthn_basicauthenticator) and ANONYMOUS, refusal of a client that
negotiates without authenticating when anonymous access is off, and the credential's lifetime
(a client that does not re-authenticate in time is disconnected).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from pybmq.errors import UsageError
from pybmq.generated import bmqp_ctrlmsg as ctrl

log = logging.getLogger("pybmq.sim")

# mqbauthn_authenticationcontroller.cpp: the codes a refusal carries.
RC_AUTHENTICATION_FAILED = -11  # authenticator rc -1, times 10, plus rc_AUTHENTICATION_FAILED
RC_MECHANISM_NOT_SUPPORTED = -2
# How long a client keeps its credential after the simulator resumes reading its socket: it
# cannot re-authenticate while the broker itself is not reading.
RESUME_GRACE_S = 5.0


def load_credentials(path: str | Path) -> dict[str, str]:
    """``user:password`` per line (``#`` comments, blank lines ignored); the password may hold
    colons, the user may not (as the BASIC authenticator)."""
    users: dict[str, str] = {}
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        user, sep, password = line.partition(":")
        if not sep or not user:
            raise UsageError(f"{path}:{number}: expected user:password")
        users[user] = password
    return users


@dataclass
class AuthConfig:
    """``basic`` users (None: no BASIC mechanism), whether ANONYMOUS (and clients that do not
    authenticate) are let in, and the lifetime granted to a credential (None: forever)."""

    basic: dict[str, str] | None = field(default=None, repr=False)
    anonymous: bool = True
    lifetime_ms: int | None = None

    @classmethod
    def from_spec(cls, specs: list[str], lifetime_ms: int | None = None) -> AuthConfig:
        """From ``--auth`` values: ``BASIC:credentials-file`` and/or ``ANONYMOUS``. Anonymous
        access is on only when listed (or when nothing is)."""
        config = cls(anonymous=not specs, lifetime_ms=lifetime_ms)
        for spec in specs:
            mechanism, _, material = spec.partition(":")
            mechanism = mechanism.upper()
            if mechanism == "BASIC" and material:
                config.basic = load_credentials(material)
            elif mechanism == "ANONYMOUS" and not material:
                config.anonymous = True
            else:
                raise UsageError(f"--auth {mechanism}: expected BASIC:<file> or ANONYMOUS")
        return config

    def check(self, mechanism: str, data: bytes | None) -> tuple[int, str]:
        """(0, "") or the refusal's (code, message), without echoing the material."""
        mechanism = mechanism.upper()
        if mechanism == "ANONYMOUS" and self.anonymous:
            return 0, ""
        if mechanism == "BASIC" and self.basic is not None:
            user, sep, password = (data or b"").decode("utf-8", "replace").partition(":")
            if not sep:
                return RC_AUTHENTICATION_FAILED, "Invalid authentication payload format"
            if self.basic.get(user) != password:
                return RC_AUTHENTICATION_FAILED, f"Invalid username or password for user '{user}'"
            return 0, ""
        return RC_MECHANISM_NOT_SUPPORTED, f"Authentication mechanism '{mechanism}' not supported."


class SessionAuth:
    """One connection's authentication state on the broker side (sans-I/O)."""

    def __init__(self, config: AuthConfig) -> None:
        self.config = config
        self.mechanism: str | None = None  # set once authenticated
        self.expires_at: float | None = None

    def answer(
        self, request: ctrl.AuthenticationRequest, now: float
    ) -> tuple[ctrl.AuthenticationMessage, bool]:
        """The response to ``request`` and whether it was accepted. A re-authentication must
        use the first mechanism (mqba_authenticator)."""
        code, text = self.config.check(request.mechanism, request.data)
        if not code and self.mechanism not in (None, request.mechanism.upper()):
            code, text = -1, "Authentication mechanism mismatch"
        lifetime = None
        if code:
            category = ctrl.StatusCategory.E_REFUSED
        else:
            category = ctrl.StatusCategory.E_SUCCESS
            self.mechanism = request.mechanism.upper()
            lifetime = self.config.lifetime_ms
            self.expires_at = None if lifetime is None else now + lifetime / 1000.0
        response = ctrl.AuthenticationResponse(
            status=ctrl.Status(category=category, code=code, message=text), lifetime_ms=lifetime
        )
        return ctrl.AuthenticationMessage(authentication_response=response), not code

    def may_negotiate(self) -> bool:
        """Whether a ClientIdentity may come now: after authenticating, or anonymously."""
        return self.mechanism is not None or self.config.anonymous

    def expired(self, now: float) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    def reading_resumed(self, now: float) -> None:
        """The broker paused reading this socket and resumes: give the client time to send the
        re-authentication it may have queued meanwhile."""
        if self.expires_at is not None:
            self.expires_at = max(self.expires_at, now + RESUME_GRACE_S)
