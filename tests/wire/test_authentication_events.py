"""AUTHENTICATION events: framed like CONTROL (codec in typeSpecific), type 15."""

from __future__ import annotations

import pytest
from pybmq.errors import ProtocolError
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.generated.wire_codec import EncodingType, EventType
from pybmq.wire.control import (
    decode_authentication,
    decode_control_as,
    encode_authentication,
    encode_control,
)
from pybmq.wire.framing import EventReader

REQUEST = ctrl.AuthenticationMessage(
    authentication_request=ctrl.AuthenticationRequest(mechanism="BASIC", data=b"alice:pw")
)


@pytest.mark.parametrize("encoding", ["BER", "JSON"])
def test_round_trip_in_both_encodings(encoding: str) -> None:
    data = encode_authentication(REQUEST, encoding)
    (event,) = EventReader().feed(data)
    assert event.header.type == EventType.AUTHENTICATION
    assert len(data) % 4 == 0
    message, used = decode_authentication(event)
    assert message == REQUEST
    assert used is EncodingType[encoding]


def test_request_defaults_to_ber_like_the_cpp_sdk() -> None:
    data = encode_authentication(REQUEST)
    assert data[4] & 0x3F == EventType.AUTHENTICATION
    assert decode_authentication(data)[1] is EncodingType.BER


def test_a_control_event_is_not_an_authentication_event() -> None:
    negotiation = encode_control(REQUEST, "BER")
    with pytest.raises(ProtocolError):
        decode_authentication(negotiation)
    with pytest.raises(ProtocolError):
        decode_control_as(encode_authentication(REQUEST), ctrl.ControlMessage)


def test_truncated_payload_is_a_protocol_error() -> None:
    data = bytearray(encode_authentication(REQUEST, "JSON"))
    data[12] ^= 0xFF
    with pytest.raises(ProtocolError):
        decode_authentication(bytes(data))


def test_generated_request_repr_hides_the_material() -> None:
    assert "alice:pw" not in repr(REQUEST) and "BASIC" in repr(REQUEST)
