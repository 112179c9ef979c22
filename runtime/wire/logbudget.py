"""How often a peer's repeated misbehaviour is logged: the first few times, then one line in many.

Both ends meet peers that repeat one bad act by the hundred thousand (bogus CONFIRMs to a broker,
ACKs for unknown GUIDs to a client); each act is counted, but only the first ``LOG_FIRST`` and
then every ``LOG_EVERY``-th are logged, so a hostile peer cannot flood the log.
"""

from __future__ import annotations

__all__ = ["LOG_EVERY", "LOG_FIRST", "worth_logging"]

LOG_FIRST = 10
LOG_EVERY = 1000


def worth_logging(count: int) -> bool:
    """Whether the ``count``-th (1-based) repetition of one kind of bad act is logged."""
    return count <= LOG_FIRST or count % LOG_EVERY == 0
