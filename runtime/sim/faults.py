"""Fault injection for the broker simulator, built on :class:`pybmq.sim.broker.BrokerHooks`.

``FaultConfig`` says what goes wrong; ``FaultInjector`` is the hooks object that does it. Random
choices come from one ``random.Random(seed)`` so a failing run can be replayed.
"""

from __future__ import annotations

import random
import weakref
from dataclasses import dataclass

from pybmq.errors import UsageError
from pybmq.generated.wire_codec import AckStatus
from pybmq.sim.config import BrokerHooks
from pybmq.sim.session import ClientSession

__all__ = ["FaultConfig", "FaultInjector"]


@dataclass(frozen=True)
class FaultConfig:
    """What the simulator does wrong. The defaults do nothing."""

    # Close a client's connection after every N events received from it (None = never).
    drop_after_events: int | None = None
    # Close a client's connection after any received event with this probability.
    drop_probability: float = 0.0
    max_drops: int | None = None  # stop dropping after this many (None = no limit)
    seed: int | None = None
    ack_delay_ms: int = 0  # hold every ACK back this long
    # NACK (STORAGE_FAILURE) this share of PUTs. As the hook's contract says, the message was
    # already stored; only the producer's answer changes.
    nack_share: float = 0.0
    answer_heartbeats: bool = True  # False: never answer (nor send) heartbeats
    refuse_negotiation: bool = False  # answer every ClientIdentity with E_REFUSED

    def __post_init__(self) -> None:
        if self.drop_after_events is not None and self.drop_after_events < 1:
            raise UsageError("drop_after_events must be >= 1")
        for name in ("drop_probability", "nack_share"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise UsageError(f"{name} must be in [0, 1]")
        if self.ack_delay_ms < 0:
            raise UsageError("ack_delay_ms must be >= 0")

    @property
    def active(self) -> bool:
        return self != FaultConfig(seed=self.seed)


class FaultInjector(BrokerHooks):
    """BrokerHooks that apply a FaultConfig; ``dropped`` and ``nacked`` count what it did."""

    def __init__(self, config: FaultConfig) -> None:
        self.config = config
        self.rng = random.Random(config.seed)
        self.dropped = 0
        self.nacked = 0
        # Events since the last drop, per connection (weak: closed sessions are forgotten).
        self._received: weakref.WeakKeyDictionary[ClientSession, int] = weakref.WeakKeyDictionary()
        self._armed: list[int | None] = []  # client sessionIds to drop on their next event

    def arm_drop(self, client_session_id: int | None = None) -> None:
        """Drop the next connection that sends an event (only a client whose ClientIdentity has
        ``client_session_id``, when given): a disconnect at a moment the caller chooses."""
        self._armed.append(client_session_id)

    def _take_armed(self, session: ClientSession) -> bool:
        identity = session.client_identity
        for i, target in enumerate(self._armed):
            if target is None or (identity is not None and identity.session_id == target):
                del self._armed[i]
                return True
        return False

    def drop_connection(self, session: ClientSession, event_type: int) -> bool:
        if self._armed and self._take_armed(session):
            self.dropped += 1
            return True
        config = self.config
        count = self._received.get(session, 0) + 1
        self._received[session] = count
        if config.max_drops is not None and self.dropped >= config.max_drops:
            return False
        drop = (config.drop_after_events is not None and count >= config.drop_after_events) or (
            config.drop_probability > 0 and self.rng.random() < config.drop_probability
        )
        if drop:
            self._received.pop(session, None)
            self.dropped += 1
        return drop

    def ack_status(self, session: ClientSession, queue_uri: str, guid: bytes, status: int) -> int:
        share = self.config.nack_share
        if share and status == AckStatus.SUCCESS and self.rng.random() < share:
            self.nacked += 1
            return int(AckStatus.STORAGE_FAILURE)
        return status

    def ack_delay(self, session: ClientSession) -> float:
        return self.config.ack_delay_ms / 1000.0

    def answer_heartbeats(self, session: ClientSession) -> bool:
        return self.config.answer_heartbeats

    def refuse_negotiation(self, session: ClientSession) -> str | None:
        return "fault injection: negotiation refused" if self.config.refuse_negotiation else None
