"""The capture file ``pybmq tap`` writes: records appended as events end, the file held to a
size, then rotated (FILE → FILE.1 → ... FILE.N) or no longer written.

Every file starts with the capture's magic line and holds whole records only, so each one,
rotated or not, is a capture ``pybmq decode`` reads on its own.
"""

from __future__ import annotations

import logging
import os
import time
from typing import BinaryIO

__all__ = ["Recorder"]

log = logging.getLogger("pybmq.cli.tap")


class Recorder:
    """Appends events to the capture; ``events`` counts the recorded ones per direction."""

    def __init__(self, path: str, mask: bool, max_size: int, rotate: int) -> None:
        self.path = path
        self.mask = mask
        self.max_size = max_size
        self.rotate = rotate
        self.events = [0, 0]
        self.cut = 0  # events recorded cut (over --snaplen)
        self.dropped = 0  # events not recorded: the capture was full
        self.rotations = 0
        self._out: BinaryIO | None = None
        self._size = 0
        self._open()

    def _open(self) -> None:
        from pybmq.wire.capture import MAGIC

        self._out = open(self.path, "wb")  # noqa: SIM115 - closed by close() or _rotate()
        self._out.write(MAGIC)
        self._size = len(MAGIC)

    def _rotate(self) -> None:
        """FILE.k → FILE.k+1 (the oldest beyond ``rotate`` goes), FILE → FILE.1, a new FILE."""
        assert self._out is not None
        self._out.close()
        for k in range(self.rotate - 1, 0, -1):
            older = f"{self.path}.{k}"
            if os.path.exists(older):
                os.replace(older, f"{self.path}.{k + 1}")
        os.replace(self.path, f"{self.path}.1")
        self.rotations += 1
        self._open()

    def record(self, direction: int, connection: int, events: list[tuple[bytes, int]]) -> None:
        """``events``: (the bytes kept of each, its length) as ``SnapFramer.feed`` gives them."""
        from pybmq.wire.capture import encode_record, mask_event, record_size

        if not events:
            return
        now = time.time_ns()
        for event, length in events:
            size = record_size(len(event), length)
            if self._size + size > self.max_size:
                if not self.rotate:
                    if self._out is not None:
                        log.warning(
                            "the capture reached --max-capture-size %d: recording stops "
                            "(traffic still passes)",
                            self.max_size,
                        )
                        self._out.close()
                        self._out = None
                    self.dropped += 1
                    continue
                self._rotate()
            assert self._out is not None
            if self.mask:
                event = mask_event(event)
            self._out.write(encode_record(direction, connection, now, event, length))
            self._size += size
            self.events[direction] += 1
            self.cut += length > len(event)
        if self._out is not None:
            self._out.flush()

    def close(self) -> None:
        if self._out is not None:
            self._out.close()
            self._out = None

    def summary(self) -> str:
        """What the stop line adds: cut events, rotations, events not recorded."""
        parts = []
        if self.cut:
            parts.append(f"{self.cut} cut at --snaplen")
        if self.rotations:
            parts.append(f"{self.rotations} rotations (--rotate {self.rotate})")
        if self.dropped:
            parts.append(f"{self.dropped} not recorded (--max-capture-size {self.max_size})")
        return f" ({', '.join(parts)})" if parts else ""
