"""Dissector: events -> a tree of named fields, for people (``pybmq decode``) and tools (JSON).

Headers are read with the fast struct codec (``pybmq.generated.wire_codec``), the one the client
and the simulator use; tests check it field by field against the construct reference model
(``pybmq.generated.wire_layout``), which stays out of this hot path (it cost 95% of the time).
Message bodies come from the same iterators the client uses. Every node is plain data (dicts,
lists, str, int), ready for ``json.dumps``.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

from pybmq.errors import ProtocolError
from pybmq.generated import wire_codec
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


class _Header(NamedTuple):
    """How to read one header kind: the codec's unpack function, its size, its fields' names
    and first bits, and which of them are bytes (shown as hex)."""

    unpack: Callable[[Any, int], Any]
    size: int
    names: tuple[str, ...]
    first_bits: tuple[int, ...]
    hex_fields: tuple[int, ...]


def _header(name: str) -> _Header:
    size = wire_codec.STRUCTS[name].size
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
    bits = getattr(wire_codec, f"{snake.upper()}_BITS")
    unpack = getattr(wire_codec, f"unpack_{snake}")
    zero = unpack(bytes(size), 0)
    hex_fields = tuple(i for i, v in enumerate(zero) if isinstance(v, bytes))
    return _Header(unpack, size, tuple(b[0] for b in bits), tuple(b[1] for b in bits), hex_fields)


_EVENT = _header("EventHeader")
_PUT = _header("PutHeader")
_PUSH = _header("PushHeader")
_BATCH_HEADERS: dict[int, _Header] = {
    EventType.ACK: _header("AckHeader"),
    EventType.CONFIRM: _header("ConfirmHeader"),
    EventType.REJECT: _header("RejectHeader"),
}


def _fields(header: _Header, data: bytes, offset: int, size: int) -> dict[str, Any]:
    """Read the header at ``offset``, ``size`` bytes long on the wire, as named fields.

    A header shorter than its struct (an older peer's, e.g. a 28-byte PushHeader) is
    zero-extended for reading, and the fields it does not hold are left out.
    """
    full = header.size
    if size >= full and len(data) - offset >= full:
        values = list(header.unpack(data, offset))
        for i in header.hex_fields:
            values[i] = values[i].hex()
        return dict(zip(header.names, values, strict=True))
    raw = bytes(data[offset : offset + min(size, full)]).ljust(full, b"\0")
    values = list(header.unpack(raw, 0))
    for i in header.hex_fields:
        values[i] = values[i].hex()
    return {
        name: value
        for name, first, value in zip(header.names, header.first_bits, values, strict=True)
        if first < size * 8
    }


@functools.lru_cache(maxsize=64)
def _flag_names(value: int, flags: type[PutHeaderFlags] | type[PushHeaderFlags]) -> str:
    names = [f.name for f in flags if value & f.value and f.name]
    return "|".join(names) if names else "-"


@functools.lru_cache(maxsize=16)
def _compression_name(value: int) -> str:
    return CompressionAlgorithmType(value).name


# Byte -> itself when printable ASCII, else ".": the right-hand column of a hex dump.
_PRINTABLE = bytes(b if 32 <= b < 127 else 0x2E for b in range(256))


def hexdump(data: bytes, limit: int | None = 64) -> list[str]:
    """Lines like the Java SDK's dumps: offset, four 4-byte groups, printable ASCII."""
    shown = bytes(data if limit is None else data[:limit])
    text = shown.translate(_PRINTABLE).decode("ascii")
    lines = [
        f"{at:6}:   {shown[at : at + 16].hex(' ', -4):<35}     |{text[at : at + 16]:<16}|"
        for at in range(0, len(shown), 16)
    ]
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
    kind: str, message: Any, header: dict[str, Any], payload_limit: int | None, previews: bool
) -> Node:
    flags_enum = PutHeaderFlags if kind == "PUT" else PushHeaderFlags
    header["flags_names"] = _flag_names(header["flags"], flags_enum)
    header["compression_name"] = _compression_name(message.compression)
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
    }
    if previews:
        node["payload"]["preview"] = hexdump(message.payload, payload_limit)
    return node


def _data_messages(event: Event, payload_limit: int | None, previews: bool) -> list[Node]:
    data = event.data
    kind = "PUT" if event.type == EventType.PUT else "PUSH"
    reader = _PUT if kind == "PUT" else _PUSH
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
        header = _fields(reader, data, pos, message.header_words * 4)
        node = _message_node(kind, message, header, payload_limit, previews)
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


def _batch_node(event: Event, entries: list[Any]) -> Node:
    reader = _BATCH_HEADERS[event.type]
    header = _fields(reader, event.data, event.header_size, reader.size)
    return {"header": header, "entries": _rows(entries)}


def _rows(entries: list[Any]) -> list[dict[str, Any]]:
    """Batch entries (NamedTuples of one type) as dicts, their bytes fields (GUIDs) as hex."""
    if not entries:
        return []
    names = type(entries[0])._fields
    hexed = [i for i, value in enumerate(entries[0]) if isinstance(value, bytes)]
    rows = []
    for entry in entries:
        values = list(entry)
        for i in hexed:
            values[i] = values[i].hex()
        rows.append(dict(zip(names, values, strict=True)))
    return rows


