"""Dissector: events -> a tree of named fields, for people (``pybmq decode``) and tools (JSON).

Headers are read with the fast struct codec (``pybmq.generated.wire_codec``), the one the client
and the simulator use; tests check it field by field against the construct reference model
(``pybmq.generated.wire_layout``), which stays out of this hot path (it cost 95% of the time).
Message bodies come from the same iterators the client uses. Every node is plain data (dicts,
lists, str, int), ready for ``json.dumps``; ``pybmq.wire.render`` prints them (and prints the
common events without building their nodes at all).
"""

from __future__ import annotations

import functools
import json
import operator
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

from pybmq.errors import ProtocolError
from pybmq.generated import wire_codec
from pybmq.generated.wire_codec import (
    EVENT_HEADER_LENGTH_MASK,
    EVENT_HEADER_SIZE,
    WORD,
    WORD_SIZE,
    CompressionAlgorithmType,
    EncodingType,
    EventType,
    PushHeaderFlags,
    PutHeaderFlags,
    unpack_ack_header,
    unpack_confirm_header,
    unpack_event_header,
    unpack_push_header,
    unpack_put_header,
    unpack_reject_header,
)
from pybmq.wire.batches import iter_ack, iter_confirm, iter_reject
from pybmq.wire.capture import capture_events
from pybmq.wire.compression import decompress
from pybmq.wire.control import decode_authentication, decode_control, decode_control_event
from pybmq.wire.framing import (
    MAX_EVENT_SIZE,
    Event,
    Filler,
    check_event_length,
    event_type_name,
    iter_events,
)
from pybmq.wire.properties import TYPE_NAMES, decode_properties, properties_area_size
from pybmq.wire.push import iter_push
from pybmq.wire.put import iter_put

Node = dict[str, Any]


__all__ = [
    "BATCH_HEADERS",
    "EVENT_FIELDS",
    "FRAGMENTS_MAX",
    "FRAGMENT_KEY_MAX",
    "MAX_INFLATED_MESSAGE",
    "PUSH_FIELDS",
    "PUT_FIELDS",
    "Node",
    "at_event",
    "capture_event_node",
    "capture_events",
    "compression_label",
    "dissect",
    "dissect_capture",
    "dissect_event",
    "dissect_stream",
    "dump_bytes",
    "flag_names",
    "header_fields",
    "hexdump",
    "keep",
    "options_json",
    "properties_node",
    "read_messages",
    "stream_events",
]


class _Header(NamedTuple):
    """How to read one header kind: the codec's unpack function, its size, its fields' names
    and first bits, and which of them are bytes (shown as hex)."""

    unpack: Callable[[Any, int], Any]
    size: int
    names: tuple[str, ...]
    first_bits: tuple[int, ...]
    hex_fields: tuple[int, ...]


def _header(name: str, unpack: Callable[[Any, int], Any]) -> _Header:
    size = wire_codec.STRUCTS[name].size
    bits = wire_codec.BIT_LAYOUTS[name]
    zero = unpack(bytes(size), 0)
    hex_fields = tuple(i for i, v in enumerate(zero) if isinstance(v, bytes))
    return _Header(unpack, size, tuple(b[0] for b in bits), tuple(b[1] for b in bits), hex_fields)


EVENT_FIELDS = _header("EventHeader", unpack_event_header)
PUT_FIELDS = _header("PutHeader", unpack_put_header)
PUSH_FIELDS = _header("PushHeader", unpack_push_header)
BATCH_HEADERS: dict[int, _Header] = {
    EventType.ACK: _header("AckHeader", unpack_ack_header),
    EventType.CONFIRM: _header("ConfirmHeader", unpack_confirm_header),
    EventType.REJECT: _header("RejectHeader", unpack_reject_header),
}


def header_fields(header: _Header, data: bytes, offset: int, size: int) -> dict[str, Any]:
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
def flag_names(value: int, flags: type[PutHeaderFlags] | type[PushHeaderFlags]) -> str:
    names = [f.name for f in flags if value & f.value and f.name]
    return "|".join(names) if names else "-"


@functools.lru_cache(maxsize=16)
def compression_label(value: int) -> str:
    return CompressionAlgorithmType(value).name


# Byte -> itself when printable ASCII, else ".": the right-hand column of a hex dump.
_PRINTABLE = bytes(b if 32 <= b < 127 else 0x2E for b in range(256))


@functools.lru_cache(maxsize=1024)
def _dump_layout(size: int) -> tuple[str, Callable[[str], tuple[str, ...]], int]:
    """How to lay out ``size`` shown bytes: a ``%`` template (one line per 16 bytes) and the
    getter cutting its arguments, in order, out of the hex text and the ASCII column laid end to
    end (both padded to whole lines)."""
    lines = (size + 15) // 16
    template = "\n".join(f"{at:6}:   %s     |%s|" for at in range(0, size, 16))
    hex_width = 36 * lines  # four groups of 8 digits and a space per line
    cuts = []
    for line in range(lines):
        cuts += [
            slice(36 * line, 36 * line + 35),
            slice(hex_width + 16 * line, hex_width + 16 * line + 16),
        ]
    getter = operator.itemgetter(*cuts) if len(cuts) > 1 else (lambda text: (text[cuts[0]],))
    return template, getter, hex_width


