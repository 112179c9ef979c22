"""Every control event among the Java SDK vectors (and our official-SDK capture) decodes to the
fields read off its bytes and re-encodes to the same bytes, in its own encoding."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from pybmq.generated.bmqp_ctrlmsg import (
    ClientIdentity,
    ClientLanguage,
    ClientType,
    ControlMessage,
    GuidInfo,
    NegotiationMessage,
    QueueHandleParameters,
    StatusCategory,
)
from pybmq.generated.bmqp_ctrlmsg_ber import decode_ber, encode_ber
from pybmq.generated.bmqp_ctrlmsg_json import decode_json, encode_json

from tests.helpers.eventframe import BER, CONTROL, JSON, make_event, split_event
from tests.helpers.paths import TESTS_DIR

JAVA = TESTS_DIR / "vectors" / "java-sdk"
OFFICIAL = TESTS_DIR / "vectors" / "official-sdk"

TUTORIAL_QUEUE = QueueHandleParameters(
    uri="bmq://bmq.tutorial.hello/test-queue", q_id=0, flags=12, read_count=0, write_count=1
)


def _decode(path: Path, cls: type) -> tuple[object, bytes, int, bytes]:
    raw = path.read_bytes()
    event = split_event(raw)
    assert event.type == CONTROL
    codec = decode_ber if event.type_specific == BER else decode_json
    return codec(cls, event.payload), event.payload, event.type_specific, raw


def _assert_reencodes(obj: object, payload: bytes, encoding: int, raw: bytes) -> None:
    again = encode_ber(obj) if encoding == BER else encode_json(obj)
    assert again == payload
    length = int.from_bytes(raw[:4], "big") & 0x7FFFFFFF
    fragment = bool(raw[0] & 0x80)
    assert make_event(again, encoding, fragment=fragment) == raw[:length]


def _check_java_client_identity(ci: ClientIdentity | None, language: ClientLanguage) -> None:
    assert ci is not None
    assert (ci.protocol_version, ci.sdk_version, ci.client_type) == (
        1,
        999999,
        ClientType.E_TCPCLIENT,
    )
    assert (ci.process_name, ci.pid, ci.session_id, ci.host_name) == (
        "proc_name",
        9999,
        123,
        "host_name",
    )
    assert (ci.features, ci.cluster_node_id, ci.sdk_language) == ("", -1, language)
    assert ci.guid_info == GuidInfo() and ci.user_agent == ""  # absent: older schema


def test_ber_negotiation_client_identity() -> None:
    msg, payload, enc, raw = _decode(
        JAVA / "msg_control_nego_client_04042018.bin", NegotiationMessage
    )
    assert enc == BER and isinstance(msg, NegotiationMessage)
    assert msg.selection == "client_identity"
    _check_java_client_identity(msg.client_identity, ClientLanguage.E_CPP)
    _assert_reencodes(msg, payload, enc, raw)


def test_json_negotiation_client_identity() -> None:
    path = JAVA / "msg_control_nego_client_a326573a-2c1e-42a2-afdc-da184456c118.bin"
    msg, payload, enc, raw = _decode(path, NegotiationMessage)
    assert enc == JSON and isinstance(msg, NegotiationMessage)
    _check_java_client_identity(msg.client_identity, ClientLanguage.E_JAVA)
    _assert_reencodes(msg, payload, enc, raw)


def test_ber_broker_response() -> None:
    # This file stops 2 bytes short of its header's length: the payload is all there (it ends
    # with its four end-of-contents pairs) but the 2-byte padding is missing.
    raw = (JAVA / "broker_response_20032018.bin").read_bytes()
    assert len(raw) == 102 and int.from_bytes(raw[:4], "big") == 104
    payload = raw[8:]
    msg = decode_ber(NegotiationMessage, payload)
    assert isinstance(msg, NegotiationMessage) and msg.selection == "broker_response"
    br = msg.broker_response
    assert br is not None
    assert (br.result.category, br.result.code, br.result.message) == (
        StatusCategory.E_SUCCESS,
        0,
        "",
    )
    assert (br.protocol_version, br.broker_version, br.is_deprecated_sdk) == (1, 999999, True)
    bi = br.broker_identity
    assert (bi.client_type, bi.process_name, bi.pid, bi.session_id) == (
        ClientType.E_TCPBROKER,
        "./bmqbrkr.tsk",
        1987,
        39,
    )
    assert (bi.host_name, bi.cluster_node_id) == ("nyteknavodev4", -1)
    assert (br.heartbeat_interval_ms, br.max_missed_heartbeats) == (3000, 10)  # defaults
    again = encode_ber(msg)
    assert again == payload
    assert make_event(again, BER) == raw + b"\x02\x02"


def test_json_broker_response() -> None:
    path = JAVA / "msg_control_nego_client_broker_response_623ff064-7d51-4bd8-988d-826ccfd458a8.bin"
    msg, payload, enc, raw = _decode(path, NegotiationMessage)
    assert isinstance(msg, NegotiationMessage)
    br = msg.broker_response
    assert br is not None
    assert (br.protocol_version, br.broker_version, br.is_deprecated_sdk) == (1, 3, False)
    assert br.broker_identity.cluster_name == "cluster_name"
    assert br.broker_identity.sdk_language == ClientLanguage.E_JAVA
    _assert_reencodes(msg, payload, enc, raw)


@pytest.mark.parametrize(
    ("name", "r_id"),
    [
        ("msg_control_open_queue_06042018.bin", None),
        ("msg_control_open_queue_5e110b7c-e332-4f5b-8313-c419ad0fbf48.bin", None),
        ("msg_control_open_queue_json_with_id_05092018.bin", 1),
    ],
)
def test_open_queue(name: str, r_id: int | None) -> None:
    msg, payload, enc, raw = _decode(JAVA / name, ControlMessage)
    assert isinstance(msg, ControlMessage) and msg.selection == "open_queue"
    assert msg.r_id == r_id
    assert msg.open_queue is not None
    assert msg.open_queue.handle_parameters == TUTORIAL_QUEUE
    assert msg.open_queue.handle_parameters.sub_id_info is None
    _assert_reencodes(msg, payload, enc, raw)


@pytest.mark.parametrize(
    ("name", "r_id"),
    [
        ("msg_control_open_queue_response_9950845d-d1dc-418f-811a-1b620c73e589.bin", None),
        ("msg_control_open_queue_response_id_json_06092018.bin", 1),
    ],
)
def test_open_queue_response(name: str, r_id: int | None) -> None:
    msg, payload, enc, raw = _decode(JAVA / name, ControlMessage)
    assert isinstance(msg, ControlMessage) and msg.selection == "open_queue_response"
    oqr = msg.open_queue_response
    assert oqr is not None and msg.r_id == r_id
    assert oqr.original_request.handle_parameters == TUTORIAL_QUEUE
    assert oqr.routing_configuration.flags == 1
    assert oqr.deduplication_time_ms == 300000  # absent (older schema): the XSD default
    _assert_reencodes(msg, payload, enc, raw)


@pytest.mark.parametrize(
    ("name", "r_id", "fragment"),
    [
        ("msg_control_status_27032018.bin", None, False),
        ("msg_control_status_with_fragment_bit_22072019.bin", None, True),
        ("msg_control_status_53121b03-f45d-46b2-95d0-f2df8a1a2cb2.bin", None, False),
        ("msg_control_status_rid_json_05092018.bin", 7, False),
    ],
)
def test_status(name: str, r_id: int | None, fragment: bool) -> None:
    msg, payload, enc, raw = _decode(JAVA / name, ControlMessage)
    assert split_event(raw).fragment is fragment
    assert isinstance(msg, ControlMessage) and msg.selection == "status" and msg.r_id == r_id
    assert msg.status is not None
    assert (msg.status.category, msg.status.code, msg.status.message) == (
        StatusCategory.E_SUCCESS,
        123,
        "Test",
    )
    _assert_reencodes(msg, payload, enc, raw)


def test_every_control_vector_is_covered() -> None:
    controls = sorted(
        p.name
        for p in JAVA.glob("*.bin")
        if p.read_bytes()[4] & 0x3F == CONTROL and not p.name.startswith("bmq_io_dump")
    )
    assert len(controls) == 13  # the 13 files tested above (the I/O dump is tested below)


def _dump_control_events() -> list[tuple[int, bytes]]:
    raw = (JAVA / "bmq_io_dump_1551267643131.bin").read_bytes()
    found = []
    pos = 0
    while pos < len(raw):
        length = int.from_bytes(raw[pos : pos + 4], "big") & 0x7FFFFFFF
        if raw[pos + 4] & 0x3F == CONTROL:
            found.append((pos, raw[pos : pos + length]))
        pos += length
    assert pos == len(raw)
    return found


def test_io_dump_control_events_from_a_real_broker() -> None:
    """The recorded session's 6 control events were written by a real broker (C++ baljsn)."""
    events = _dump_control_events()
    assert [pos for pos, _ in events] == [0, 400, 644, 136232, 136432, 136476]
    decoded = []
    for index, (_, event_bytes) in enumerate(events):
        event = split_event(event_bytes)
        assert event.type_specific == JSON
        cls = NegotiationMessage if index == 0 else ControlMessage
        msg = decode_json(cls, event.payload)
        assert encode_json(msg) == event.payload
        assert make_event(encode_json(msg), JSON) == event_bytes
        decoded.append(msg)
    nego, oqr, cqs1, cqs2, close, disconnect = decoded
    assert isinstance(nego, NegotiationMessage) and nego.broker_response is not None
    ident = nego.broker_response.broker_identity
    assert (ident.process_name, ident.pid, ident.features) == (
        "./bmqbrkr.tsk",
        155285,
        "PROTOCOL_ENCODING:BER,JSON",
    )
    assert oqr.r_id == 1 and oqr.open_queue_response is not None
    hp = oqr.open_queue_response.original_request.handle_parameters
    assert (hp.uri, hp.flags, hp.read_count, hp.write_count) == (
        "bmq://bmq.regression.workqueue/java-it-1551267623104",
        14,
        1,
        1,
    )
    assert oqr.open_queue_response.routing_configuration.flags == 2
    assert cqs1.configure_queue_stream_response is not None
    sp = cqs1.configure_queue_stream_response.request.stream_parameters
    assert (sp.max_unconfirmed_messages, sp.max_unconfirmed_bytes) == (1000, 32768000)
    assert (sp.consumer_priority, sp.consumer_priority_count) == (1, 1)
    assert cqs2.configure_queue_stream_response is not None
    sp2 = cqs2.configure_queue_stream_response.request.stream_parameters
    assert sp2.consumer_priority == -(2**31)  # default-valued elements are still written
    assert close.r_id == 4 and close.selection == "close_queue_response"
    assert disconnect.r_id == 0 and disconnect.selection == "disconnect_response"


