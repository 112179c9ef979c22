"""MessageGUIDs with the C++ SDK's version-1 layout (bmqp_messageguidgenerator).

16 bytes: 2-bit version (1) and a 22-bit counter, a 56-bit timer tick (nanoseconds since the
generator was created, so GUIDs sort by creation within a generator) and a 48-bit client id.
The client id is the first 6 bytes of an MD5 over the host's IPv4 address (or its name when it
does not resolve), the generator's start time in nanoseconds since the epoch, the process id and
a session id -- so two processes, or two sessions in one process, never share a client id, and
within one generator the (tick, counter) pair never repeats.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import socket
import threading
import time
from typing import NamedTuple

from pybmq.errors import UsageError
from pybmq.generated.wire_codec import (
    MESSAGE_GUID,
    MESSAGE_GUID_COUNTER_MASK,
    MESSAGE_GUID_COUNTER_SHIFT,
    MESSAGE_GUID_SIZE,
    MESSAGE_GUID_TIMER_TICK_LSB_MASK,
    MESSAGE_GUID_TIMER_TICK_MASK,
    MESSAGE_GUID_TIMER_TICK_MID_AT,
    MESSAGE_GUID_TIMER_TICK_MID_MASK,
    MESSAGE_GUID_TIMER_TICK_MSB_AT,
    MESSAGE_GUID_TIMER_TICK_MSB_MASK,
    MESSAGE_GUID_VERSION_SHIFT,
)

__all__ = [
    "GUID_SIZE",
    "GuidFields",
    "MessageGuidGenerator",
    "guid_from_hex",
    "guid_hex",
    "parse_guid",
]

GUID_SIZE = MESSAGE_GUID_SIZE
_VERSION = 1
# The first word's fixed part: the version, ready to be or-ed with the counter and tick bits.
_VERSION_BITS = _VERSION << MESSAGE_GUID_VERSION_SHIFT
_COUNTER_MASK = MESSAGE_GUID_COUNTER_MASK
_TICK_MASK = MESSAGE_GUID_TIMER_TICK_MASK

# Different generators in one process get different session ids unless the caller chooses one.
_session_ids = itertools.count(1)


def _host_identity() -> bytes:
    """The IPv4 address of this host in network order, or its name if it does not resolve."""
    name = socket.gethostname()
    try:
        return socket.inet_aton(socket.gethostbyname(name))
    except OSError:
        return name.encode("utf-8", "surrogateescape")


class GuidFields(NamedTuple):
    version: int
    counter: int
    timer_tick: int
    client_id: str  # 12 upper-case hex digits


class MessageGuidGenerator:
    """Makes unique MessageGUIDs; safe to call from several threads."""

    def __init__(
        self, session_id: int | None = None, *, host_identity: bytes | None = None
    ) -> None:
        self.session_id = next(_session_ids) if session_id is None else session_id
        self.nanoseconds_from_epoch = time.time_ns()
        self._timer_base = time.perf_counter_ns()
        digest = hashlib.md5(usedforsecurity=False)
        digest.update(host_identity if host_identity is not None else _host_identity())
        digest.update(self.nanoseconds_from_epoch.to_bytes(8, "big", signed=True))
        digest.update(os.getpid().to_bytes(4, "big", signed=True))
        digest.update((self.session_id % 2**32).to_bytes(4, "big"))  # its low 4 bytes
        self.client_id = digest.digest()[:6]
        self._client_msb = int.from_bytes(self.client_id[:2], "big")
        self._client_lsb = int.from_bytes(self.client_id[2:], "big")
        self._counter = itertools.count()
        self._lock = threading.Lock()

    @property
    def client_id_hex(self) -> str:
        """As sent in the NegotiationMessage's GuidInfo.clientId."""
        return self.client_id.hex().upper()

    def generate(self) -> bytes:
        with self._lock:  # tick and counter must be taken together
            tick = (time.perf_counter_ns() - self._timer_base) & _TICK_MASK
            counter = next(self._counter) & _COUNTER_MASK
        return MESSAGE_GUID.pack(
            _VERSION_BITS
            | (counter << MESSAGE_GUID_COUNTER_SHIFT)
            | (tick >> MESSAGE_GUID_TIMER_TICK_MSB_AT),
            (tick >> MESSAGE_GUID_TIMER_TICK_MID_AT) & MESSAGE_GUID_TIMER_TICK_MID_MASK,
            tick & MESSAGE_GUID_TIMER_TICK_LSB_MASK,
            self._client_msb,
            self._client_lsb,
        )

    def generate_many(self, count: int) -> list[bytes]:
        """``count`` GUIDs in one go (one lock, one clock read per GUID)."""
        pack = MESSAGE_GUID.pack
        now = time.perf_counter_ns
        base = self._timer_base
        msb, lsb = self._client_msb, self._client_lsb
        version, counter_mask, counter_shift = (
            _VERSION_BITS,
            _COUNTER_MASK,
            MESSAGE_GUID_COUNTER_SHIFT,
        )
        msb_at, mid_at = MESSAGE_GUID_TIMER_TICK_MSB_AT, MESSAGE_GUID_TIMER_TICK_MID_AT
        mid_mask, lsb_mask = MESSAGE_GUID_TIMER_TICK_MID_MASK, MESSAGE_GUID_TIMER_TICK_LSB_MASK
        out = []
        with self._lock:
            for counter in itertools.islice(self._counter, count):
                tick = (now() - base) & _TICK_MASK
                out.append(
                    pack(
                        version | ((counter & counter_mask) << counter_shift) | (tick >> msb_at),
                        (tick >> mid_at) & mid_mask,
                        tick & lsb_mask,
                        msb,
                        lsb,
                    )
                )
        return out


def parse_guid(guid: bytes) -> GuidFields:
    """The fields of a version-1 GUID (other versions are opaque: only ``version`` is meaningful)."""
    if len(guid) != GUID_SIZE:
        raise UsageError(f"a MessageGUID is {GUID_SIZE} bytes, got {len(guid)}")
    w0, mid, lsb, _cmsb, _clsb = MESSAGE_GUID.unpack(guid)
    tick = (
        ((w0 & MESSAGE_GUID_TIMER_TICK_MSB_MASK) << MESSAGE_GUID_TIMER_TICK_MSB_AT)
        | (mid << MESSAGE_GUID_TIMER_TICK_MID_AT)
        | lsb
    )
    counter = (w0 >> MESSAGE_GUID_COUNTER_SHIFT) & _COUNTER_MASK
    return GuidFields(w0 >> MESSAGE_GUID_VERSION_SHIFT, counter, tick, guid[10:].hex().upper())


def guid_hex(guid: bytes) -> str:
    """32 upper-case hex digits, as the SDKs print GUIDs."""
    return bytes(guid).hex().upper()


def guid_from_hex(text: str) -> bytes:
    try:
        guid = bytes.fromhex(text)
    except ValueError:
        raise UsageError(f"not a hex MessageGUID: {text!r}") from None
    if len(guid) != GUID_SIZE:
        raise UsageError(f"a MessageGUID is {GUID_SIZE} bytes, got {len(guid)}")
    return guid