def dump_bytes(data: bytes, limit: int | None) -> str:
    """:func:`hexdump`'s lines as one string ("" for nothing to show)."""
    shown = data if limit is None or len(data) <= limit else data[:limit]
    size = len(shown)
    if not size:
        text = ""
    elif size <= 16:  # one line (what _dump_layout makes for it, without the cutting)
        ascii_column = shown.translate(_PRINTABLE).decode("ascii")
        text = f"     0:   {shown.hex(' ', -4):35}     |{ascii_column:16}|"
    else:
        template, getter, hex_width = _dump_layout(size)
        both = shown.hex(" ", -4).ljust(hex_width) + shown.translate(_PRINTABLE).decode(
            "ascii"
        ).ljust(hex_width // 36 * 16)
        text = template % getter(both)
    if limit is not None and len(data) > limit:
        more = f"        ... {len(data) - limit} more bytes"
        return f"{text}\n{more}" if text else more
    return text


def hexdump(data: bytes, limit: int | None = 64) -> list[str]:
    """Lines like the Java SDK's dumps: offset, four 4-byte groups, printable ASCII."""
    text = dump_bytes(bytes(data), limit)
    return text.split("\n") if text else []


def properties_node(message: Any) -> Node | None:
    area = message.properties_area
    if not area:
        return None
    # Parsed straight from the area: a printed message's properties are read once.
    items = decode_properties(area, extended=message.schema_id != 0)
    names = TYPE_NAMES
    return {
        "format": "extended" if message.schema_id else "old",
        "schema_id": message.schema_id,
        "count": len(items),
        "properties": [
            {"name": n, "type": names[t], "value": v.hex() if isinstance(v, bytes) else v}
            for n, (t, v) in items.items()
        ],
    }


# Rendered fragments that repeat (options, properties, event and batch heads), each cache keyed by
# the bytes the fragment is read from: a consumer's PUSHes repeat the same few. Bounded: at most
# FRAGMENTS_MAX entries per cache and keys of at most FRAGMENT_KEY_MAX bytes; past that, fragments
# are rendered each time.
FRAGMENTS_MAX = 1024
FRAGMENT_KEY_MAX = 512
_OPTIONS_JSON: dict[bytes, str] = {}
_OPTIONS_JSON_MAX = FRAGMENTS_MAX


def keep(cache: dict[Any, Any], key: Any, size: int, value: Any) -> None:
    """Remember ``value`` under ``key`` (read from ``size`` bytes) if ``cache`` has room."""
    if len(cache) < FRAGMENTS_MAX and size <= FRAGMENT_KEY_MAX:
        cache[key] = value


def options_json(message: Any) -> str:
    text = _OPTIONS_JSON.get(message.options)
    if text is None:
        text = json.dumps(_options_node(message))
        keep(_OPTIONS_JSON, bytes(message.options), len(message.options), text)
    return text


def _options_node(message: Any) -> Node:
    return {
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


def _message_node(
    kind: str, message: Any, header: dict[str, Any], payload_limit: int | None, previews: bool
) -> Node:
    flags_enum = PutHeaderFlags if kind == "PUT" else PushHeaderFlags
    header["flags_names"] = flag_names(header["flags"], flags_enum)
    header["compression_name"] = compression_label(message.compression)
    if kind == "PUT":
        header["correlation_id"] = message.correlation_id
    node: Node = {"header": header}
    if message.options:
        node["options"] = _options_node(message)
    props = properties_node(message)
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


# The most ``pybmq decode`` inflates of one message; a message that inflates beyond it is shown as
# its wire bytes with a note. Messages are inflated one at a time, as they are printed, so memory
# stays bounded by this whatever the file holds (a file of zlib bombs included).
MAX_INFLATED_MESSAGE = 4 * 1024 * 1024


def read_messages(
    event: Event, max_inflated: int = MAX_INFLATED_MESSAGE
) -> Iterator[tuple[Any, str]]:
    """(message, note) for each message of a PUT or PUSH event, each inflated (to at most
    ``max_inflated`` bytes) only when it is reached; the note says why a compressed message is
    shown as its wire bytes ("" when it inflated)."""
    put = event.type == EventType.PUT
    iterate: Any = iter_put if put else iter_push
    flag = PutHeaderFlags.MESSAGE_PROPERTIES if put else PushHeaderFlags.MESSAGE_PROPERTIES
    for message in iterate(event.data, decompress=False):
        if not message.compression:
            yield message, ""
            continue
        try:
            app = decompress(message.payload, message.compression, max_inflated)
            area = message.properties_area
            if message.flags & flag and not message.schema_id:
                # Old properties format: properties and payload were compressed together.
                size = properties_area_size(app, 0, len(app))
                area, app = app[:size], app[size:]
        except ProtocolError as exc:
            yield message, f"payload not decompressed: {exc.reason}"
            continue
        yield message._replace(properties_area=area, payload=app), ""


def _message_at(
    event: Event, pos: int, message: Any, note: str, payload_limit: int | None, previews: bool
) -> Node:
    """The node of the message whose header is at ``pos`` in the event."""
    kind = "PUT" if event.type == EventType.PUT else "PUSH"
    header = header_fields(
        PUT_FIELDS if kind == "PUT" else PUSH_FIELDS,
        event.data,
        pos,
        message.header_words * WORD_SIZE,
    )
    node = _message_node(kind, message, header, payload_limit, previews)
    node["offset"] = event.offset + pos
    if note and message.compression:
        node["note"] = note
    return node


def _data_messages(event: Event, payload_limit: int | None, previews: bool) -> list[Node]:
    nodes = []
    pos = event.header_size
    for message, note in read_messages(event):
        node = _message_at(event, pos, message, note, payload_limit, previews)
        nodes.append(node)
        pos += node["header"]["message_words"] * WORD_SIZE
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
    reader = BATCH_HEADERS[event.type]
    header = header_fields(reader, event.data, event.header_size, reader.size)
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
    node = _head(event)
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
            node["body_size"] = max(0, len(event.data) - event.header_size)
            if previews:
                node["body_preview"] = hexdump(bytes(event.body), payload_limit)
    except ProtocolError as exc:
        raise at_event(event, exc) from exc
    return node


def at_event(event: Event, exc: ProtocolError) -> ProtocolError:
    """``exc`` (raised reading ``event``) with the event named and its offset made absolute."""
    return ProtocolError(
        f"{event.type_name} event at offset {event.offset}: {exc.reason}",
        offset=event.offset + (exc.offset or 0),
        path=exc.path,
    )


def _head(event: Event) -> Node:
    """The part of every event's node that comes first: offset, type and EventHeader."""
    header = header_fields(EVENT_FIELDS, event.data, 0, 8)
    header["type_name"] = event_type_name(header["type"])
    return {"offset": event.offset, "type": event.type_name, "event_header": header}


def dissect_stream(
    chunks: Iterable[bytes],
    payload_limit: int | None = 64,
    max_event_size: int = MAX_EVENT_SIZE,
    previews: bool = True,
) -> Iterator[Node]:
    """As :func:`dissect`, over a capture read in chunks: holds one event at a time, so memory
    stays bounded by ``max_event_size`` whatever the capture's size."""
    for item in stream_events(chunks, max_event_size):
        if isinstance(item, Filler):
            yield {"filler": {"offset": item.offset, "size": item.size}}
        else:
            yield dissect_event(item, payload_limit, previews)


def stream_events(chunks: Iterable[bytes], max_event_size: int) -> Iterator[Event | Filler]:
    """The events of a capture read in chunks, then its zero tail (if any); errors after
    every event before them."""
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
        size = len(buf)
        while size - pos >= 4:  # find the complete events
            length = WORD.unpack_from(buf, pos)[0] & EVENT_HEADER_LENGTH_MASK
            if not length and not any(memoryview(buf)[pos:]):  # (an event's length is not 0)
                filler = base + pos
                break
            if length >= EVENT_HEADER_SIZE and size - pos >= length:
                pos += length  # a complete event
                continue
            try:  # (a complete event of a bad length is refused by iter_events, below)
                check_event_length(length, base + pos, max_event_size)
            except ProtocolError as exc:
                error = exc
            break  # a bad length, or the rest of an event to come
        yield from iter_events(bytes(buf[:pos]), max_event_size, base)  # (no zero tail in it)
        if error is not None:  # after every event before it
            raise error
        if filler is not None:
            base += len(buf)
            buf.clear()
        else:
            del buf[:pos]
            base += pos
    if filler is not None:
        yield Filler(filler, base - filler)
    elif buf and not any(buf):
        yield Filler(base, len(buf))
    elif buf:
        list(iter_events(buf, max_event_size, base))  # an incomplete last event: raises


def dissect_capture(
    chunks: Iterable[bytes], payload_limit: int | None = 64, previews: bool = True
) -> Iterator[Node]:
    """The events of a ``pybmq tap`` capture, each with its direction, connection and time."""
    for event, tap in capture_events(chunks):
        node = capture_event_node(event, tap, payload_limit, previews)
        node["tap"] = tap
        yield node


def capture_event_node(
    event: Event, tap: Node, payload_limit: int | None = 64, previews: bool = True
) -> Node:
    """An event of a capture as a tree; one the tap cut (over its --snaplen) shows its header
    and the start of its body, not dissected."""
    if "recorded" not in tap:
        return dissect_event(event, payload_limit, previews)
    node = _head(event)
    node["body"] = f"cut by the tap: {tap['recorded']} of {tap['length']} bytes recorded"
    node["body_size"] = max(0, len(event.data) - event.header_size)
    if previews:
        node["body_preview"] = hexdump(bytes(event.body), payload_limit)
    return node


def dissect(buf: bytes, payload_limit: int | None = 64) -> Iterator[Node]:
    """Every event of a capture (then its trailing filler, if any), as trees."""
    for item in iter_events(buf):
        if isinstance(item, Filler):
            yield {"filler": {"offset": item.offset, "size": item.size}}
        else:
            yield dissect_event(item, payload_limit)