def test_official_sdk_capture_offline() -> None:
    path = OFFICIAL / "nego_client_identity_blazingmq_1.2.2.bin"
    msg, payload, enc, raw = _decode(path, NegotiationMessage)
    assert enc == BER and isinstance(msg, NegotiationMessage)
    ci = msg.client_identity
    assert ci is not None
    assert ci.features == "PROTOCOL_ENCODING:BER,JSON;MPS:MESSAGE_PROPERTIES_EX"
    assert (ci.client_type, ci.sdk_language, ci.process_name) == (
        ClientType.E_TCPCLIENT,
        ClientLanguage.E_CPP,
        "py:UNKNOWN",
    )
    assert (ci.protocol_version, ci.cluster_node_id, ci.session_id) == (1, -1, 1)
    assert ci.pid == 6672  # the capturing subprocess's pid (see the README there)
    assert ci.guid_info.client_id == "4C97EB6B0628"
    assert ci.guid_info.nano_seconds_from_epoch == 1795326160939573795
    assert "userAgent" in ci._absent  # blazingmq 1.2.2 predates the element
    _assert_reencodes(msg, payload, enc, raw)


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("msg_control_open_queue_06042018.bin", ControlMessage),
        ("msg_control_nego_client_04042018.bin", NegotiationMessage),
    ],
)
def test_ber_vector_survives_json_and_back(name: str, cls: type) -> None:
    msg, _, _, _ = _decode(JAVA / name, cls)
    assert decode_json(cls, encode_json(msg)) == msg
    assert decode_ber(cls, encode_ber(msg)) == msg


