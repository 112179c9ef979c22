"""The simulator's authentication rules without sockets: credentials file, mechanisms, codes,
lifetime and the grace after the broker resumes reading."""

from __future__ import annotations

from pathlib import Path

import pytest
from pybmq.errors import UsageError
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.sim.auth import (
    RC_AUTHENTICATION_FAILED,
    RC_MECHANISM_NOT_SUPPORTED,
    RESUME_GRACE_S,
    AuthConfig,
    SessionAuth,
    load_credentials,
)


def test_credentials_file(tmp_path: Path) -> None:
    path = tmp_path / "users"
    path.write_text("# comment\n\nalice:pa:ss\n")
    assert load_credentials(path) == {"alice": "pa:ss"}
    path.write_text("no-colon\n")
    with pytest.raises(UsageError, match="users:1"):
        load_credentials(path)


def test_spec_and_checks(tmp_path: Path) -> None:
    path = tmp_path / "users"
    path.write_text("alice:pw\n")
    config = AuthConfig.from_spec([f"basic:{path}"])
    assert not config.anonymous
    assert config.check("BASIC", b"alice:pw") == (0, "")
    assert config.check("BASIC", b"alice:no")[0] == RC_AUTHENTICATION_FAILED
    assert "no" not in config.check("BASIC", b"alice:no")[1].replace("Invalid", "")
    assert config.check("ANONYMOUS", None)[0] == RC_MECHANISM_NOT_SUPPORTED
    assert AuthConfig.from_spec([]).anonymous
    with pytest.raises(UsageError):
        AuthConfig.from_spec(["KERBEROS"])


def test_lifetime_mechanism_pinning_and_resume_grace() -> None:
    auth = SessionAuth(AuthConfig(basic={"a": "b"}, anonymous=True, lifetime_ms=1000))
    assert auth.may_negotiate()
    response, ok = auth.answer(ctrl.AuthenticationRequest(mechanism="BASIC", data=b"a:b"), 10.0)
    assert ok and response.authentication_response is not None
    assert response.authentication_response.lifetime_ms == 1000
    assert not auth.expired(10.9) and auth.expired(11.0)
    auth.reading_resumed(10.9)
    assert auth.expires_at == 10.9 + RESUME_GRACE_S
    _, ok = auth.answer(ctrl.AuthenticationRequest(mechanism="ANONYMOUS"), 12.0)
    assert not ok  # a re-authentication keeps the first mechanism
