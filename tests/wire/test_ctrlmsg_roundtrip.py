"""Every generated type round-trips through both codecs (values drawn from the XSD model)."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pybmq.errors import ProtocolError
from pybmq.generated import bmqp_ctrlmsg
from pybmq.generated.bmqp_ctrlmsg_ber import decode_ber, encode_ber
from pybmq.generated.bmqp_ctrlmsg_json import decode_json, encode_json

from tests.helpers.ctrlmsg_strategies import ctrlmsg_strategies

MODEL = ctrlmsg_strategies()
TYPE_NAMES = [t.name for t in MODEL.schema.complex_types]
SETTINGS = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def test_every_xsd_type_has_a_class() -> None:
    assert len(TYPE_NAMES) == 89
    enums = [t.name for t in MODEL.schema.simple_types]
    assert len(enums) == 11
    for name in TYPE_NAMES + enums:
        assert hasattr(bmqp_ctrlmsg, name)


def _roundtrip(value: Any) -> None:
    cls = type(value)
    as_json = encode_json(value)
    from_json = decode_json(cls, as_json)
    assert from_json == value
    assert encode_json(from_json) == as_json
    as_ber = encode_ber(value)
    from_ber = decode_ber(cls, as_ber)
    assert from_ber == value
    assert encode_ber(from_ber) == as_ber
    assert as_ber[:2] == b"\x30\x80" and as_ber.endswith(b"\x00\x00")
    # compact and escaped like json.dumps, except that strings write "/" as "\/" (baljsn)
    canonical = json.dumps(json.loads(as_json), separators=(",", ":"), ensure_ascii=False)
    assert as_json.replace(b"\\/", b"/") == canonical.encode("utf-8")


@pytest.mark.parametrize("name", TYPE_NAMES)
@SETTINGS
@given(data=st.data())
def test_type_roundtrips(name: str, data: st.DataObject) -> None:
    _roundtrip(data.draw(MODEL.for_type(name)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(MODEL.for_type("ControlMessage"))
def test_control_message_roundtrips(value: Any) -> None:
    _roundtrip(value)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(MODEL.for_type("NegotiationMessage"))
def test_negotiation_message_roundtrips(value: Any) -> None:
    _roundtrip(value)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_encodings_of_any_message_raise_only_protocol_errors(data: st.DataObject) -> None:
    value = data.draw(
        MODEL.for_type(data.draw(st.sampled_from(["ControlMessage", "NegotiationMessage"])))
    )
    cls = type(value)
    for encode, decode in ((encode_ber, decode_ber), (encode_json, decode_json)):
        buf = bytearray(encode(value))
        for _ in range(data.draw(st.integers(1, 3))):
            buf[data.draw(st.integers(0, len(buf) - 1))] = data.draw(st.integers(0, 255))
        cut = data.draw(st.integers(0, len(buf)))
        for candidate in (bytes(buf), bytes(buf[:cut])):
            with contextlib.suppress(ProtocolError):
                decode(cls, candidate)
