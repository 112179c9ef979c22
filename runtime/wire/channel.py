"""One connection's transport half, shared by both ends of the protocol: framing the incoming
byte stream into events, the outgoing buffer, and heartbeats.

The client engine, the admin connection and the simulator's per-client session each hold one
``Channel`` and configure it (the event-size limits, the heartbeat interval and the number of
heartbeats that may be missed); none of them frames bytes or schedules heartbeats itself.
Sans-I/O: bytes and the time in, bytes and verdicts out.

Heartbeats follow ``bmqp_heartbeatmonitor``: a peer silent for one interval is probed with a
HEARTBEAT_REQ (at most one per interval), a HEARTBEAT_REQ is answered with a HEARTBEAT_RSP, and
a peer silent for ``max_missed`` intervals is dead. While the owner is not reading (``paused``)
the peer's silence tells nothing. Only whole events, or a partial event that grew by at least
``MIN_PROGRESS_BYTES``, count as hearing from the peer: a byte now and then does not keep a
connection alive.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator

from pybmq.generated.wire_codec import EventType
from pybmq.wire.control import HEARTBEAT_REQ_EVENT, HEARTBEAT_RSP_EVENT
from pybmq.wire.framing import MAX_EVENT_SIZE, Event, EventReader

__all__ = ["MIN_PROGRESS_BYTES", "Channel", "Liveness"]

_HEARTBEAT_REQ = EventType.HEARTBEAT_REQ
_HEARTBEAT_RSP = EventType.HEARTBEAT_RSP
# How much a partial event must grow to count as activity (a big event on a slow link is alive).
MIN_PROGRESS_BYTES = 1024


class Liveness(enum.Enum):
    """What the heartbeat clock says about the peer at a given time."""

    ALIVE = "ALIVE"  # heard from recently enough (or we are not reading)
    PROBE = "PROBE"  # silent for an interval: send a HEARTBEAT_REQ now
    DEAD = "DEAD"  # silent for ``max_missed`` intervals


class Channel:
    """Framing, the output buffer and the heartbeat clock of one connection."""

    def __init__(
        self,
        *,
        limit_for: Callable[[int], int] | None = None,
        max_event_size: int = MAX_EVENT_SIZE,
        heartbeat_interval: float = 3.0,
        max_missed_heartbeats: int = 10,
        now: float = 0.0,
        answer_heartbeats: bool = True,
        steady_probe_clock: bool = False,
    ) -> None:
        """``limit_for(event type)``: the largest event of that type accepted now (asked on the
        header, before a big body is buffered). ``answer_heartbeats``: answer a HEARTBEAT_REQ
        with a HEARTBEAT_RSP as the events are read (a fault-injecting peer turns it off).
        ``steady_probe_clock``: the heartbeat clock ticks every interval whatever the traffic
        (the client's schedule: its next deadline moves once per interval, not with every read,
        so a busy connection does not re-arm its timer on every event); otherwise it restarts
        with every read (the simulator's schedule)."""
        self._limit_for = limit_for
        self._max_event_size = max_event_size
        self.reader = EventReader(max_event_size, limit_for)
        self.out: list[bytes] = []
        self.heartbeat_interval = heartbeat_interval
        self.max_missed_heartbeats = max_missed_heartbeats
        self.answer_heartbeats = answer_heartbeats
        self.paused = False  # the owner stopped reading the socket
        self.steady_probe_clock = steady_probe_clock
        self.last_received = now  # when the peer last completed an event (or made progress)
        self.last_probe = now
        self._credited = 0  # bytes of the partial event already counted as activity

    # -- framing and output --------------------------------------------------------------

    @property
    def buffered(self) -> int:
        """Bytes held for an incomplete incoming event."""
        return self.reader.buffered

    def feed(self, data: bytes | bytearray | memoryview, now: float) -> Iterator[Event]:
        """The events ``data`` completes, heartbeats handled here (answered or swallowed).
        ProtocolError (from the framer) ends the stream."""
        events = self.reader.feed(data)
        self._heard(bool(events), now)
        for event in events:
            event_type = event.header.type
            if event_type == _HEARTBEAT_REQ:
                if self.answer_heartbeats:
                    self.out.append(HEARTBEAT_RSP_EVENT)
            elif event_type != _HEARTBEAT_RSP:
                yield event

    def feed_all(self, data: bytes | bytearray | memoryview, now: float) -> list[Event]:
        """Every event ``data`` completes, heartbeats included and left to the owner: for one
        that checks a heartbeat like any other event before it answers (``answer``), as the
        simulated broker does. ProtocolError (from the framer) ends the stream."""
        events = self.reader.feed(data)
        self._heard(bool(events), now)
        return events

    def _heard(self, completed: bool, now: float) -> None:
        """Count ``now`` as activity if an event completed or the partial one grew enough."""
        buffered = self.reader.buffered
        if completed or buffered >= self._credited + MIN_PROGRESS_BYTES:
            self.last_received = now
            self._credited = buffered
        elif buffered < self._credited:
            self._credited = buffered

    def answer(self) -> None:
        """Answer a HEARTBEAT_REQ taken from ``feed_all`` (unless answering is off)."""
        if self.answer_heartbeats:
            self.out.append(HEARTBEAT_RSP_EVENT)

    def send(self, data: bytes) -> None:
        self.out.append(data)

    def take_output(self) -> bytes:
        """Everything buffered for the socket, as one write."""
        out = self.out
        if not out:
            return b""
        data = out[0] if len(out) == 1 else b"".join(out)
        out.clear()
        return data

    def reset(self, now: float | None = None) -> None:
        """Forget a partial incoming event (it may be large) and unsent output; with ``now``,
        restart the heartbeat clock too (a new connection)."""
        self.reader = EventReader(self._max_event_size, self._limit_for)
        self._credited = 0
        self.out.clear()
        if now is not None:
            self.last_received = self.last_probe = now
            self.paused = False

    def drop_partial(self) -> None:
        """Free a partial incoming event, keeping what is still to send."""
        self.reader = EventReader(self._max_event_size, self._limit_for)
        self._credited = 0

    # -- heartbeats -----------------------------------------------------------------------

    def configure_heartbeats(self, interval: float, max_missed: int) -> None:
        """The negotiated heartbeat interval (seconds) and how many may be missed."""
        self.heartbeat_interval = interval
        self.max_missed_heartbeats = max_missed

    def pause(self, paused: bool, now: float) -> None:
        """The owner stopped (True) or resumed (False) reading; resuming restarts the silence
        clock, since the peer's bytes were waiting for us, not missing."""
        if not paused and self.paused:
            self.last_received = now
        self.paused = paused

    def heartbeat_deadline(self) -> float:
        """When ``liveness`` can next change its verdict."""
        if self.steady_probe_clock:
            return self.last_probe + self.heartbeat_interval
        return max(self.last_received, self.last_probe) + self.heartbeat_interval

    def liveness(self, now: float) -> Liveness:
        """ALIVE, PROBE (the caller sends the probe: see ``probe``) or DEAD at ``now``; with a
        steady probe clock, a tick with nothing to probe moves the clock on."""
        if self.paused:
            return Liveness.ALIVE
        interval = self.heartbeat_interval
        silent = now - self.last_received
        if silent >= interval * self.max_missed_heartbeats:
            return Liveness.DEAD
        if now - self.last_probe >= interval:
            if silent >= interval:
                return Liveness.PROBE
            if self.steady_probe_clock:
                self.last_probe = now  # the clock ticks on: nothing to probe this interval
        return Liveness.ALIVE

    def silence(self, now: float) -> float:
        """Seconds since the peer last completed an event (or made progress on one)."""
        return now - self.last_received

    def probe(self, now: float) -> None:
        """Send a HEARTBEAT_REQ now."""
        self.last_probe = now
        self.out.append(HEARTBEAT_REQ_EVENT)