def test_elements_absent_on_the_wire_are_written_once_changed() -> None:
    msg, payload, _, _ = _decode(JAVA / "msg_control_nego_client_04042018.bin", NegotiationMessage)
    assert isinstance(msg, NegotiationMessage) and msg.client_identity is not None
    msg.client_identity.user_agent = "pybmq"
    again = encode_ber(msg)
    assert again != payload and b"pybmq" in again
    # sdkLanguage and guidInfo were absent and still hold their defaults: still not written
    assert decode_ber(NegotiationMessage, again).client_identity._absent == {"sdkLanguage", "guidInfo"}  # type: ignore[union-attr]
    fresh = dataclasses.replace(msg.client_identity)  # a new value: nothing absent
    assert fresh._absent == frozenset()
    assert "_absent" not in {f.name for f in dataclasses.fields(fresh)}
    full = encode_ber(NegotiationMessage(client_identity=fresh))
    assert len(full) > len(again) and decode_ber(NegotiationMessage, full).client_identity == fresh


def test_official_sdk_queue_session_requests_offline() -> None:
    def load(name: str) -> ControlMessage:
        msg, payload, enc, raw = _decode(
            OFFICIAL / f"ctrl_{name}_blazingmq_1.2.2.bin", ControlMessage
        )
        assert enc == BER and isinstance(msg, ControlMessage)
        _assert_reencodes(msg, payload, enc, raw)
        return msg

    opened = load("open_queue")
    assert opened.r_id == 1 and opened.open_queue is not None
    params = opened.open_queue.handle_parameters
    assert (params.uri, params.q_id, params.flags) == (
        "bmq://bmq.test.mem.priority/pybmq-capture",
        0,
        6,
    )
    assert (params.read_count, params.write_count, params.admin_count) == (1, 1, 0)
    configured = load("configure_queue_stream")
    assert configured.r_id == 2 and configured.configure_queue_stream is not None
    stream = configured.configure_queue_stream.stream_parameters
    assert (stream.max_unconfirmed_messages, stream.max_unconfirmed_bytes) == (1000, 33554432)
    assert (stream.consumer_priority, stream.consumer_priority_count) == (0, 1)
    deconfigured = load("deconfigure_queue_stream")
    assert deconfigured.configure_queue_stream is not None
    zero = deconfigured.configure_queue_stream.stream_parameters
    assert (zero.max_unconfirmed_messages, zero.consumer_priority) == (0, -(2**31))
    closed = load("close_queue")
    assert closed.r_id == 4 and closed.close_queue is not None
    assert closed.close_queue.is_final and closed.close_queue.handle_parameters == params
    bye = load("disconnect")
    assert (bye.r_id, bye.selection) == (5, "disconnect")
