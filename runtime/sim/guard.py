"""Containment: an unexpected error while serving one client closes that client only.

The simulator is also a test broker for other people's clients, so a bug it hits on one
connection (a message it cannot convert, a corner case in a handler) must not stop its timers,
heartbeats or the other connections.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from pybmq.sim.session import ClientSession

__all__ = ["T", "contained"]

log = logging.getLogger("pybmq.sim")
T = TypeVar("T")


def contained(session: ClientSession, what: str, action: Callable[[], T], fallback: T) -> T:
    """``action()``; if it raises, log it, close ``session`` and return ``fallback``."""
    try:
        return action()
    except Exception as exc:  # a broker bug must cost one connection, not the broker
        log.exception(
            "session %d (%s): internal error while %s", session.session_id, session.peer, what
        )
        session.broker.stats.internal_errors += 1
        session.close(f"internal error while {what}: {exc!r}")
        return fallback
