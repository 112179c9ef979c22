"""Dissector: events -> a tree of named fields, for people (``pybmq decode``) and tools (JSON).

Headers are read with the construct reference model (``pybmq.generated.wire_layout``), so what a
person sees is the spec's own reading of the bytes, not the fast codec's; message bodies come from
the same iterators the client uses. Every node is plain data (dicts, lists, str, int), ready for
``json.dumps``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Iterator
from typing import Any

from pybmq.errors import ProtocolError
from pybmq.generated import wire_codec, wire_layout
from pybmq.generated.wire_codec import (
    EVENT_HEADER_SIZE,
    CompressionAlgorithmType,
    EncodingType,
    EventType,
    PushHeaderFlags,
    PutHeaderFlags,
)
from pybmq.wire.batches import iter_ack, iter_confirm, iter_reject
from pybmq.wire.capture import DIRECTIONS, iter_records
from pybmq.wire.control import decode_authentication, decode_control, decode_control_event
from pybmq.wire.framing import (
    MAX_EVENT_SIZE,
    Event,
    Filler,
    check_event_length,
    event_type_name,
    iter_events,
)
from pybmq.wire.push import iter_push
from pybmq.wire.put import iter_put

Node = dict[str, Any]

__all__ = [
    "Node",
    "dissect",
    "dissect_capture",
    "dissect_event",
    "dissect_stream",
    "hexdump",
    "render_text",
]


def _fields(
    struct: Any, data: bytes, offset: int, size: int, bits: tuple[tuple[str, int, int], ...] = ()
) -> dict[str, Any]:
    """Parse ``size`` bytes at ``offset`` with a construct struct.

    A header shorter than the struct (an older peer's, e.g. a 28-byte PushHeader) is
    zero-extended for parsing, and the fields it does not hold (per ``bits``) are left out.
    """
    full = struct.sizeof()
    raw = data[offset : offset + min(size, full)].ljust(full, b"\0")
    parsed = struct.parse(raw)
    absent = {name for name, first, _ in bits if first >= size * 8}
    return {
        k: (v.hex() if isinstance(v, bytes) else v)
        for k, v in parsed.items()
        if not k.startswith("_") and k not in absent
    }


def _flag_names(value: int, flags: type[PutHeaderFlags] | type[PushHeaderFlags]) -> str:
    names = [f.name for f in flags if value & f.value and f.name]
    return "|".join(names) if names else "-"


def hexdump(data: bytes, limit: int | None = 64) -> list[str]:
    """Lines like the Java SDK's dumps: offset, four 4-byte groups, printable ASCII."""
    shown = data if limit is None else data[:limit]
    lines = []
    for at in range(0, len(shown), 16):
        chunk = shown[at : at + 16]
        groups = " ".join(chunk[i : i + 4].hex() for i in range(0, len(chunk), 4))
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{at:6}:   {groups:<35}     |{text:<16}|")
    if limit is not None and len(data) > limit:
        lines.append(f"        ... {len(data) - limit} more bytes")
    return lines


def _properties_node(message: Any) -> Node | None:
    props = message.properties
    if props is None:
        return None
    return {
        "format": "extended" if message.schema_id else "old",
        "schema_id": message.schema_id,
        "count": len(props),
        "properties": [
            {"name": n, "type": t.name, "value": v.hex() if isinstance(v, bytes) else v}
            for n, t, v in props.typed_items()
        ],
    }


def _message_node(
    kind: str, message: Any, header: dict[str, Any], payload_limit: int | None
) -> Node:
    flags_enum = PutHeaderFlags if kind == "PUT" else PushHeaderFlags
    header["flags_names"] = _flag_names(header["flags"], flags_enum)
    header["compression_name"] = CompressionAlgorithmType(message.compression).name
    if kind == "PUT":
        header["correlation_id"] = message.correlation_id
    node: Node = {"header": header}
    if message.options:
        node["options"] = {
            "sub_queue_infos": [
                {
                    "sub_queue_id": i.sub_queue_id,
                    "rda_counter": i.rda_counter,
                    "rda_unlimited": bool(i.rda_unlimited),
                    "rda_poisonous": bool(i.rda_poisonous),
                }
                for i in message.sub_queue_infos
            ],
            "msg_group_id": message.msg_group_id,
        }
    props = _properties_node(message)
    if props:
        node["properties"] = props
    node["payload"] = {
        "size": len(message.payload),
        "hex": (
            message.payload.hex()
            if payload_limit is None
            else message.payload[:payload_limit].hex()
        ),
        "preview": hexdump(message.payload, payload_limit),
    }
    return node


def _data_messages(event: Event, payload_limit: int | None) -> list[Node]:
    data = event.data
    kind = "PUT" if event.type == EventType.PUT else "PUSH"
    struct = wire_layout.PutHeader if kind == "PUT" else wire_layout.PushHeader
    bits = wire_codec.PUT_HEADER_BITS if kind == "PUT" else wire_codec.PUSH_HEADER_BITS
    iterate: Any = iter_put if kind == "PUT" else iter_push
    nodes = []
    pos = event.header_size
    try:
        messages: list[Any] = list(iterate(data))
    except ProtocolError as exc:
        if "zlib" not in str(exc):
            raise
        # Show the wire bytes of a payload that does not inflate, and say so.
        messages = list(iterate(data, decompress=False))
        note = f"payload not decompressed: {exc.reason}"
    else:
        note = ""
    for message in messages:
        header = _fields(struct, data, pos, message.header_words * 4, bits)
        node = _message_node(kind, message, header, payload_limit)
        node["offset"] = event.offset + pos
        if note and message.compression:
            node["note"] = note
        nodes.append(node)
        pos += header["message_words"] * 4
    return nodes


def _control_node(event: Event) -> Node:
    encoding, payload = decode_control_event(event)
    node: Node = {"encoding": encoding.name, "payload_size": len(payload)}
    try:
        _, message = decode_control(event)
    except ProtocolError as exc:
        node["error"] = str(exc)
        node["payload_hex"] = payload.hex()
        return node
    from pybmq.generated.bmqp_ctrlmsg_json import encode_json

    node["class"] = type(message).__name__
    node["message"] = json.loads(encode_json(message))
    if encoding == EncodingType.JSON:
        node["text"] = payload.decode("utf-8", "replace")
    return node


def _authentication_node(event: Event) -> Node:
    """An AUTHENTICATION event with the credential material masked: neither the material nor
    the raw payload (which holds it) is shown, only its size."""
    encoding, payload = decode_control_event(event, EventType.AUTHENTICATION)
    node: Node = {"encoding": encoding.name, "payload_size": len(payload)}
    try:
        message, _ = decode_authentication(event)
    except ProtocolError as exc:
        node["error"] = exc.reason
        return node
    from pybmq.generated.bmqp_ctrlmsg_json import encode_json

    request = message.authentication_request
    masked = None if request is None or request.data is None else len(request.data)
    fields = json.loads(encode_json(message))
    if masked is not None:
        fields["authenticationRequest"]["data"] = f"<{masked} bytes masked>"
    node["class"] = type(message).__name__
    node["message"] = fields
    return node


def _batch_node(event: Event, header_struct: Any, entry_struct: Any, entries: list[Any]) -> Node:
    start = event.header_size
    header = _fields(header_struct, event.data, start, header_struct.sizeof())
    return {
        "header": header,
        "entries": [
            {k: (v.hex() if isinstance(v, bytes) else v) for k, v in e._asdict().items()}
            for e in entries
        ],
    }


def dissect_event(event: Event, payload_limit: int | None = 64) -> Node:
    """One event as a tree. ProtocolError offsets are made absolute (file/stream offsets)."""
    header = _fields(wire_layout.EventHeader, event.data, 0, 8)
    header["type_name"] = event_type_name(header["type"])
    node: Node = {"offset": event.offset, "type": event.type_name, "event_header": header}
    try:
        etype = event.type
        if etype == EventType.CONTROL:
            node["control"] = _control_node(event)
        elif etype == EventType.AUTHENTICATION:
            node["authentication"] = _authentication_node(event)
        elif etype == EventType.PUT or etype == EventType.PUSH:
            node["messages"] = _data_messages(event, payload_limit)
        elif etype == EventType.ACK:
            node.update(
                _batch_node(
                    event, wire_layout.AckHeader, wire_layout.AckMessage, list(iter_ack(event))
                )
            )
        elif etype == EventType.CONFIRM:
            node.update(
                _batch_node(
                    event,
                    wire_layout.ConfirmHeader,
                    wire_layout.ConfirmMessage,
                    list(iter_confirm(event)),
                )
            )
        elif etype == EventType.REJECT:
            node.update(
                _batch_node(
                    event,
                    wire_layout.RejectHeader,
                    wire_layout.RejectMessage,
                    list(iter_reject(event)),
                )
            )
        elif etype in (EventType.HEARTBEAT_REQ, EventType.HEARTBEAT_RSP):
            node["body"] = wire_codec.EVENT_BODIES[EventType(etype)]
        else:
            node["body"] = wire_codec.EVENT_BODIES.get(etype, "not a client-side event")  # type: ignore[call-overload]
            node["body_size"] = len(event.data) - event.header_size
            node["body_preview"] = hexdump(bytes(event.body), payload_limit)
    except ProtocolError as exc:
        where = event.offset + (exc.offset or 0)
        raise ProtocolError(
            f"{event.type_name} event at offset {event.offset}: {exc.reason}",
            offset=where,
            path=exc.path,
        ) from exc
    return node


def dissect_stream(
    chunks: Iterable[bytes], payload_limit: int | None = 64, max_event_size: int = MAX_EVENT_SIZE
) -> Iterator[Node]:
    """As :func:`dissect`, over a capture read in chunks: holds one event at a time, so memory
    stays bounded by ``max_event_size`` whatever the capture's size."""
    buf = bytearray()
    base = 0  # stream offset of buf[0]
    filler: int | None = None  # stream offset where the zero tail began
    for chunk in chunks:
        if filler is not None:
            if any(chunk):
                raise ProtocolError("non-zero bytes after the zero filler", offset=base)
            base += len(chunk)
            continue
        buf += chunk
        pos = 0
        while len(buf) - pos >= 4:
            if not any(memoryview(buf)[pos:]):
                filler = base + pos
                break
            length = int.from_bytes(buf[pos : pos + 4], "big") & 0x7FFFFFFF
            check_event_length(length, base + pos, max_event_size)
            if len(buf) - pos < max(length, EVENT_HEADER_SIZE):
                break
            event = _frame(buf[pos : pos + length], base + pos, max_event_size)
            yield dissect_event(event, payload_limit)
            pos += length
        if filler is not None:
            base += len(buf)
            buf.clear()
        else:
            del buf[:pos]
            base += pos
    if filler is not None:
        yield {"filler": {"offset": filler, "size": base - filler}}
    elif buf and not any(buf):
        yield {"filler": {"offset": base, "size": len(buf)}}
    elif buf:
        _frame(buf, base, max_event_size)  # an incomplete last event: raises, naming its offset


def dissect_capture(chunks: Iterable[bytes], payload_limit: int | None = 64) -> Iterator[Node]:
    """The events of a ``pybmq tap`` capture, each with its direction, connection and time."""
    import datetime

    for record in iter_records(chunks):
        node = dissect_event(
            _frame(bytearray(record.event), record.offset, MAX_EVENT_SIZE), payload_limit
        )
        when = datetime.datetime.fromtimestamp(record.time_ns / 1e9, datetime.timezone.utc)
        node["tap"] = {
            "direction": DIRECTIONS[record.direction],
            "connection": record.connection,
            "time": when.isoformat(timespec="microseconds"),
        }
        yield node


def _frame(data: bytearray, offset: int, max_event_size: int) -> Event:
    """The one event that is ``data`` (found at stream ``offset``); errors name that offset."""
    try:
        (event,) = iter_events(bytes(data), max_event_size)
    except ProtocolError as exc:
        raise ProtocolError(exc.reason, offset=offset + (exc.offset or 0), path=exc.path) from None
    assert isinstance(event, Event)
    return dataclasses.replace(event, offset=offset)


def dissect(buf: bytes, payload_limit: int | None = 64) -> Iterator[Node]:
    """Every event of a capture (then its trailing filler, if any), as trees."""
    for item in iter_events(buf):
        if isinstance(item, Filler):
            yield {"filler": {"offset": item.offset, "size": item.size}}
        else:
            yield dissect_event(item, payload_limit)


# -- text rendering --------------------------------------------------------------------------------


def _render_fields(title: str, fields: dict[str, Any], indent: str) -> list[str]:
    width = max((len(k) for k in fields), default=0)
    lines = [f"{indent}[{title}]"]
    lines += [f"{indent}\t{k:<{width}} : {v}" for k, v in fields.items()]
    return lines


def render_text(node: Node) -> str:
    """A tree in the spirit of the Java SDK's dumps (tests/vectors/java-sdk/*.txt)."""
    if "filler" in node:
        f = node["filler"]
        return f"[Filler] {f['size']} zero bytes at offset {f['offset']} (after the last event)"
    lines = [f"[{node['type']} event] offset {node['offset']}"]
    if "tap" in node:
        t = node["tap"]
        lines.append(f"[Tap] connection {t['connection']} {t['direction']} at {t['time']}")
    lines += _render_fields("EventHeader", node["event_header"], "")
    for key, title in (("control", "ControlMessage"), ("authentication", "AuthenticationMessage")):
        if key not in node:
            continue
        c = node[key]
        lines.append(f"[{title}] encoding {c['encoding']}, {c['payload_size']} bytes")
        if "message" in c:
            lines.append(f"\tclass   : {c['class']}")
            lines.append(f"\tmessage : {json.dumps(c['message'], sort_keys=False)}")
        else:
            lines.append(f"\terror   : {c['error']}")
    for i, m in enumerate(node.get("messages", [])):
        lines += _render_fields(
            f"{node['type'].capitalize()}Header #{i} @{m['offset']}", m["header"], ""
        )
        if "options" in m:
            lines.append(f"[Options] {json.dumps(m['options'])}")
        if "properties" in m:
            p = m["properties"]
            lines.append(f"[MessageProperties] {p['format']} format, {p['count']} properties")
            lines += [f"\t{q['name']} ({q['type']}) = {q['value']!r}" for q in p["properties"]]
        if "note" in m:
            lines.append(f"[Note] {m['note']}")
        lines.append(f"[Payload] {m['payload']['size']} bytes")
        lines += m["payload"]["preview"]
    if "entries" in node:
        lines += _render_fields("BatchHeader", node["header"], "")
        for i, e in enumerate(node["entries"]):
            lines.append(f"\t#{i}: " + ", ".join(f"{k}={v}" for k, v in e.items()))
    if "body_size" in node:
        lines.append(f"[Body] {node['body_size']} bytes (not dissected): {node['body']}")
        lines += node["body_preview"]
    elif "body" in node:
        lines.append(f"[Body] {node['body']}")
    return "\n".join(lines)