def dissect_event(event: Event, payload_limit: int | None = 64, previews: bool = True) -> Node:
    """One event as a tree. ProtocolError offsets are made absolute (file/stream offsets).

    ``previews`` adds the hex-dump lines people read (``render_text`` needs them; JSON does not).
    """
    header = _fields(_EVENT, event.data, 0, 8)
    header["type_name"] = event_type_name(header["type"])
    node: Node = {"offset": event.offset, "type": event.type_name, "event_header": header}
    try:
        etype = event.type
        if etype == EventType.CONTROL:
            node["control"] = _control_node(event)
        elif etype == EventType.AUTHENTICATION:
            node["authentication"] = _authentication_node(event)
        elif etype == EventType.PUT or etype == EventType.PUSH:
            node["messages"] = _data_messages(event, payload_limit, previews)
        elif etype == EventType.ACK:
            node.update(_batch_node(event, list(iter_ack(event))))
        elif etype == EventType.CONFIRM:
            node.update(_batch_node(event, list(iter_confirm(event))))
        elif etype == EventType.REJECT:
            node.update(_batch_node(event, list(iter_reject(event))))
        elif etype in (EventType.HEARTBEAT_REQ, EventType.HEARTBEAT_RSP):
            node["body"] = wire_codec.EVENT_BODIES[EventType(etype)]
        else:
            node["body"] = wire_codec.EVENT_BODIES.get(etype, "not a client-side event")  # type: ignore[call-overload]
            node["body_size"] = len(event.data) - event.header_size
            if previews:
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
    chunks: Iterable[bytes],
    payload_limit: int | None = 64,
    max_event_size: int = MAX_EVENT_SIZE,
    previews: bool = True,
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
        error: ProtocolError | None = None
        while len(buf) - pos >= 4:  # find the complete events
            if not any(memoryview(buf)[pos:]):
                filler = base + pos
                break
            length = int.from_bytes(buf[pos : pos + 4], "big") & 0x7FFFFFFF
            try:
                check_event_length(length, base + pos, max_event_size)
            except ProtocolError as exc:
                error = exc
                break
            if len(buf) - pos < max(length, EVENT_HEADER_SIZE):
                break
            pos += length
        for event in iter_events(bytes(buf[:pos]), max_event_size, base):
            assert isinstance(event, Event)  # the zero tail is not in buf[:pos]
            yield dissect_event(event, payload_limit, previews)
        if error is not None:  # after every event before it
            raise error
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
        list(iter_events(buf, max_event_size, base))  # an incomplete last event: raises


def dissect_capture(
    chunks: Iterable[bytes], payload_limit: int | None = 64, previews: bool = True
) -> Iterator[Node]:
    """The events of a ``pybmq tap`` capture, each with its direction, connection and time."""
    import datetime

    for record in iter_records(chunks):
        (event,) = iter_events(record.event, MAX_EVENT_SIZE, record.offset)
        assert isinstance(event, Event)
        node = dissect_event(event, payload_limit, previews)
        when = datetime.datetime.fromtimestamp(record.time_ns / 1e9, datetime.timezone.utc)
        node["tap"] = {
            "direction": DIRECTIONS[record.direction],
            "connection": record.connection,
            "time": when.isoformat(timespec="microseconds"),
        }
        yield node


def dissect(buf: bytes, payload_limit: int | None = 64) -> Iterator[Node]:
    """Every event of a capture (then its trailing filler, if any), as trees."""
    for item in iter_events(buf):
        if isinstance(item, Filler):
            yield {"filler": {"offset": item.offset, "size": item.size}}
        else:
            yield dissect_event(item, payload_limit)


# -- text rendering --------------------------------------------------------------------------------


@functools.lru_cache(maxsize=256)
def _template(keys: tuple[str, ...], line: str, separator: str) -> str:
    """A ``str.format`` template with one ``{}`` per key, cached per key set (the keys of a
    header kind never change), so each node is formatted in one call."""
    width = max((len(k) for k in keys), default=0)
    return separator.join(
        line.format(key=k.replace("{", "{{").replace("}", "}}"), pad=" " * (width - len(k)))
        for k in keys
    )


def _render_fields(title: str, fields: dict[str, Any]) -> str:
    body = _template(tuple(fields), "\n\t{key}{pad} : {{}}", "").format(*fields.values())
    return f"[{title}]{body}"


def render_text(node: Node) -> str:
    """A tree in the spirit of the Java SDK's dumps (tests/vectors/java-sdk/*.txt)."""
    if "filler" in node:
        f = node["filler"]
        return f"[Filler] {f['size']} zero bytes at offset {f['offset']} (after the last event)"
    lines = [f"[{node['type']} event] offset {node['offset']}"]
    if "tap" in node:
        t = node["tap"]
        lines.append(f"[Tap] connection {t['connection']} {t['direction']} at {t['time']}")
    lines.append(_render_fields("EventHeader", node["event_header"]))
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
        title = f"{node['type'].capitalize()}Header #{i} @{m['offset']}"
        lines.append(_render_fields(title, m["header"]))
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
        lines.append(_render_fields("BatchHeader", node["header"]))
        for i, e in enumerate(node["entries"]):
            lines.append(f"\t#{i}: " + _template(tuple(e), "{key}={{}}", ", ").format(*e.values()))
    if "body_size" in node:
        lines.append(f"[Body] {node['body_size']} bytes (not dissected): {node['body']}")
        lines += node["body_preview"]
    elif "body" in node:
        lines.append(f"[Body] {node['body']}")
    return "\n".join(lines)
