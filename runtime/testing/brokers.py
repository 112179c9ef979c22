"""One way to get "a broker" for a test: the simulator, or the real ``bmqbrkr`` when
``$BMQ_BROKER_BIN`` names one, behind the same handle.

    with running_broker("real") as broker:      # "sim", "real", or "auto" (real when available)
        run_my_producer(broker=broker.url)

``kind="real"`` without a broker executable raises ``BrokerUnavailable`` (the pytest fixtures turn
it into a skip that says why).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pybmq.errors import PybmqError
from pybmq.testing.real_broker import BROKER_BIN_ENV, RealBroker, broker_executable

if TYPE_CHECKING:
    from pybmq.sim.server import ThreadedBrokerSimulator

__all__ = ["NO_BROKER_REASON", "BrokerHandle", "BrokerKind", "BrokerUnavailable", "running_broker"]

BrokerKind = Literal["sim", "real", "auto"]
NO_BROKER_REASON = f"no real broker: set {BROKER_BIN_ENV} to a bmqbrkr.tsk (or its launcher)"


class BrokerUnavailable(PybmqError):
    """A real broker was asked for and ``$BMQ_BROKER_BIN`` names none."""


@dataclass
class BrokerHandle:
    """A running broker: ``url`` for clients; ``real`` or ``sim`` for what only one kind has."""

    kind: Literal["sim", "real"]
    url: str
    real: RealBroker | None = None
    sim: ThreadedBrokerSimulator | None = None

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
) -> Iterator[BrokerHandle]:
    """Start a broker for the block and stop it after. ``basic_users`` (name -> password) turns
    BASIC authentication on; then only those users get in, unless ``allow_anonymous``."""
    executable = broker_executable()
    if kind == "auto":
        kind = "real" if executable else "sim"
    if kind == "real":
        if executable is None:
            raise BrokerUnavailable(NO_BROKER_REASON)
        with RealBroker(
            executable, basic_users=basic_users, allow_anonymous=allow_anonymous
        ) as real:
            yield BrokerHandle("real", real.url, real=real)
        return
    # Imported late: a real-broker run needs no simulator.
    from pybmq.sim.auth import AuthConfig
    from pybmq.sim.config import BrokerConfig
    from pybmq.sim.server import ThreadedBrokerSimulator

    auth = AuthConfig(basic=dict(basic_users), anonymous=allow_anonymous) if basic_users else None
    with ThreadedBrokerSimulator(BrokerConfig(auth=auth)) as sim:
        yield BrokerHandle("sim", sim.url, sim=sim)
