"""What the simulated broker asks of a client before and during a session: the AUTHENTICATION
exchange (mqba_authenticator) with a built-in BASIC mechanism ("user:password" against a
credentials file, as mqbauthn_basicauthenticator) and ANONYMOUS, refusal of a client that
negotiates without authenticating when anonymous access is off, and the credential's lifetime
(a client that does not re-authenticate in time is disconnected).
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from pathlib import Path

from pybmq.errors import UsageError
from pybmq.generated import bmqp_ctrlmsg as ctrl

__all__ = [
    "BACKOFF_FIRST_S",
    "BACKOFF_MAX_S",
    "FREE_FAILURES",
    "MAX_SHOWN",
    "MAX_TRACKED_HOSTS",
    "RC_AUTHENTICATION_FAILED",
    "RC_MECHANISM_NOT_SUPPORTED",
    "REAUTH_BURST",
    "REAUTH_WINDOW_S",
    "RESUME_GRACE_S",
    "AuthConfig",
    "AuthThrottle",
    "SessionAuth",
    "load_credentials",
    "shown",
]

log = logging.getLogger("pybmq.sim")

# mqbauthn_authenticationcontroller.cpp: the codes a refusal carries.
RC_AUTHENTICATION_FAILED = -11  # authenticator rc -1, times 10, plus rc_AUTHENTICATION_FAILED
RC_MECHANISM_NOT_SUPPORTED = -2
# How long a client keeps its credential after the simulator resumes reading its socket: it
# cannot re-authenticate while the broker itself is not reading.
RESUME_GRACE_S = 5.0
# Brute force: per peer host and user name, the first FREE_FAILURES refused attempts cost
# nothing; each further one blocks that user's next attempts from that host for BACKOFF_FIRST_S,
# doubling up to BACKOFF_MAX_S. An attempt while blocked is refused unchecked (the refusal says
# "retry in N ms", which pybmq's client waits out) and does not extend the block; a success
# resets it. Another user's failures never slow a user down (the real broker has no throttle).
FREE_FAILURES = 3
BACKOFF_FIRST_S = 0.5
BACKOFF_MAX_S = 30.0
MAX_TRACKED_HOSTS = 10_000  # (host, user) pairs; the oldest is forgotten first
# Re-authentication storms: at most REAUTH_BURST authentications per session within
# REAUTH_WINDOW_S; the next one is refused (and the session closed).
REAUTH_BURST = 10
REAUTH_WINDOW_S = 1.0
# Longest client-chosen identifier (user, mechanism) shown in a refusal or a log line.
MAX_SHOWN = 64


def shown(text: str, limit: int = MAX_SHOWN) -> str:
    """``text`` as a refusal or log line may show it: at most ``limit`` characters, printable."""
    clipped = text[:limit] + ("..." if len(text) > limit else "")
    return "".join(c if c.isprintable() else "?" for c in clipped)


class AuthThrottle:
    """Failed authentications per (peer host, user name), and the backoff they earn (sans-I/O).

    Keyed by the user too, so failures under one name (an attacker guessing, or a client with a
    stale password) never lock out another user connecting from the same host."""

    def __init__(self) -> None:
        # key → (failures, blocked until); the key is a digest, so a huge name costs 16 bytes.
        self._keys: OrderedDict[bytes, tuple[int, float]] = OrderedDict()

    @staticmethod
    def _key(host: str, user: str) -> bytes:
        return hashlib.blake2b(f"{host}\0{user}".encode(), digest_size=16).digest()

    def blocked_for(self, host: str, user: str, now: float) -> float:
        """Seconds ``user`` must still wait before an attempt from ``host`` is checked (0:
        none)."""
        _, until = self._keys.get(self._key(host, user), (0, 0.0))
        return max(until - now, 0.0)

    def failed(self, host: str, user: str, now: float) -> None:
        """A checked attempt was refused (attempts refused unchecked while blocked are not
        counted: they do not push the block further out)."""
        key = self._key(host, user)
        failures = self._keys.pop(key, (0, 0.0))[0] + 1
        until = 0.0
        if failures > FREE_FAILURES:
            until = now + min(BACKOFF_FIRST_S * 2 ** (failures - FREE_FAILURES - 1), BACKOFF_MAX_S)
        self._keys[key] = (failures, until)
        if len(self._keys) > MAX_TRACKED_HOSTS:
            self._keys.popitem(last=False)

    def succeeded(self, host: str, user: str) -> None:
        self._keys.pop(self._key(host, user), None)


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
                # Nothing of the material: the user part of a key:secret token is a secret too.
                return RC_AUTHENTICATION_FAILED, "Invalid username or password"
            return 0, ""
        return (
            RC_MECHANISM_NOT_SUPPORTED,
            f"Authentication mechanism '{shown(mechanism)}' not supported.",
        )

    def principal(self, mechanism: str, data: bytes | None) -> str | None:
        """Who an accepted request authenticated as: the BASIC user, None for ANONYMOUS."""
        if mechanism.upper() != "BASIC":
            return None
        return (data or b"").decode("utf-8", "replace").partition(":")[0]


class SessionAuth:
    """One connection's authentication state on the broker side (sans-I/O)."""

    def __init__(self, config: AuthConfig) -> None:
        self.config = config
        self.mechanism: str | None = None  # set once authenticated
        self.principal: str | None = None  # the BASIC user it authenticated as
        self.expires_at: float | None = None
        self._recent: deque[float] = deque(maxlen=REAUTH_BURST)  # times of the last attempts

    def answer(
        self,
        request: ctrl.AuthenticationRequest,
        now: float,
        throttle: AuthThrottle | None = None,
        host: str = "",
    ) -> tuple[ctrl.AuthenticationMessage, bool]:
        """The response to ``request`` and whether it was accepted. A re-authentication must
        use the first mechanism (mqba_authenticator) and the same principal, and not come in a
        storm; a user who failed too often from a host waits (``throttle``)."""
        recent = self._recent
        storm = len(recent) == REAUTH_BURST and now - recent[0] < REAUTH_WINDOW_S
        recent.append(now)
        user = self.config.principal(request.mechanism, request.data) or request.mechanism.upper()
        wait = throttle.blocked_for(host, user, now) if throttle is not None else 0.0
        if wait:
            code, text = -1, f"Too many failed attempts: retry in {math.ceil(wait * 1000)} ms"
        elif storm:
            code, text = -1, f"More than {REAUTH_BURST} authentications in {REAUTH_WINDOW_S:g} s"
        else:
            code, text = self.config.check(request.mechanism, request.data)
        principal = self.config.principal(request.mechanism, request.data)
        if not code and self.mechanism not in (None, request.mechanism.upper()):
            code, text = -1, "Authentication mechanism mismatch"
        elif not code and self.mechanism is not None and principal != self.principal:
            code, text = -1, "Re-authentication as a different principal"
        if throttle is not None and not wait:
            if code:
                throttle.failed(host, user, now)
            else:
                throttle.succeeded(host, user)
        lifetime = None
        if code:
            category = ctrl.StatusCategory.E_REFUSED
        else:
            category = ctrl.StatusCategory.E_SUCCESS
            self.mechanism = request.mechanism.upper()
            self.principal = principal
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
