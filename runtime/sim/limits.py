"""Per-connection bounds of the simulator: what one client may make it buffer, and for how long.

A real broker survives clients that send huge control documents, never finish negotiating, or
drip an event one byte at a time; so must a test broker. Each bound is a ``BrokerConfig`` field
(or a protocol constant) with a default, and breaking it closes that connection only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pybmq.generated.wire_codec import PUT_EVENT_MAX_SIZE_SOFT, EventType
from pybmq.wire.framing import MAX_CONTROL_EVENT_SIZE, SMALL_EVENT_SIZE
from pybmq.wire.logbudget import LOG_EVERY, LOG_FIRST, worth_logging

__all__ = [
    "LOG_EVERY",
    "LOG_FIRST",
    "MAX_RECORDS",
    "event_limit",
    "keep_record",
    "overdue",
    "worth_logging",
]

if TYPE_CHECKING:
    from pybmq.sim.session import ClientSession


def event_limit(session: ClientSession, event_type: int) -> int:
    """The biggest event of ``event_type`` ``session`` may send now (checked on its header,
    before the body is buffered): control messages are small, a PUT or CONFIRM event is at most
    what the C++ PutEventBuilder makes, and nothing but control is expected before negotiation."""
    if event_type == EventType.CONTROL:
        return MAX_CONTROL_EVENT_SIZE
    if not session.negotiated:
        return SMALL_EVENT_SIZE
    if event_type in (EventType.PUT, EventType.CONFIRM):
        return PUT_EVENT_MAX_SIZE_SOFT
    return SMALL_EVENT_SIZE


def overdue(session: ClientSession, now: float) -> str | None:
    """Why ``session`` must be closed for being too slow (None if it is not): negotiation not
    finished within its deadline, or a partial event not completed within its deadline (any
    byte counts as activity for heartbeats, so a slow drip is caught here)."""
    config = session.broker.config
    if not session.negotiated and now - session.connected_at > config.negotiation_timeout_ms / 1e3:
        return f"negotiation not finished within {config.negotiation_timeout_ms} ms"
    since = session.partial_since
    if since is not None and now - since > config.partial_event_timeout_ms / 1e3:
        return (
            f"an event stayed incomplete for more than {config.partial_event_timeout_ms} ms "
            f"({session.buffered} bytes buffered)"
        )
    return None


# How many records of each kind ``BrokerStats`` keeps (the oldest half goes when full); how many
# improper-behaviour lines one session logs is pybmq.wire.logbudget's rule.
MAX_RECORDS = 1000


def keep_record(records: list[str], text: str) -> None:
    """Append ``text`` to ``records``, keeping at most MAX_RECORDS (the newest)."""
    if len(records) >= MAX_RECORDS:
        del records[: MAX_RECORDS // 2]
    records.append(text)
