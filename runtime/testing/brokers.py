"""One way to get "a broker" for a test: the simulator, or the real ``bmqbrkr`` when
``$BMQ_BROKER_BIN`` names one, behind the same handle.

    with running_broker("real") as broker:      # "sim", "real", or "auto" (real when available)
        run_my_producer(broker=broker.url)

``kind="real"`` without a broker executable raises ``BrokerUnavailable`` (the pytest fixtures turn
it into a skip that says why). With ``tls=True`` either kind listens for TLS beside its plain
port, with a test CA made for the block: ``broker.tls_url`` and ``broker.tls_ca`` for clients;
the real one is then the TLS-capable build of ``$BMQ_BROKER_TLS_BIN``.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pybmq.errors import PybmqError
from pybmq.testing.certificates import TestCertificates
from pybmq.testing.real_broker import (
    BROKER_BIN_ENV,
    BROKER_TLS_BIN_ENV,
    RealBroker,
    broker_executable,
)

if TYPE_CHECKING:
    from pybmq.sim.server import ThreadedBrokerSimulator

__all__ = [
    "NO_BROKER_REASON",
    "NO_TLS_BROKER_REASON",
    "BrokerHandle",
    "BrokerKind",
    "BrokerUnavailable",
    "running_broker",
]

BrokerKind = Literal["sim", "real", "auto"]
NO_BROKER_REASON = f"no real broker: set {BROKER_BIN_ENV} to a bmqbrkr.tsk (or its launcher)"
NO_TLS_BROKER_REASON = (
    f"no TLS-capable broker: set {BROKER_TLS_BIN_ENV} to a bmqbrkr.tsk built with TLS "
    "(or its launcher)"
)


class BrokerUnavailable(PybmqError):
    """A real broker was asked for and ``$BMQ_BROKER_BIN`` names none."""


@dataclass
class BrokerHandle:
    """A running broker: ``url`` for clients; ``real`` or ``sim`` for what only one kind has;
    with TLS, ``tls_url`` (its TLS listener) and ``tls_ca`` (the PEM file clients trust)."""

    kind: Literal["sim", "real"]
    url: str
    real: RealBroker | None = None
    sim: ThreadedBrokerSimulator | None = None
    tls_url: str | None = None
    tls_ca: Path | None = None

    @property
    def is_real(self) -> bool:
        """True for the real broker, False for the simulator."""
        return self.real is not None


@contextmanager
def running_broker(
    kind: BrokerKind = "auto",
    *,
    basic_users: dict[str, str] | None = None,
    allow_anonymous: bool = False,
    tls: bool | TestCertificates = False,
) -> Iterator[BrokerHandle]:
    """Start a broker for the block and stop it after. ``basic_users`` (name -> password) turns
    BASIC authentication on; then only those users get in, unless ``allow_anonymous``.
    ``tls``: a TLS listener beside the plain port (``tls_url``), with a test CA made for the
    block (``tls_ca``), or serving the ``TestCertificates`` given (an expired one, say)."""
    executable = broker_executable(tls is not False)
    if kind == "auto":
        kind = "real" if executable else "sim"
    if kind == "real":
        if executable is None:
            raise BrokerUnavailable(NO_TLS_BROKER_REASON if tls else NO_BROKER_REASON)
        with RealBroker(
            executable, basic_users=basic_users, allow_anonymous=allow_anonymous, tls=tls
        ) as real:
            secure = (real.tls_url, real.tls_ca) if tls is not False else (None, None)
            yield BrokerHandle("real", real.url, real=real, tls_url=secure[0], tls_ca=secure[1])
        return
    # Imported late: a real-broker run needs no simulator.
    from pybmq.sim.auth import AuthConfig
    from pybmq.sim.config import BrokerConfig
    from pybmq.sim.server import ThreadedBrokerSimulator
    from pybmq.sim.tls import server_tls_context

    auth = AuthConfig(basic=dict(basic_users), anonymous=allow_anonymous) if basic_users else None
    with tempfile.TemporaryDirectory(prefix="pybmq-sim-tls-") as folder:
        context, tls_ca, listener = None, None, None
        if tls is not False:
            certificates = TestCertificates.make(Path(folder)) if tls is True else tls
            context = server_tls_context(str(certificates.certificate), str(certificates.key))
            tls_ca, listener = certificates.ca, 0
        with ThreadedBrokerSimulator(
            BrokerConfig(auth=auth), tls=context, tls_port=listener
        ) as sim:
            tls_url = sim.tls_url if context is not None else None
            yield BrokerHandle("sim", sim.url, sim=sim, tls_url=tls_url, tls_ca=tls_ca)
