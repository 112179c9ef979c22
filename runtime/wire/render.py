"""Rendering dissected events as ``pybmq decode`` prints them: ``render_text`` (a tree to text)
and ``render_stream`` (a capture straight to text or JSON Lines).

``render_stream`` prints what ``render_text`` and ``json.dumps`` print for each tree of
``pybmq.wire.dissect``, without building the trees of plain messages and batch entries (most of
a capture): it formats them from the unpacked headers with ``%`` templates made once from the
trees' field names, and falls back to the trees for everything else. It shares the dissector's
header readers and field helpers, so the two cannot drift apart (``tests/wire`` checks them
byte for byte against each other).

Fragments that repeat are rendered once and kept by the bytes they are read from: an event's
head, a batch header, a message's header block and options (everything but its GUID, and a
PUT's CRC and correlation id, which stay ``%s``), its properties. Each cache is bounded
(``pybmq.wire.dissect.keep``): a capture where nothing repeats costs a lookup per fragment.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

from pybmq.errors import ProtocolError
from pybmq.generated.wire_codec import (
    EVENT_HEADER_SIZE,
    MESSAGE_GUID_SIZE,
    PUT_HEADER_MESSAGE_WORDS_MASK,
    WORD,
    WORD_SIZE,
    EventType,
    PushHeaderFlags,
    PutHeaderFlags,
)
from pybmq.generated.wire_messages import (
    PUSH_FIELD_OFFSETS,
    PUSH_REQUIRED_HEADER_SIZE,
    PUT_FIELD_OFFSETS,
    PUT_REQUIRED_HEADER_SIZE,
)
from pybmq.wire.batches import iter_ack, iter_confirm, iter_reject
from pybmq.wire.capture import capture_events
from pybmq.wire.dissect import (
    BATCH_HEADERS,
    EVENT_FIELDS,
    PUSH_FIELDS,
    PUT_FIELDS,
    Node,
    at_event,
    capture_event_node,
    compression_label,
    dissect_event,
    dump_bytes,
    flag_names,
    header_fields,
    keep,
    options_json,
    properties_node,
    read_messages,
    stream_events,
)
from pybmq.wire.framing import (
    MAX_EVENT_SIZE,
    Event,
    Filler,
)

__all__ = ["render_stream", "render_text"]

# Plain ints: comparing with an enum member costs more than the comparison.
_PUT_EVENT, _PUSH_EVENT = int(EventType.PUT), int(EventType.PUSH)
_MESSAGE_EVENTS = frozenset((_PUT_EVENT, _PUSH_EVENT))


@functools.lru_cache(maxsize=256)
def _template(keys: tuple[str, ...], line: str, separator: str) -> str:
    """A ``%`` template with one ``%s`` per key, cached per key set (the keys of a header kind
    never change), so each node is formatted in one call."""
    width = max((len(k) for k in keys), default=0)
    return separator.join(
        line.format(key=k.replace("%", "%%"), pad=" " * (width - len(k))) for k in keys
    )


_FIELD_LINE = "\n\t{key}{pad} : %s"
_ENTRY_FIELD = "{key}=%s"


def _render_fields(title: str, fields: dict[str, Any]) -> str:
    return f"[{title}]" + _template(tuple(fields), _FIELD_LINE, "") % tuple(fields.values())


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
        lines += _message_lines(node["type"], i, m)
    if "entries" in node:
        lines.append(_render_fields("BatchHeader", node["header"]))
        for i, e in enumerate(node["entries"]):
            lines.append(f"\t#{i}: " + _template(tuple(e), _ENTRY_FIELD, ", ") % tuple(e.values()))
    if "body_size" in node:
        lines.append(f"[Body] {node['body_size']} bytes (not dissected): {node['body']}")
        lines += node["body_preview"]
    elif "body" in node:
        lines.append(f"[Body] {node['body']}")
    return "\n".join(lines)


def _message_lines(kind: str, i: int, m: Node) -> list[str]:
    """The lines of message ``i`` of a PUT or PUSH event."""
    lines = [_render_fields(f"{kind.capitalize()}Header #{i} @{m['offset']}", m["header"])]
    if "options" in m:
        lines.append(f"[Options] {json.dumps(m['options'])}")
    if "properties" in m:
        lines += _property_lines(m["properties"])
    if "note" in m:
        lines.append(f"[Note] {m['note']}")
    lines.append(f"[Payload] {m['payload']['size']} bytes")
    lines += m["payload"]["preview"]
    return lines


def _property_lines(p: Node) -> list[str]:
    lines = [f"[MessageProperties] {p['format']} format, {p['count']} properties"]
    return lines + [f"\t{q['name']} ({q['type']}) = {q['value']!r}" for q in p["properties"]]


# -- what ``pybmq decode`` prints, an event at a time ----------------------------------------------
#
# PUT, PUSH, ACK, CONFIRM and REJECT events are most of a capture. Their messages, entries and
# heads are printed straight from the unpacked headers with ``%`` templates made from the same
# field names (and ``_template``) as their nodes, and options and properties from the same node
# helpers, without building the event's tree: the same text as ``render_text`` / ``json.dumps``
# of the tree (tests compare both on every vector and message shape). Other event kinds and
# the filler are printed through their trees.


def render_stream(
    chunks: Iterable[bytes],
    payload_limit: int | None = 64,
    as_json: bool = False,
    capture: bool = False,
) -> Iterator[str]:
    """Each event of a capture (``capture``: a ``pybmq tap`` recording) as ``pybmq decode``
    prints it: its ``render_text`` tree and a blank line, or (``as_json``) its JSON Line."""
    if capture:
        for event, tap in capture_events(chunks):
            if "recorded" in tap:  # an event the tap cut: its header and first bytes
                node = capture_event_node(event, tap, payload_limit, not as_json)
                node["tap"] = tap
                yield json.dumps(node) + "\n" if as_json else render_text(node) + "\n\n"
            else:
                yield _render_event(event, tap, payload_limit, as_json)
        return
    for item in stream_events(chunks, MAX_EVENT_SIZE):
        if isinstance(item, Filler):  # (only ever the last item)
            node = {"filler": {"offset": item.offset, "size": item.size}}
            yield json.dumps(node) + "\n" if as_json else render_text(node) + "\n\n"
        else:
            yield _render_event(item, None, payload_limit, as_json)


def _render_event(event: Event, tap: Node | None, payload_limit: int | None, as_json: bool) -> str:
    etype = event.header.type
    batch: tuple[str, str] | None = None
    try:
        if etype in _MESSAGE_EVENTS:
            records = _message_texts(event, read_messages(event), payload_limit, as_json)
        elif etype in _BATCH_READERS:
            records = _entry_texts(list(_BATCH_READERS[etype](event)), as_json)
            batch = _batch_header(event)
        else:  # through the node
            node = dissect_event(event, payload_limit, not as_json)
            if tap is not None:
                node["tap"] = tap
            return json.dumps(node) + "\n" if as_json else render_text(node) + "\n\n"
    except ProtocolError as exc:
        raise at_event(event, exc) from exc
    key = event.data[:EVENT_HEADER_SIZE]
    head = _HEADS.get(key)
    if head is None:
        head = _head(event)
        keep(_HEADS, key, EVENT_HEADER_SIZE, head)
    if as_json:
        if batch is None:
            body = f', "messages": [{", ".join(records)}]'
        else:
            body = f', "header": {batch[1]}, "entries": [{", ".join(records)}]'
        tail = "" if tap is None else ', "tap": ' + json.dumps(tap)
        return f"{head[2] % event.offset}{body}{tail}}}\n"
    if tap is None:
        first = head[0] % event.offset
    else:
        first = head[1] % (event.offset, tap["connection"], tap["direction"], tap["time"])
    if batch is not None:
        first = f"{first}\n{batch[0]}"
    if not records:
        return first + "\n\n"
    return first + "\n" + "\n".join(records) + "\n\n"


# An event's first lines (text, text with its [Tap] line, the start of its JSON object) by its
# EventHeader's bytes, with a ``%s`` for its offset (and the tap's connection, direction, time).
_HEADS: dict[bytes, tuple[str, str, str]] = {}
# A batch event's [BatchHeader] block and its JSON, by the event type and the header's bytes.
_BATCH_HEADS: dict[tuple[int, bytes], tuple[str, str]] = {}


def _head(event: Event) -> tuple[str, str, str]:
    name = event.type_name
    values = EVENT_FIELDS.unpack(event.data, 0)
    text, json_text = _head_layout(False)
    tap_text, _ = _head_layout(True)
    return (
        text % (name, "%s", *values, name),
        tap_text % (name, "%s", "%s", "%s", "%s", *values, name),
        json_text % ("%s", name, *values, name),
    )


@functools.lru_cache(maxsize=2)
def _head_layout(tap: bool) -> tuple[str, str]:
    """What every event starts with (``render_text``'s first lines, its JSON object's first
    members, without the closing brace): ``%`` type name, offset, (tap), EventHeader values,
    type name again."""
    assert not EVENT_FIELDS.hex_fields
    keys = (*EVENT_FIELDS.names, "type_name")
    fields = _template(keys, _FIELD_LINE, "")
    where = "\n[Tap] connection %s %s at %s" if tap else ""
    text = f"[%s event] offset %s{where}\n[EventHeader]{fields}"
    json_text = '{"offset": %s, "type": "%s", "event_header": {' + _json_fields(
        keys, ("type_name",)
    )
    return text, json_text + "}"


def _batch_header(event: Event) -> tuple[str, str]:
    reader = BATCH_HEADERS[event.type]
    start = event.header_size
    raw = event.data[start : start + reader.size]
    key = (event.type, raw)
    texts = _BATCH_HEADS.get(key)
    if texts is None:
        header = header_fields(reader, event.data, start, reader.size)
        texts = (_render_fields("BatchHeader", header), _fields_json(header))
        keep(_BATCH_HEADS, key, len(raw), texts)
    return texts


def _fields_json(fields: dict[str, Any]) -> str:
    """What ``json.dumps`` writes for a dict from :func:`_fields` (ints and hex strings)."""
    strings = tuple(k for k, v in fields.items() if isinstance(v, str))
    return "{" + _json_fields(tuple(fields), strings) % tuple(fields.values()) + "}"


_BATCH_READERS: dict[int, Callable[[Event], Iterable[Any]]] = {
    EventType.ACK: iter_ack,
    EventType.CONFIRM: iter_confirm,
    EventType.REJECT: iter_reject,
}


class _MessageLayout(NamedTuple):
    """How a PUT or PUSH message prints: its header block as text (``%``: number, offset, header
    values and names) and as the start of its JSON object (header values and names)."""

    text: str
    json: str
    guid: int  # where the GUID (the one bytes field, shown as hex) is among the header's values
    flags: int  # where the flags are
    shown: int  # how many header fields are shown (all but for a short, older peer's header)


@functools.lru_cache(maxsize=64)
def _json_fields(keys: tuple[str, ...], strings: tuple[str, ...]) -> str:
    """``"key": value`` pairs as ``json.dumps`` writes them, a ``%s`` per value (quoted for
    ``strings``: hex digits and enumerator names, which JSON writes as they are)."""
    return ", ".join(
        json.dumps(k).replace("%", "%%") + (': "%s"' if k in strings else ": %s") for k in keys
    )


@functools.lru_cache(maxsize=64)
def _message_layout(etype: int, size: int) -> _MessageLayout:
    """The layout of a message whose header is ``size`` bytes on the wire (any size at least
    the struct's shows every field; a shorter one shows the fields it holds)."""
    put = etype == EventType.PUT
    reader = PUT_FIELDS if put else PUSH_FIELDS
    shown = sum(1 for first in reader.first_bits if first < size * 8)
    keys = (*reader.names[:shown], "flags_names", "compression_name")
    keys += ("correlation_id",) if put else ()
    title = ("Put" if put else "Push") + "Header #%s @%s"
    text = f"[{title}]{_template(keys, _FIELD_LINE, '')}"
    (guid,) = reader.hex_fields
    strings = (reader.names[guid], "flags_names", "compression_name")
    json_text = f'{{"header": {{{_json_fields(keys, strings)}}}'
    return _MessageLayout(text, json_text, guid, reader.names.index("flags"), shown)


def _message_texts(
    event: Event,
    messages: Iterable[tuple[Any, str]],
    payload_limit: int | None,
    as_json: bool,
) -> list[str]:
    """The messages of a PUT or PUSH event as printed (text: lines joined; JSON: objects)."""
    etype = event.type
    put = etype == _PUT_EVENT
    heads = _MESSAGE_HEADS[etype]
    # Where the GUID (and a PUT's CRC) end: every header is at least that long (iter_put and
    # iter_push refuse shorter ones).
    varying_end = PUT_REQUIRED_HEADER_SIZE if put else PUSH_REQUIRED_HEADER_SIZE
    guid_at = (PUT_FIELD_OFFSETS if put else PUSH_FIELD_OFFSETS)["guid"]
    guid_end = guid_at + MESSAGE_GUID_SIZE
    data, base = event.data, event.offset
    out = []
    pos = event.header_size
    for i, (m, note) in enumerate(messages):
        # Every header field but the GUID (and a PUT's CRC and correlation id) and the options
        # are in the key (the header's and options' sizes too, in its second word): their text
        # is cached with those as ``%s``.
        header_size = m.header_words * WORD_SIZE
        options_end = pos + header_size + len(m.options)
        key = data[pos : pos + guid_at] + data[pos + varying_end : options_end]
        head = heads.get(key)
        if head is None:
            head = _message_head(etype, data, pos, header_size, m.compression)
            if m.options:
                options = options_json(m).replace("%", "%%")
                head = (f"{head[0]}\n[Options] {options}", f'{head[1]}, "options": {options}')
            keep(heads, key, len(key), head)
        hex_guid = data[pos + guid_at : pos + guid_end].hex()
        args: tuple[Any, ...] = (hex_guid, m.crc32c, m.correlation_id) if put else (hex_guid,)
        payload = m.payload
        if as_json:
            shown = payload if payload_limit is None else payload[:payload_limit]
            text = head[1] % args
            if m.properties_area:
                text += ', "properties": ' + _properties_text(m, True)
            text += f', "payload": {{"size": {len(payload)}, "hex": "{shown.hex()}"}}'
            text += f', "offset": {base + pos}'
            if note and m.compression:
                text += ', "note": ' + json.dumps(note)
            out.append(text + "}")
        else:
            text = head[0] % (i, base + pos, *args)
            if m.properties_area:
                text += "\n" + _properties_text(m, False)
            if note and m.compression:
                text += f"\n[Note] {note}"
            dump = dump_bytes(payload, payload_limit)
            text += f"\n[Payload] {len(payload)} bytes"
            out.append(f"{text}\n{dump}" if dump else text)
        # message_words, in the same place in a PushHeader
        pos += (WORD.unpack_from(data, pos)[0] & PUT_HEADER_MESSAGE_WORDS_MASK) * WORD_SIZE
    return out


# A PUT or PUSH message's header block and options (text, JSON) by their bytes but the GUID
# (and a PUT's CRC), per event type: ``%s`` for the number, the offset (text), the GUID (and CRC and
# correlation id).
_MESSAGE_HEADS: dict[int, dict[bytes, tuple[str, str]]] = {EventType.PUT: {}, EventType.PUSH: {}}


def _message_head(
    etype: int, data: bytes, pos: int, size: int, compression: int
) -> tuple[str, str]:
    """The header block of the message at ``pos``, with ``size`` bytes of header on the wire."""
    put = etype == EventType.PUT
    reader = PUT_FIELDS if put else PUSH_FIELDS
    full = reader.size
    if size >= full and len(data) - pos >= full:
        layout, values = _message_layout(etype, full), reader.unpack(data, pos)
    else:  # zero-extended for reading, only the fields it holds shown
        layout = _message_layout(etype, size)
        raw = bytes(data[pos : pos + min(size, full)]).ljust(full, b"\0")
        values = reader.unpack(raw, 0)[: layout.shown]
    guid = layout.guid
    shown = ["%s" if j == guid or (put and j == guid + 1) else v for j, v in enumerate(values)]
    flags_enum = PutHeaderFlags if put else PushHeaderFlags
    names = [flag_names(values[layout.flags], flags_enum), compression_label(compression)]
    if put:
        names.append("%s")  # the correlation id
    return layout.text % ("%s", "%s", *shown, *names), layout.json % (*shown, *names)


# A message's properties as printed (its lines, or its JSON) by the format, their schema id and
# area's bytes.
_PROPERTIES: dict[tuple[bool, int, bytes], str] = {}


def _properties_text(message: Any, as_json: bool) -> str:
    area = message.properties_area
    key = (as_json, message.schema_id, area)
    text = _PROPERTIES.get(key)
    if text is None:
        node = properties_node(message)
        assert node is not None
        text = json.dumps(node) if as_json else "\n".join(_property_lines(node))
        keep(_PROPERTIES, key, len(area), text)
    return text


# A batch entry type's layout: as text (``%``: number, values), as JSON (values), and where its
# GUID (the one bytes field, shown as hex) is.
_ENTRY_LAYOUTS: dict[type, tuple[str, str, int]] = {}


def _entry_layout(kind: type) -> tuple[str, str, int]:
    layout = _ENTRY_LAYOUTS.get(kind)
    if layout is None:
        names: tuple[str, ...] = kind._fields  # type: ignore[attr-defined]
        guid = names.index("guid")
        text = "\t#%s: " + _template(names, _ENTRY_FIELD, ", ")
        layout = (text, "{" + _json_fields(names, ("guid",)) + "}", guid)
        _ENTRY_LAYOUTS[kind] = layout  # one per entry type: three
    return layout


def _entry_texts(entries: list[Any], as_json: bool) -> list[str]:
    """Batch entries (NamedTuples of one type, their GUIDs shown as hex) as printed."""
    if not entries:
        return []
    text, json_text, g = _entry_layout(type(entries[0]))
    if as_json:
        return [json_text % (*e[:g], e[g].hex(), *e[g + 1 :]) for e in entries]
    return [text % (i, *e[:g], e[g].hex(), *e[g + 1 :]) for i, e in enumerate(entries)]
