"""Compression of message payloads, per the PUT/PUSH header's compression-algorithm field.

What upstream compresses (bmqp_puteventbuilder.cpp) depends on the properties format:
- extended properties (MPS:MESSAGE_PROPERTIES_EX, non-zero schema id): the payload only; the
  properties area stays readable by the broker;
- old properties format (schema id 0): the whole application data (properties + payload).
The C++ builder compresses only when the data is at least 1024 bytes and the result is smaller;
otherwise it sends the data as is with algorithm NONE. zlib is used with its standard stream
format (15-bit window), which Python's ``zlib`` produces and reads.

Decompression is capped: a small input that inflates beyond ``max_size`` is refused with a
ProtocolError instead of exhausting memory.
"""

from __future__ import annotations

import zlib

from pybmq.errors import EncodeError, ProtocolError
from pybmq.generated.wire_codec import (
    COMPRESSION_MIN_APPDATA_SIZE,
    PUT_MAX_PAYLOAD_SIZE_SOFT,
    CompressionAlgorithmType,
)

__all__ = ["DEFAULT_MAX_DECOMPRESSED_SIZE", "compress", "decompress", "maybe_compress"]

# A decompressed payload can never legitimately exceed what a PUT may carry (64 MiB).
DEFAULT_MAX_DECOMPRESSED_SIZE = PUT_MAX_PAYLOAD_SIZE_SOFT


def compress(data: bytes | memoryview, algorithm: int = CompressionAlgorithmType.ZLIB) -> bytes:
    if algorithm == CompressionAlgorithmType.NONE:
        return bytes(data)
    if algorithm == CompressionAlgorithmType.ZLIB:
        return zlib.compress(data)
    raise EncodeError(f"unknown compression algorithm {algorithm!r}")


def maybe_compress(
    data: bytes | memoryview,
    algorithm: int,
    threshold: int = COMPRESSION_MIN_APPDATA_SIZE,
) -> tuple[bytes | memoryview, int]:
    """Upstream's rule: compress when asked, big enough and worth it; return (data, algorithm)."""
    if algorithm == CompressionAlgorithmType.NONE or len(data) < threshold:
        return data, CompressionAlgorithmType.NONE
    packed = compress(data, algorithm)
    if len(packed) < len(data):
        return packed, algorithm
    return data, CompressionAlgorithmType.NONE


def decompress(
    data: bytes | bytearray | memoryview,
    algorithm: int,
    max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    *,
    offset: int | None = None,
) -> bytes:
    """Inflate ``data``; ProtocolError if corrupt, truncated, unknown or larger than ``max_size``."""
    if algorithm == CompressionAlgorithmType.NONE:
        return bytes(data)
    if algorithm != CompressionAlgorithmType.ZLIB:
        raise ProtocolError(
            f"unknown compression algorithm {algorithm}", offset=offset, path="compression"
        )
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(data, max_size + 1)
    except zlib.error as exc:
        raise ProtocolError(f"corrupt zlib data: {exc}", offset=offset, path="payload") from None
    if len(out) > max_size:
        raise ProtocolError(
            f"compressed payload inflates beyond {max_size} bytes", offset=offset, path="payload"
        )
    if not inflater.eof:
        raise ProtocolError("truncated zlib data", offset=offset, path="payload")
    if inflater.unused_data:
        raise ProtocolError(
            f"{len(inflater.unused_data)} bytes after the end of the zlib stream",
            offset=offset,
            path="payload",
        )
    return out
