"""Bad input gets a typed error naming what and where; nothing else ever escapes the codecs."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pybmq.errors import DecodeError, EncodeError, ProtocolError, UsageError
from pybmq.generated.bmqp_ctrlmsg import (
    AuthenticationMessage,
    ClientIdentity,
    ControlMessage,
    NegotiationMessage,
    OpenQueue,
    QueueHandleParameters,
    Status,
    StatusCategory,
)
from pybmq.generated.bmqp_ctrlmsg_ber import decode_ber, encode_ber
from pybmq.generated.bmqp_ctrlmsg_json import decode_json, encode_json

OPEN = ControlMessage(
    r_id=3,
    open_queue=OpenQueue(
        handle_parameters=QueueHandleParameters(
            uri="bmq://bmq.test.mem.priority/q", q_id=1, flags=4
        )
    ),
)
OPEN_BER = encode_ber(OPEN)
STATUS_BER = bytes.fromhex("3080a180a08080010081017b82045465737400000000 0000".replace(" ", ""))


# -- construction and encoding -------------------------------------------------------------------


def test_choice_needs_exactly_one_selection() -> None:
    with pytest.raises(EncodeError, match="no selection set"):
        ControlMessage(r_id=1)
    with pytest.raises(EncodeError, match="more than one selection"):
        ControlMessage(status=Status(), open_queue=OPEN.open_queue)
    with pytest.raises(EncodeError, match="no selection set"):
        NegotiationMessage()
    assert OPEN.selection == "open_queue"
    assert NegotiationMessage(client_identity=ClientIdentity()).selection == "client_identity"


def test_selection_changed_after_construction_is_caught_on_encode() -> None:
    msg = ControlMessage(status=Status())
    msg.disconnect_response = None
    msg.status = None
    with pytest.raises(EncodeError, match="no selection"):
        encode_ber(msg)
    with pytest.raises(EncodeError, match="no selection"):
        encode_json(msg)


@pytest.mark.parametrize("encode", [encode_ber, encode_json])
def test_unencodable_values(encode) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(EncodeError, match=r"Status\.code: 1099511627776 is outside"):
        encode(ControlMessage(status=Status(code=2**40)))
    with pytest.raises(EncodeError, match=r"Status\.code: expected an integer"):
        encode(ControlMessage(status=Status(code="7")))  # type: ignore[arg-type]
    with pytest.raises(EncodeError, match=r"Status\.category"):
        encode(ControlMessage(status=Status(category=99)))  # type: ignore[arg-type]
    with pytest.raises(EncodeError, match=r"QueueHandleParameters\.qId"):
        encode(
            ControlMessage(open_queue=OpenQueue(handle_parameters=QueueHandleParameters(q_id=-1)))
        )
    with pytest.raises(EncodeError, match="UTF-8"):
        encode(ControlMessage(status=Status(message="\ud800")))
    with pytest.raises(EncodeError, match="not a bmqp_ctrlmsg type"):
        encode(object())


def test_plain_int_for_enum_is_accepted() -> None:
    msg = ControlMessage(status=Status(category=-3))  # type: ignore[arg-type]
    assert decode_ber(ControlMessage, encode_ber(msg)).status.category == StatusCategory.E_NOT_CONNECTED  # type: ignore[union-attr]


def test_decode_with_a_foreign_class_is_a_usage_error() -> None:
    with pytest.raises(UsageError):
        decode_ber(dict, OPEN_BER)
    with pytest.raises(UsageError):
        decode_json(dict, b"{}")
    with pytest.raises(UsageError, match="bytes-like"):
        decode_ber(ControlMessage, "3080")  # type: ignore[arg-type]
    with pytest.raises(DecodeError, match="expected JSON text"):
        decode_json(ControlMessage, 42)  # type: ignore[arg-type]


# -- BER -----------------------------------------------------------------------------------------


def test_ber_truncated_names_offset() -> None:
    for cut in (1, 2, 5, len(OPEN_BER) // 2, len(OPEN_BER) - 1):
        with pytest.raises(DecodeError) as info:
            decode_ber(ControlMessage, OPEN_BER[:cut])
        assert info.value.offset is not None and info.value.offset <= cut
        assert info.value.path and info.value.path.startswith("ControlMessage")


def test_ber_length_past_end() -> None:
    uri_at = OPEN_BER.index(b"bmq://") - 1  # the uri's length octet
    bad = bytearray(OPEN_BER)
    bad[uri_at] = 0x7F
    with pytest.raises(DecodeError, match="runs past the end") as info:
        decode_ber(ControlMessage, bytes(bad))
    assert info.value.offset == uri_at + 1


def test_ber_enum_id_and_int_range_checked_with_path() -> None:
    bad = bytearray(STATUS_BER)
    bad[8] = 0x63  # category 99
    with pytest.raises(DecodeError, match="99 is not a StatusCategory") as info:
        decode_ber(ControlMessage, bytes(bad))
    assert info.value.path == "ControlMessage.status.category" and info.value.offset == 8
    big = STATUS_BER.replace(bytes.fromhex("81017b"), bytes.fromhex("8105ff00000000"))
    with pytest.raises(DecodeError, match="outside") as info:
        decode_ber(ControlMessage, big)
    assert info.value.path == "ControlMessage.status.code"


def test_ber_unknown_elements_are_skipped() -> None:
    # An extra [20] primitive and an extra [21] constructed element inside Status: skipped.
    extra = bytes.fromhex("940100") + bytes.fromhex("b580800100 0000".replace(" ", ""))
    end = STATUS_BER.index(b"Test") + 4
    msg = decode_ber(ControlMessage, STATUS_BER[:end] + extra + STATUS_BER[end:])
    assert msg.status == Status(code=123, message="Test")


def test_ber_unknown_selection_is_a_decode_error() -> None:
    bad = bytes.fromhex("3080a180be80000000000000")  # anonymous choice holding selection [30]
    with pytest.raises(DecodeError, match="exactly one of the 14 selections, found 0") as info:
        decode_ber(ControlMessage, bad)
    assert info.value.path == "ControlMessage"


def test_ber_absurd_nesting_is_refused() -> None:
    deep = b"\x30\x80" + b"\xb5\x80" * 5000 + b"\x00\x00" * 5001
    with pytest.raises(DecodeError, match="nesting deeper than 64"):
        decode_ber(ControlMessage, deep)


def test_ber_trailing_bytes_and_wrong_top_tag() -> None:
    with pytest.raises(DecodeError, match="trailing"):
        decode_ber(ControlMessage, OPEN_BER + b"\x04")
    with pytest.raises(DecodeError, match="universal SEQUENCE"):
        decode_ber(ControlMessage, b"\xa0" + OPEN_BER[1:])
    # a clusterMessage whose own (anonymous) choice holds nothing
    with pytest.raises(DecodeError, match="found 0") as info:
        decode_ber(ControlMessage, bytes.fromhex("3080a180a980000000000000"))
    assert info.value.path == "ControlMessage.clusterMessage"
    # an empty openQueue: the required handleParameters takes its default (as balber does)
    msg = decode_ber(ControlMessage, bytes.fromhex("3080a180aa80000000000000"))
    assert msg.open_queue == OpenQueue() and "handleParameters" in msg.open_queue._absent


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200))
def test_ber_random_bytes_raise_only_protocol_errors(data: bytes) -> None:
    for cls in (ControlMessage, NegotiationMessage):
        with contextlib.suppress(ProtocolError):
            decode_ber(cls, data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_ber_mutated_messages_raise_only_protocol_errors(data: st.DataObject) -> None:
    base = bytearray(data.draw(st.sampled_from([OPEN_BER, STATUS_BER])))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(base) - 1))
        base[at] = data.draw(st.integers(0, 255))
    with contextlib.suppress(ProtocolError):
        decode_ber(ControlMessage, bytes(base))


# -- JSON ----------------------------------------------------------------------------------------


def test_json_syntax_error_names_offset() -> None:
    with pytest.raises(DecodeError, match="malformed JSON") as info:
        decode_json(ControlMessage, b'{"rId":1,')
    assert info.value.offset == 9


def test_json_wrong_types_name_the_path() -> None:
    with pytest.raises(DecodeError, match="expected an integer, got a boolean") as info:
        decode_json(ControlMessage, b'{"rId":true,"status":{"category":"E_SUCCESS","code":1}}')
    assert info.value.path == "ControlMessage.rId"
    with pytest.raises(DecodeError, match="'E_NOPE' is not a StatusCategory") as info:
        decode_json(ControlMessage, b'{"status":{"category":"E_NOPE","code":1}}')
    assert info.value.path == "ControlMessage.status.category"
    bad = b'{"openQueue":{"handleParameters":{"uri":5,"qId":0,"flags":0}}}'
    with pytest.raises(DecodeError, match="expected a string") as info:
        decode_json(ControlMessage, bad)
    assert info.value.path == "ControlMessage.openQueue.handleParameters.uri"
    with pytest.raises(DecodeError, match="expected a JSON object"):
        decode_json(ControlMessage, b"[1,2]")
    with pytest.raises(DecodeError, match="invalid base64") as info:
        decode_json(
            AuthenticationMessage, b'{"authenticationRequest":{"mechanism":"m","data":"!"}}'
        )
    assert info.value.path == "AuthenticationMessage.authenticationRequest.data"


def test_json_unknown_choice_and_members() -> None:
    with pytest.raises(DecodeError, match="found 0") as info:
        decode_json(ControlMessage, b'{"rId":1,"fooBar":{}}')
    assert info.value.path == "ControlMessage"
    with pytest.raises(DecodeError, match="found 2"):
        decode_json(ControlMessage, b'{"status":{"category":"E_SUCCESS","code":0},"disconnect":{}}')
    # unknown members are skipped (forward compatibility), null is absent
    msg = decode_json(ControlMessage, b'{"rId":null,"future":[1,{"x":2}],"disconnect":{"new":1}}')
    assert msg.r_id is None and msg.selection == "disconnect"


def test_json_numbers_as_strings_and_64_bit() -> None:
    msg = decode_json(
        ControlMessage,
        b'{"openQueue":{"handleParameters":{"uri":"u","qId":"7","flags":18446744073709551615}}}',
    )
    assert msg.open_queue is not None
    assert msg.open_queue.handle_parameters.q_id == 7
    assert msg.open_queue.handle_parameters.flags == 2**64 - 1
    assert b'"flags":18446744073709551615' in encode_json(msg)


def test_json_absurd_nesting_and_encoding() -> None:
    for deep in (b"[" * 100000, b'{"rId":' * 100000):
        with pytest.raises(DecodeError):
            decode_json(ControlMessage, deep)
    with pytest.raises(DecodeError, match="not UTF-8"):
        decode_json(ControlMessage, b'{"status":{"message":"\xff"}}')
    with pytest.raises(DecodeError):
        decode_json(ControlMessage, b'{"rId":' + b"9" * 5000 + b"}")


def test_json_escapes_like_baljsn() -> None:
    msg = ControlMessage(status=Status(message='a/b "q" \\ \n\t\x01 é'))
    text = encode_json(msg)
    assert text.endswith(b'"message":"a\\/b \\"q\\" \\\\ \\n\\t\\u0001 \xc3\xa9"}}')
    assert decode_json(ControlMessage, text) == msg


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.binary(max_size=120), st.text(max_size=120)))
def test_json_random_input_raises_only_protocol_errors(data: bytes | str) -> None:
    for cls in (ControlMessage, NegotiationMessage):
        with contextlib.suppress(ProtocolError):
            decode_json(cls, data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_json_mutated_messages_raise_only_protocol_errors(data: st.DataObject) -> None:
    base = bytearray(encode_json(OPEN))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(base) - 1))
        base[at] = data.draw(st.sampled_from(b'{}[]":,0123456789-tfn "xE'))
    with contextlib.suppress(ProtocolError):
        decode_json(ControlMessage, bytes(base))


def test_ber_definite_lengths_and_high_tag_numbers_are_read() -> None:
    # The same ControlMessage{status} as STATUS_BER, with definite lengths throughout, plus an
    # unknown element with a high-form tag number (31) that must be skipped.
    status = bytes.fromhex("800100 81017b 820454657374") + bytes.fromhex("9f1f0100")
    definite = bytes([0x30, len(status) + 4, 0xA1, len(status) + 2, 0xA0, len(status)]) + status
    msg = decode_ber(ControlMessage, definite)
    assert msg == decode_ber(ControlMessage, STATUS_BER)
    assert msg.status == Status(code=123, message="Test")
    # a definite length that disagrees with the content is refused
    bad = bytearray(definite)
    bad[3] -= 1
    with pytest.raises(DecodeError):
        decode_ber(ControlMessage, bytes(bad))
