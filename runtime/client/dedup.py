"""Consumer-side de-duplication: a bounded window of the GUIDs recently delivered on one queue
handle, so that a message the broker pushes again (a cluster failover can redeliver a message
with the same GUID, even one the application already confirmed) reaches the application once.

Opt-in per queue (``QueueOptions.dedup_window``, ``dedup_window_age``) and client-side only:
nothing of it goes to the broker. The consumer (:mod:`pybmq.client.consuming`) asks the window
about every PUSHed message of a queue that has one:

- a GUID not in the window is delivered and remembered as *held* by the application;
- a GUID remembered as *confirmed* is not delivered: the consumer confirms it again at once, on
  the connection that pushed it, so the broker does not keep it;
- a GUID remembered as *held* is not delivered either (the application has it and will
  confirm it); it counts against the credit, as the broker counts it, and the window notes the
  connection it came on: the application's confirm then goes to that connection even though
  the message was first delivered on an earlier one (whose confirms are otherwise dropped).

Bounds: at most ``limit`` GUIDs (the oldest is forgotten on insert) and each for at most
``max_age`` seconds after its first delivery (forgotten on each PUSH event of the queue), on
the engine's clock (the ``now`` of its inputs), never the wall clock. An entry costs about
150 bytes: the GUID (a 49-byte ``bytes``, shared with the message while that lives), a dict
slot, a float and two deque cells; its state is a small int (cached by CPython, no object).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from pybmq.client.options import QueueOptions

__all__ = ["CONFIRMED", "HELD", "NEW", "DedupWindow", "window_for"]

# What ``pushed`` says of a GUID.
NEW = 0  # not seen in the window: deliver it
HELD = 1  # delivered and not confirmed yet: do not deliver it again
CONFIRMED = 2  # delivered and confirmed: confirm it again, do not deliver it

_CONFIRMED_BIT = 1  # a code is ``generation << 1 | confirmed``


class DedupWindow:
    """The GUIDs recently delivered on one queue handle (see the module docstring)."""

    __slots__ = ("_codes", "_order", "_times", "limit", "max_age")

    def __init__(self, limit: int, max_age: float) -> None:
        self.limit = limit
        self.max_age = max_age
        # GUID → connection generation that last pushed it << 1 | confirmed by the application.
        self._codes: dict[bytes, int] = {}
        # The same GUIDs in the order of their first delivery, with its time (parallel deques:
        # entries only ever leave from the front, so the three stay in step).
        self._order: deque[bytes] = deque()
        self._times: deque[float] = deque()

    def __len__(self) -> int:
        return len(self._codes)

    def __contains__(self, guid: object) -> bool:
        return guid in self._codes

    def expire(self, now: float) -> None:
        """Forget the GUIDs first delivered more than ``max_age`` seconds before ``now``."""
        times = self._times
        if times and times[0] < now - self.max_age:
            oldest, order, codes = now - self.max_age, self._order, self._codes
            while times and times[0] < oldest:
                times.popleft()
                del codes[order.popleft()]

    def pushed(self, guid: bytes, now: float, generation: int) -> int:
        """The broker pushed ``guid`` on connection ``generation``: NEW (remembered now, to be
        delivered), HELD or CONFIRMED (a duplicate, not to be delivered)."""
        codes = self._codes
        code = codes.get(guid)
        if code is None:
            codes[guid] = generation << 1
            self._order.append(guid)
            self._times.append(now)
            if len(codes) > self.limit:
                self._forget_oldest()
            return NEW
        if code & _CONFIRMED_BIT:
            return CONFIRMED
        codes[guid] = generation << 1  # its confirm now belongs on this connection
        return HELD

    def confirmed(self, guids: Iterable[bytes]) -> None:
        """The application confirmed ``guids`` (on the connection that delivered them)."""
        codes = self._codes
        for guid in guids:
            code = codes.get(guid)
            if code is not None:
                codes[guid] = code | _CONFIRMED_BIT

    def confirmed_late(self, guids: Iterable[bytes], generation: int) -> list[bytes]:
        """The application confirmed ``guids``, delivered on an earlier connection than
        ``generation`` (their confirm is void there): each is marked confirmed, so a
        redelivery is confirmed and not delivered; returned are those already pushed again on
        connection ``generation``, which must be confirmed on it now."""
        codes = self._codes
        again: list[bytes] = []
        for guid in guids:
            code = codes.get(guid)
            if code is None or code & _CONFIRMED_BIT:
                continue
            codes[guid] = code | _CONFIRMED_BIT
            if code >> 1 == generation:
                again.append(guid)
        return again

    def held_on(self, guid: bytes, generation: int) -> bool:
        """Whether ``guid`` is held by the application and was pushed again on connection
        ``generation`` (so a confirm of its first delivery goes there)."""
        code = self._codes.get(guid)
        return code is not None and code == generation << 1

    def resize(self, limit: int, max_age: float) -> None:
        """New bounds (a reconfigure): the oldest GUIDs over ``limit`` are forgotten now."""
        self.limit, self.max_age = limit, max_age
        while len(self._codes) > limit:
            self._forget_oldest()

    def _forget_oldest(self) -> None:
        self._times.popleft()
        del self._codes[self._order.popleft()]

    def clear(self) -> None:
        self._codes.clear()
        self._order.clear()
        self._times.clear()


def window_for(window: DedupWindow | None, options: QueueOptions) -> DedupWindow | None:
    """The window a queue with ``options`` keeps: ``window`` (its current one, None if none)
    resized to the options, a new one, or None when de-duplication is off."""
    limit = options.dedup_window
    if not limit:
        return None
    if window is None:
        return DedupWindow(limit, options.dedup_window_age)
    if window.limit != limit or window.max_age != options.dedup_window_age:
        window.resize(limit, options.dedup_window_age)
    return window
