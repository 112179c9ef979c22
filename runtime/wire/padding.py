"""Word padding, as every padded area of the protocol uses it.

The rule is in the layout spec (``padding:``) and the functions are rendered from it with the
message codecs (``pybmq.generated.wire_messages``): data is followed by 1-4 bytes, each holding
the count, so that the total is word aligned (a full word when the data already is). Readers
find the end of the data from the last byte alone (upstream's ProtocolUtil::calcUnpaddedLength).
"""

from __future__ import annotations

from pybmq.generated.wire_codec import PADDING
from pybmq.generated.wire_messages import padding_for, unpadded_length

__all__ = ["PADDING", "padding_for", "unpadded_length"]
