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
from pybmq.generated.wire_codec import MESSAGE_GUID, MESSAGE_GUID_SIZE

__all__ = [
    "GuidFields",
    "MessageGuidGenerator",
    "guid_from_hex",
    "guid_hex",
    "parse_guid",
]

GUID_SIZE = MESSAGE_GUID_SIZE
_VERSION = 1
_COUNTER_MASK = (1 << 22) - 1
_TICK_MASK = (1 << 56) - 1

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
        digest.update((self.session_id & 0xFFFFFFFF).to_bytes(4, "big"))
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
            (_VERSION << 30) | (counter << 8) | (tick >> 48),
            (tick >> 16) & 0xFFFFFFFF,
            tick & 0xFFFF,
            self._client_msb,
            self._client_lsb,
        )

    def generate_many(self, count: int) -> list[bytes]:
        """``count`` GUIDs in one go (one lock, one clock read per GUID)."""
        pack = MESSAGE_GUID.pack
        now = time.perf_counter_ns
        base = self._timer_base
        msb, lsb = self._client_msb, self._client_lsb
        out = []
        with self._lock:
            for counter in itertools.islice(self._counter, count):
                tick = (now() - base) & _TICK_MASK
                out.append(
                    pack(
                        (_VERSION << 30) | ((counter & _COUNTER_MASK) << 8) | (tick >> 48),
                        (tick >> 16) & 0xFFFFFFFF,
                        tick & 0xFFFF,
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
    tick = ((w0 & 0xFF) << 48) | (mid << 16) | lsb
    return GuidFields(w0 >> 30, (w0 >> 8) & _COUNTER_MASK, tick, guid[10:].hex().upper())


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
