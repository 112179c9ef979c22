"""FastStream headers ⇄ BlazingMQ message properties, and the parser that turns a ``Delivery``
into a ``BlazingMQMessage``.

Every header becomes a property and every property a header. A header's value takes the
property type pybmq infers (bool → BOOL, int → INT32 or INT64 by its range, str → STRING,
bytes → BINARY; anything else is an ``EncodeError``); a ``(PropertyType, value)`` pair, or the
``properties=`` a publish takes (a ``MessageProperties`` keeps its types), sets the type
exactly. FastStream's own fields travel as properties too: ``content-type``, ``correlation_id``
and ``reply_to`` (only when set). Trace context (``traceparent``, ``tracestate``) is an
ordinary header, so pybmq's own tracing and FastStream's OpenTelemetry middleware read the
same property.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from faststream._internal.basic_types import DecodedMessage
from faststream.message import StreamMessage, decode_message
from pybmq.faststream.message import BlazingMQMessage, Delivery
from pybmq.wire.properties import MessageProperties, PropertyValue

__all__ = ["CONTENT_TYPE", "CORRELATION_ID", "REPLY_TO", "BlazingMQParser", "to_properties"]

CONTENT_TYPE = "content-type"
CORRELATION_ID = "correlation_id"
REPLY_TO = "reply_to"


def to_properties(
    headers: Mapping[str, Any] | None,
    properties: Mapping[str, Any] | None = None,
    *,
    content_type: str | None = None,
    correlation_id: str | None = None,
    reply_to: str = "",
) -> MessageProperties:
    """The properties of one post: ``headers``, then ``properties`` (typed, winning over a
    header of the same name), then FastStream's fields. A ``MessageProperties`` in either
    keeps its wire types."""
    out = MessageProperties()
    for source in (headers, properties):
        if not source:
            continue
        if isinstance(source, MessageProperties):
            for name, ptype, value in source.typed_items():
                out.set(name, value, ptype)
            continue
        for name, value in source.items():
            if isinstance(value, tuple):
                ptype, typed = value
                out.set(name, typed, int(ptype))
            else:
                out.set(name, value)
    if content_type:
        out.set_string(CONTENT_TYPE, content_type)
    if correlation_id:
        out.set_string(CORRELATION_ID, correlation_id)
    if reply_to:
        out.set_string(REPLY_TO, reply_to)
    return out


def _text(properties: Mapping[str, PropertyValue], name: str) -> str | None:
    value = properties.get(name)
    return value if isinstance(value, str) else None


class BlazingMQParser:
    """Parses a ``Delivery`` into a ``BlazingMQMessage``; decodes by its content type."""

    __slots__ = ()

    @staticmethod
    async def parse_message(delivery: Delivery) -> StreamMessage[Delivery]:
        properties = delivery.properties
        return BlazingMQMessage(
            raw_message=delivery,
            body=delivery.payload,
            headers=dict(properties),
            reply_to=_text(properties, REPLY_TO) or "",
            content_type=_text(properties, CONTENT_TYPE),
            correlation_id=_text(properties, CORRELATION_ID),
            message_id=delivery.guid.hex().upper() or None,
        )

    @staticmethod
    async def decode_message(message: StreamMessage[Any]) -> DecodedMessage:
        return decode_message(message)
