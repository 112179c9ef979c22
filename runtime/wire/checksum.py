"""CRC32-C of PUT application data, as upstream computes it.

bmqp_puteventbuilder.cpp: the checksum covers the application data exactly as it goes on the wire
-- message properties area (with its own word padding) followed by the payload, after compression
when the message is compressed -- and never the final message padding. Verified against the Java
SDK's PUT vector (crc 0xCECD1DCB over its 90 bytes of application data).
"""

from __future__ import annotations

from crc32c import crc32c as _crc32c

__all__ = ["application_data_crc32c", "crc32c"]


def crc32c(data: bytes | bytearray | memoryview, crc: int = 0) -> int:
    """CRC32-C (Castagnoli) of ``data``, continuing from ``crc``."""
    result: int = _crc32c(data, crc)
    return result


def application_data_crc32c(properties: bytes | memoryview, payload: bytes | memoryview) -> int:
    """The PutHeader.crc32c value for this (wire-form) properties area and payload."""
    result: int = _crc32c(payload, _crc32c(properties)) if properties else _crc32c(payload)
    return result
