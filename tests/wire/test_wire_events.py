"""PUT/PUSH/ACK/CONFIRM events: the Java SDK vectors field by field, and byte-exact re-encoding."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pybmq.errors import EncodeError, ProtocolError
from pybmq.generated.wire_codec import (
    PUT_MAX_PAYLOAD_SIZE_SOFT,
    CompressionAlgorithmType,
    PropertyType,
)
from pybmq.wire.batches import AckEventBuilder, ConfirmEventBuilder, iter_ack, iter_confirm
from pybmq.wire.checksum import application_data_crc32c
from pybmq.wire.framing import Event, split_events
from pybmq.wire.push import PushEventBuilder, iter_push
from pybmq.wire.put import PutEventBuilder, iter_put


def only_event(path: Path) -> Event:
    events, _ = split_events(path.read_bytes())
    assert len(events) == 1
    return events[0]


def reencode_put(event: Event) -> bytes:
    builder = PutEventBuilder()
    for m in iter_put(event, decompress=False):
        builder.add(
            m.queue_id, m.properties_area + m.payload, guid=m.guid, raw=True, flags=m.flags,
            compression=m.compression, schema_id=m.schema_id, crc32c=m.crc32c, options=m.options,
            header_words=m.header_words,
        )  # fmt: skip
    (out,) = builder.finish()
    return out


def reencode_push(event: Event) -> bytes:
    builder = PushEventBuilder()
    for m in iter_push(event, decompress=False):
        builder.add(
            m.queue_id, m.guid, m.properties_area + m.payload, raw=True, flags=m.flags,
            compression=m.compression, schema_id=m.schema_id, options=m.options,
            header_words=m.header_words,
        )  # fmt: skip
    (out,) = builder.finish()
    return out


PROPS = {"encoding": (PropertyType.INT32, 3), "timestamp": (PropertyType.INT64, 1234567890),
         "id": (PropertyType.STRING, "myCoolId")}  # fmt: skip


def test_put_vector_matches_the_java_dump_field_by_field(java_vectors: Path) -> None:
    text = (java_vectors / "msg_put_multi_07082018.txt").read_text()
    expected = {k: int(v) for k, v in re.findall(r"^\t(\w+)\s*: (\d+)$", text, re.M)}
    dump_payload = bytes.fromhex(
        "".join(
            "".join(line.split(":", 1)[1].split("|")[0].split())
            for line in text.split("[PuTMessage]")[1].split("\n\n")[0].splitlines()[2:]
        )
    )
    event = only_event(java_vectors / "msg_put_multi.bin")
    assert event.header.fragment_bit == expected["FragmentBit"]
    messages = list(iter_put(event, verify_crc=True))
    assert len(messages) == text.count("[PutHeader]") == 2
    for m in messages:
        assert m.flags == expected["Flags"]
        assert m.queue_id == expected["QueueId"]
        assert m.correlation_id == expected["CorrelationId"]
        assert len(m.options) // 4 == expected["OptionsWords"]
        # The dump predates the schema-id word: its headers are one word shorter, so only the
        # part after the header can be compared by size.
        assert expected["MessageWords"] - expected["HeaderWords"] == 31 - 8
        assert m.header_words == expected["HeaderWords"] + 1
        assert m.payload == b"abcdefghijklmnopqrstuvwxyz"
        assert dict(m.properties.items()) == {k: v for k, (_, v) in PROPS.items()}  # type: ignore[union-attr]
    assert [m.schema_id for m in messages] == [0, 1]  # old then extended properties
    # The dump shows two old-format messages; the vector's first one is identical to them:
    # application data (properties + payload + padding) byte for byte, and its CRC32-C.
    first = messages[0]
    assert first.crc32c == expected["Crc32c"]
    assert first.properties_area + first.payload + b"\x02\x02" == dump_payload
    assert application_data_crc32c(first.properties_area, first.payload) == expected["Crc32c"]


def test_push_vectors(java_vectors: Path) -> None:
    multi = list(iter_push(only_event(java_vectors / "msg_push_multi.bin")))
    assert [m.schema_id for m in multi] == [0, 1]
    for m in multi:
        assert m.queue_id == 9876 and m.guid.hex() == "abcdef0123456789" * 2
        assert m.properties is not None and m.properties.typed_items() == [
            (n, t, v) for n, (t, v) in PROPS.items()
        ]
        assert m.payload == b"abcdefghijklmnopqrstuvwxyz"
    (subq,) = iter_push(only_event(java_vectors / "msg_push_subqueueids.bin"))
    assert subq.header_words == 7 and subq.sub_queue_ids == (777, 11, 987)
    assert all(i.rda_unlimited for i in subq.sub_queue_infos)
    (zl,) = iter_push(only_event(java_vectors / "msg_push_zlib.bin"), decompress=False)
    assert zl.compression == CompressionAlgorithmType.ZLIB and zl.header_words == 7
    # The Java vector only exercises the header: its "compressed" payload is plain text.
    with pytest.raises(ProtocolError, match="zlib"):
        list(iter_push(only_event(java_vectors / "msg_push_zlib.bin")))


def test_put_zlib_vector_header(java_vectors: Path) -> None:
    event = only_event(java_vectors / "msg_put_zlib_27042018.bin")
    (m,) = iter_put(event, decompress=False)
    assert (m.queue_id, m.correlation_id, m.compression) == (9876, 1234, 1)
    with pytest.raises(ProtocolError, match="CRC32-C"):
        list(iter_put(event, decompress=False, verify_crc=True))


def test_ack_and_confirm_vectors(java_vectors: Path) -> None:
    acks = list(iter_ack(only_event(java_vectors / "msg_ack_20072018.bin")))
    assert len(acks) == 10
    assert [(a.status, a.correlation_id, a.queue_id) for a in acks[:3]] == [
        (0, 0, 0),
        (1, 1, 1),
        (2, 4, 2),
    ]
    assert all(
        a.guid == bytes.fromhex("000000000000303 9cd8101000000270f".replace(" ", "")) for a in acks
    )
    confirms = list(iter_confirm(only_event(java_vectors / "msg_confirm_15082018.bin")))
    assert len(confirms) == 10
    assert [(c.queue_id, c.sub_queue_id) for c in confirms[:3]] == [(0, 1), (3, 4), (6, 7)]


def test_every_binary_event_vector_reencodes_byte_exact(java_vectors: Path) -> None:
    from pybmq.wire.control import decode_control_event, encode_control_event

    count = 0
    paths = [
        p
        for p in java_vectors.glob("*.bin")
        if not p.name.startswith(("msg_props", "broker_response"))
    ]
    for path in sorted(paths):
        for event in split_events(path.read_bytes())[0]:
            if event.type == 1:
                enc, payload = decode_control_event(event)
                again = encode_control_event(payload, enc, fragment_bit=event.header.fragment_bit)
            elif event.type == 2:
                again = reencode_put(event)
            elif event.type == 4:
                again = reencode_push(event)
            elif event.type == 5:
                b = AckEventBuilder()
                b.add_many(
                    (a.status, a.correlation_id, a.guid, a.queue_id) for a in iter_ack(event)
                )
                (again,) = b.finish()
            elif event.type == 3:
                c = ConfirmEventBuilder()
                c.add_many(iter_confirm(event))
                (again,) = c.finish()
            else:  # pragma: no cover
                raise AssertionError(f"unexpected event type {event.type} in {path.name}")
            assert again == event.data, f"{path.name} at offset {event.offset}"
            count += 1
    assert count > 1000  # the io dump alone holds 1075 events


def test_put_builder_splits_at_the_max_event_size() -> None:
    builder = PutEventBuilder(max_event_size=1024)
    for i in range(50):
        builder.add(1, b"x" * 100, correlation_id=i)
    events = builder.finish()
    assert len(events) > 1 and all(len(e) <= 1024 for e in events)
    assert [m.correlation_id for e in events for m in iter_put(e, verify_crc=True)] == list(
        range(50)
    )
    assert builder.finish() == []
    with pytest.raises(EncodeError):
        builder.add(1, b"x", correlation_id=1 << 24)


def test_a_message_over_the_batch_limit_goes_alone_in_its_own_event() -> None:
    builder = PutEventBuilder(max_event_size=1024)
    builder.add(1, b"a" * 100, correlation_id=1)
    builder.add(1, b"b" * 5000, correlation_id=2)
    builder.add(1, b"c" * 100, correlation_id=3)
    events = builder.finish()
    assert [len(e) for e in events] == [8 + 36 + 104, 8 + 36 + 5004, 8 + 36 + 104]  # padded
    assert [m.payload[:1] for e in events for m in iter_put(e, verify_crc=True)] == [
        b"a",
        b"b",
        b"c",
    ]
    pushes = PushEventBuilder(max_event_size=1024)
    pushes.add(1, b"\1" * 16, b"p" * 5000)
    [event] = pushes.finish()
    assert [m.payload for m in iter_push(event)] == [b"p" * 5000]


def test_builders_refuse_application_data_over_the_protocol_limit() -> None:
    big = memoryview(bytearray(PUT_MAX_PAYLOAD_SIZE_SOFT + 1))
    with pytest.raises(EncodeError, match=f"exceeds {PUT_MAX_PAYLOAD_SIZE_SOFT}"):
        PutEventBuilder().add(1, big, correlation_id=1)
    with pytest.raises(EncodeError, match=f"exceeds {PUT_MAX_PAYLOAD_SIZE_SOFT}"):
        PushEventBuilder().add(1, b"\1" * 16, big)


def test_compression_is_payload_only_with_extended_properties() -> None:
    from pybmq.wire.properties import MessageProperties

    props = MessageProperties({"k": "v"})
    payload = b"hello world " * 200
    builder = PutEventBuilder()
    builder.add(5, payload, correlation_id=1, properties=props, compression=1)
    builder.add(
        5, payload, correlation_id=2, properties=props, compression=1, extended_properties=False
    )
    builder.add(5, b"short", correlation_id=3, compression=1)  # under 1024 bytes: not compressed
    (event,) = builder.finish()
    raw = list(iter_put(event, decompress=False, verify_crc=True))
    assert raw[0].compression == 1 and raw[0].properties_area == props.encode(True)
    assert raw[1].compression == 1 and raw[1].properties_area == b""  # inside the zlib stream
    assert raw[2].compression == 0
    decoded = list(iter_put(event, verify_crc=True))
    assert [m.payload for m in decoded] == [payload, payload, b"short"]
    assert decoded[1].properties == props and not decoded[1].extended_properties


def test_put_application_data_limit_is_upstreams() -> None:
    from pybmq.generated.wire_codec import PUT_MAX_PAYLOAD_SIZE_SOFT

    big = bytes(PUT_MAX_PAYLOAD_SIZE_SOFT + 1)
    builder = PutEventBuilder()
    with pytest.raises(EncodeError, match="application data"):
        builder.add(1, big, correlation_id=1)
    with pytest.raises(EncodeError, match="application data"):
        builder.add_many(1, [big], [b"g" * 16])
    # Compressible data is judged after compression, as upstream does.
    builder.add(1, big, correlation_id=1, compression=CompressionAlgorithmType.ZLIB)
    (event,) = builder.finish()
    assert len(event) < 1 << 20


@pytest.mark.parametrize(
    ("name", "extended", "header_size"),
    [
        ("msg_props.bin", True, 6),
        ("msg_props_old.bin", False, 6),
        ("msg_props_long_headers.bin", True, 8),
    ],
)
def test_property_area_vectors(
    java_vectors: Path, name: str, extended: bool, header_size: int
) -> None:
    from pybmq.wire.properties import MessageProperties

    raw = (java_vectors / name).read_bytes()
    props = MessageProperties.decode(raw, extended=extended)
    assert props.typed_items() == [(n, t, v) for n, (t, v) in PROPS.items()]
    assert props.encode(extended) == raw  # unmodified: the received bytes, as upstream
    fresh = MessageProperties(PROPS)
    assert fresh.encode(extended, header_size=header_size, property_header_size=header_size) == raw
    # The other format holds the same properties in different bytes.
    other = fresh.encode(not extended)
    assert other != raw[: len(other)]
    assert MessageProperties.decode(other, extended=not extended) == props


def test_put_add_many_matches_add_and_splits_events() -> None:
    """The batched hot path writes exactly what ``add`` writes, cuts events where ``add`` does,
    and keeps the builder's counts right across the cut and after a rejected message."""
    from pybmq.wire.properties import MessageProperties

    props = MessageProperties({"encoding": 3, "source": "bench"})
    payloads = [bytes([i]) * (90 + i % 7) for i in range(60)]
    guids = [bytes([i]) * 16 for i in range(60)]
    one_by_one = PutEventBuilder(max_event_size=2048)
    for payload, guid in zip(payloads, guids, strict=True):
        one_by_one.add(7, payload, guid=guid, properties=props, ack_requested=True)
    batched = PutEventBuilder(max_event_size=2048)
    batched.add_many(7, payloads[:25], guids[:25], properties=props)
    assert len(batched) == 25
    batched.add_many(7, payloads[25:], guids[25:], properties=props)
    assert len(batched) == 60
    expected = one_by_one.finish()
    assert len(expected) > 2
    assert batched.finish() == expected
    assert len(batched) == 0
    with pytest.raises(EncodeError, match="guid"):
        batched.add_many(7, [b"a", b"b"], [b"g" * 16, b"short"])
    assert len(batched) == 1  # the message before the bad guid is kept and counted
    (event,) = batched.finish()
    assert [m.payload for m in iter_put(event, verify_crc=True)] == [b"a"]
    with pytest.raises(EncodeError, match="queue_id"):
        batched.add_many(1 << 31, [b"a"], [b"g" * 16])
    assert batched.finish() == []


