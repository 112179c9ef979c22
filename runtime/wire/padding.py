"""Word padding, as every padded area of the protocol uses it.

The rule is in the layout spec (``padding:``) and the table comes from the generated codec: data
is followed by 1-4 bytes, each holding the count, so that the total is word aligned (a full word
when the data already is). Readers find the end of the data from the last byte alone.
"""

from __future__ import annotations

from pybmq.errors import ProtocolError
from pybmq.generated.wire_codec import PADDING, WORD_SIZE

__all__ = ["PADDING", "padding_for", "unpadded_length"]


def padding_for(length: int) -> bytes:
    """The padding bytes that follow ``length`` bytes of data."""
    return PADDING[length % WORD_SIZE]


def unpadded_length(buf: bytes | bytearray | memoryview, start: int, end: int, what: str) -> int:
    """Length of the data in ``buf[start:end]`` once its padding is removed.

    Like upstream (ProtocolUtil::calcUnpaddedLength) only the last byte is read; it must be 1..4
    and fit in the area.
    """
    if end <= start:
        raise ProtocolError(f"{what}: empty area where padded data was expected", offset=start)
    pad = buf[end - 1]
    if not 1 <= pad <= 4 or pad > end - start:
        raise ProtocolError(f"{what}: invalid padding byte {pad}", offset=end - 1, path=what)
    return end - start - pad
