"""The broker simulator's engine: sans-I/O, one ``Broker`` hub and one ``ClientSession`` per peer.

The shell (``pybmq.sim``) owns sockets and clocks. It calls ``broker.connect()`` for a new peer,
``session.receive_data(data, now)`` with its bytes, ``broker.on_timer(now)`` at
``broker.next_deadline()``, and after each call writes ``session.data_to_send()`` for every
session in ``broker.take_dirty()`` (closing the ones whose ``closed`` is set). A PUT on one
session produces PUSH bytes on others, which is why output is collected per session.

Strict like a real broker: a peer that breaks the protocol's structure (bad framing, unknown
event type, unsupported flags ...) is disconnected with a log line that says why and where; a
well-formed request that cannot be served gets the failure a broker would give (a failure status,
a NACK). A CONFIRM the broker cannot apply (a GUID it does not hold, a sub-queue not open for
reading) is what a real broker logs as ``#CLIENT_IMPROPER_BEHAVIOR`` and ignores (mqbblp
QueueHandle): so does this one, and it records it in ``stats.improper`` for tests to assert on.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial

from pybmq.sim.auth import AuthThrottle
from pybmq.sim.config import (
    BrokerConfig,
    BrokerHooks,
    BrokerStats,
)
from pybmq.sim.guard import contained
from pybmq.sim.queues import MemoryBudget, QueueStore, Run, SimQueue
from pybmq.sim.session import ClientSession

__all__ = ["Broker"]


class Broker:
    """Shared state of the simulated broker: queues, sessions, which sessions have output."""

    def __init__(
        self, config: BrokerConfig | None = None, hooks: BrokerHooks | None = None
    ) -> None:
        self.config = config or BrokerConfig()
        self.hooks = hooks or BrokerHooks()
        self.store = QueueStore(MemoryBudget(self.config.memory_limit_bytes))
        self.sessions: list[ClientSession] = []
        self.stats = BrokerStats()
        self.auth_throttle = AuthThrottle()  # failed authentications per peer host
        self._dirty: dict[ClientSession, None] = {}
        self._next_session_id = 1

    def connect(self, peer: str, now: float) -> ClientSession:
        session = ClientSession(self, peer, self._next_session_id, now)
        self._next_session_id += 1
        self.sessions.append(session)
        self.stats.sessions += 1
        return session

    def take_dirty(self) -> list[ClientSession]:
        """Sessions with bytes to send or that just closed, since the last call."""
        dirty = list(self._dirty)
        self._dirty.clear()
        return dirty

    def next_deadline(self) -> float | None:
        deadlines = [d for s in self.sessions if (d := s.next_deadline()) is not None]
        return min(deadlines, default=None)

    def on_timer(self, now: float) -> None:
        for session in list(self.sessions):
            contained(session, "running its timers", partial(session.on_timer, now), None)

    def queue(self, uri: str) -> SimQueue | None:
        return self.store.queues.get(uri)

    # -- internal ----------------------------------------------------------------------------

    def mark(self, session: ClientSession) -> None:
        self._dirty[session] = None

    def dispatch(self, runs: Iterable[Run]) -> None:
        """Hand each run of delivered messages to its consumer's session, to be pushed."""
        for consumer, messages in runs:
            owner = consumer.owner
            assert isinstance(owner, ClientSession)
            owner.flow.push(consumer, messages)

    def forget_session(self, session: ClientSession) -> None:
        if session in self.sessions:
            self.sessions.remove(session)