def test_crc32c_is_loaded_by_the_first_put_not_by_the_client_import() -> None:
    """The ``crc32c`` package's import scans package metadata along ``sys.path``: a process
    that only consumes does not pay it; the first PUT loads it and gets the right checksum."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import pybmq, pybmq.client.sync\n"
        "print('crc32c' in sys.modules)\n"
        "from pybmq.wire.put import PutEventBuilder, iter_put\n"
        "builder = PutEventBuilder()\n"
        "builder.add(1, b'123456789', guid=bytes(16))\n"
        "builder.add_many(1, [b'123456789'], [bytes(16)])\n"
        "crcs = [m.crc32c for e in builder.finish() for m in iter_put(e)]\n"
        "print('crc32c' in sys.modules, [hex(c) for c in crcs])\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.split("\n", 1) == ["False", "True ['0xe3069283', '0xe3069283']\n"]


@pytest.mark.parametrize(
    "properties",
    [{"text": "\ud800"}, {"text": "ok \udbff end"}, {"a\ud800": 1}],
    ids=["lone-high-surrogate", "inside-text", "in-a-name"],
)
def test_a_property_that_cannot_be_utf8_is_refused_when_set(properties: dict[str, object]) -> None:
    """Not later, when the message is encoded (a raw UnicodeEncodeError at post time)."""
    from pybmq.errors import EncodeError
    from pybmq.wire.properties import MessageProperties

    with pytest.raises(EncodeError, match="not encodable as UTF-8"):
        MessageProperties(properties)  # type: ignore[arg-type]


def test_bytes_that_came_undecodable_still_round_trip() -> None:
    """Surrogate escapes (what an undecodable byte from the wire becomes) stay lossless."""
    from pybmq.wire.properties import MessageProperties

    properties = MessageProperties({"raw": "caf\udce9"})
    again = MessageProperties.decode(properties.encode(extended=True), extended=True)
    assert dict(again) == {"raw": "caf\udce9"}
