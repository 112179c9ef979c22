"""CRC32-C of PUT application data, as upstream computes it.

bmqp_puteventbuilder.cpp: the checksum covers the application data exactly as it goes on the wire
-- message properties area (with its own word padding) followed by the payload, after compression
when the message is compressed -- and never the final message padding. Verified against the Java
SDK's PUT vector (crc 0xCECD1DCB over its 90 bytes of application data).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["application_data_crc32c", "crc32c", "raw_crc32c"]


def _first_call(data: Any, crc: int = 0) -> int:
    global raw_crc32c
    from crc32c import crc32c as loaded

    raw_crc32c = loaded
    result: int = loaded(data, crc)
    return result


raw_crc32c: Callable[..., int] = _first_call
"""``crc32c(data, crc=0)`` of the ``crc32c`` package, imported by the first call, which puts it in
this name's place. That package's import looks up its own version in the installed packages'
metadata along ``sys.path`` (tens of milliseconds; hundreds in a Spark Python worker, whose path
holds zip files), which a process that never posts nor checks a PUT need not pay. Use it as
``checksum.raw_crc32c`` (or bind it after a first call): a name imported from here keeps the
loader."""


def crc32c(data: bytes | bytearray | memoryview, crc: int = 0) -> int:
    """CRC32-C (Castagnoli) of ``data``, continuing from ``crc``."""
    return raw_crc32c(data, crc)


def application_data_crc32c(properties: bytes | memoryview, payload: bytes | memoryview) -> int:
    """The PutHeader.crc32c value for this (wire-form) properties area and payload."""
    crc = raw_crc32c
    return crc(payload, crc(properties)) if properties else crc(payload)
