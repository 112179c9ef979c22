"""What a post may carry: a bytes payload (copied), a size the protocol can carry with its
properties, and a compression by name. Checked before anything is buffered, so a refused post
leaves no trace."""

from __future__ import annotations

from pybmq.client.records import ZLIB
from pybmq.errors import UsageError
from pybmq.generated.wire_codec import PUT_MAX_PAYLOAD_SIZE_SOFT
from pybmq.wire.compression import maybe_compress

__all__ = ["COMPRESSIONS", "MAX_APP_DATA", "as_bytes", "check_size", "compresses"]

# The most a message (properties and payload, after compression) may carry.
MAX_APP_DATA = PUT_MAX_PAYLOAD_SIZE_SOFT


def as_bytes(payload: object) -> bytes:
    """A bytes-like payload as bytes (copied, so a later change to a buffer does not leak into
    the message); anything else is a UsageError."""
    if not isinstance(payload, (bytearray, memoryview)):
        raise UsageError(f"payload must be bytes, not {type(payload).__name__}")
    return bytes(payload)


COMPRESSIONS = {"none": False, "zlib": True}


def compresses(compression: str) -> bool:
    """Whether a post's ``compression`` (``"none"`` or ``"zlib"``) compresses; UsageError for
    anything else."""
    try:
        return COMPRESSIONS[str(compression).lower()]
    except KeyError:
        raise UsageError(
            f"compression must be 'none' or 'zlib' (None: the session's threshold), "
            f"not {compression!r}"
        ) from None


def check_size(payload: bytes, area: int, compress: bool, threshold: int) -> None:
    """UsageError naming the size and the limit for an empty message or one the protocol
    cannot carry (``area``: the size of its properties' wire form)."""
    limit = MAX_APP_DATA
    size = len(payload)
    if not size:
        raise UsageError("cannot post an empty payload")
    if size > limit:
        raise UsageError(
            f"cannot post: a payload of {size} bytes exceeds the limit of {limit} bytes"
        )
    if compress:  # what goes out is the compressed payload (rare: only this close to the limit)
        size = len(maybe_compress(payload, ZLIB, threshold)[0])
        if area + size <= limit:
            return
    raise UsageError(
        f"cannot post: a message of {area + size} bytes (properties {area} + payload {size}) "
        f"exceeds the limit of {limit} bytes"
    )
