"""``pybmq decode``: trees, JSON, hex input, and clear failures with offsets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pybmq.cli import main
from pybmq.wire.control import HEARTBEAT_REQ_EVENT
from pybmq.wire.properties import MessageProperties
from pybmq.wire.put import PutEventBuilder


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(["decode", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_put_tree_shows_the_fields_of_the_java_dump(
    capsys: pytest.CaptureFixture[str], java_vectors: Path
) -> None:
    status, out, _ = run(capsys, str(java_vectors / "msg_put_multi.bin"))
    assert status == 0
    for needle in ("[PUT event] offset 0", "queue_id         : 9876", "crc32c           : 3469549003",
                   "correlation_id   : 1234", "flags_names      : ACK_REQUESTED|MESSAGE_PROPERTIES",
                   "timestamp (INT64) = 1234567890", "|abcdefghijklmnop|", "extended format"):  # fmt: skip
        assert needle in out


def test_filler_is_reported_not_parsed(
    capsys: pytest.CaptureFixture[str], java_vectors: Path
) -> None:
    status, out, _ = run(capsys, str(java_vectors / "msg_ack_20072018.bin"))
    assert status == 0
    assert "[Filler] 4 zero bytes at offset 252" in out
    assert out.count("status=") == 10


def test_json_output_for_the_io_dump(
    capsys: pytest.CaptureFixture[str], java_vectors: Path
) -> None:
    status, out, _ = run(capsys, "--json", str(java_vectors / "bmq_io_dump_1551267643131.bin"))
    assert status == 0
    nodes = [json.loads(line) for line in out.splitlines()]  # JSON Lines
    assert len(nodes) == 1075
    assert nodes[0]["control"]["class"] == "NegotiationMessage"
    assert "brokerResponse" in nodes[0]["control"]["message"]
    pushes = [m for n in nodes if n["type"] == "PUSH" for m in n["messages"]]
    assert pushes and all(len(m["header"]["guid"]) == 32 for m in pushes)


def test_hex_input(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    builder = PutEventBuilder()
    builder.add(7, b"hello", correlation_id=42, properties=MessageProperties({"k": "v"}))
    (event,) = builder.finish()
    dump = tmp_path / "put.hex"
    lines = [f"{i:08x}: {event[i : i + 16].hex(' ', 2)}  ascii" for i in range(0, len(event), 16)]
    dump.write_text("\n".join(lines) + "\n")
    status, out, _ = run(capsys, "--hex", "--json", str(dump))
    assert status == 0
    (node,) = [json.loads(line) for line in out.splitlines()]
    message = node["messages"][0]
    assert message["header"]["correlation_id"] == 42
    assert message["properties"]["properties"] == [{"name": "k", "type": "STRING", "value": "v"}]
    plain = tmp_path / "plain.hex"
    plain.write_text(HEARTBEAT_REQ_EVENT.hex())
    status, out, _ = run(capsys, "--hex", str(plain))
    assert status == 0 and "[HEARTBEAT_REQ event]" in out


def test_malformed_input_exits_2_with_the_offset(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "bad.bin"
    bad.write_bytes(HEARTBEAT_REQ_EVENT + b"\x00\x00\x00\x03\x41\x02\x00\x00")
    status, out, err = run(capsys, str(bad))
    assert status == 2
    assert "[HEARTBEAT_REQ event]" in out  # what decoded is still printed
    assert "offset 8" in err and "smaller than" in err
    builder = PutEventBuilder()
    builder.add(1, b"abc", correlation_id=1)
    (event,) = builder.finish()
    corrupt = bytearray(HEARTBEAT_REQ_EVENT + event)
    corrupt[-1] = 9  # padding byte
    bad.write_bytes(bytes(corrupt))
    status, _, err = run(capsys, str(bad))
    assert status == 2 and f"offset {len(corrupt) - 1}" in err and "padding" in err
    status, _, err = run(capsys, str(tmp_path / "missing.bin"))
    assert status == 2 and "cannot read" in err
    bad.write_text("zz")
    status, _, err = run(capsys, "--hex", str(bad))
    assert status == 2 and "hex" in err


def test_bodies_not_dissected_are_described(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    dump = tmp_path / "storage.hex"
    dump.write_text("0000000c48020000 01020304\n000000084c020000\n")
    status, out, _ = run(capsys, "--hex", str(dump))
    assert status == 0
    assert "[Body] 4 bytes (not dissected): not a client-side event" in out
    assert "[HEARTBEAT_RSP event]" in out and "bare EventHeader" in out


def test_bare_properties_area(capsys: pytest.CaptureFixture[str], java_vectors: Path) -> None:
    status, out, _ = run(capsys, "--properties", "old", str(java_vectors / "msg_props_old.bin"))
    assert status == 0 and "old format, 3 properties" in out and "id (STRING) = 'myCoolId'" in out
    status, out, _ = run(
        capsys, "--properties", "extended", "--json", str(java_vectors / "msg_props.bin")
    )
    assert status == 0 and json.loads(out)[1] == {
        "name": "timestamp",
        "type": "INT64",
        "value": 1234567890,
    }
    # Read in the wrong format, the offsets do not add up: a clean error, exit 2.
    status, _, err = run(capsys, "--properties", "old", str(java_vectors / "msg_props.bin"))
    assert status == 2 and "offset" in err


def test_empty_input_says_so(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    status, out, err = run(capsys, str(empty))
    assert status == 1 and out == "" and "is empty: no events" in err


@pytest.mark.parametrize("encoding", ["BER", "JSON"])
def test_authentication_events_are_shown_with_the_material_masked(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, encoding: str
) -> None:
    from pybmq.generated import bmqp_ctrlmsg as ctrl
    from pybmq.wire.control import encode_authentication

    request = ctrl.AuthenticationRequest(mechanism="BASIC", data=b"frank:top-secret")
    response = ctrl.AuthenticationResponse(
        status=ctrl.Status(category=ctrl.StatusCategory.E_SUCCESS, code=0, message=""),
        lifetime_ms=60000,
    )
    path = tmp_path / "auth.bin"
    path.write_bytes(
        encode_authentication(ctrl.AuthenticationMessage(authentication_request=request), encoding)
        + encode_authentication(ctrl.AuthenticationMessage(authentication_response=response))
    )
    for flags in ((), ("--json",)):
        status, out, _ = run(capsys, str(path), *flags)
        assert status == 0
        assert "top-secret" not in out and "frank" not in out
        assert "16 bytes masked" in out and "BASIC" in out and "60000" in out
    assert "[AuthenticationMessage]" in run(capsys, str(path))[1]
