"""schema-diff's classes checked against the generated codecs themselves.

For some upstream revision pairs (and a few synthetic ones) both revisions are generated into a
temporary folder; values are encoded with one revision's codecs and decoded with the other's. What
schema-diff says about an encoding must be what actually happens: compatible changes round-trip
in both directions, a change that breaks one encoding fails or misreads there and only there.
"""

from __future__ import annotations

import importlib
import itertools
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from pybmq.codegen import bindings
from pybmq.codegen.bindings import generate_bindings
from pybmq.codegen.schemadiff import BER, JSON, Compat, diff_files
from pybmq.errors import DecodeError

from tests.helpers.paths import TESTS_DIR

HISTORY = sorted((TESTS_DIR / "vectors" / "xsd" / "history").glob("*.xsd"))
CURRENT = TESTS_DIR.parent / "schema" / "bmqp_ctrlmsg.xsd"
_counter = itertools.count()


class Revision:
    """One schema revision's generated types and codecs, importable under a unique name."""

    def __init__(self, types: ModuleType, json: ModuleType, ber: ModuleType) -> None:
        self.types, self.json, self.ber = types, json, ber

    def __getattr__(self, name: str) -> Any:
        return getattr(self.types, name)

    def encode(self, encoding: str, value: object) -> bytes:
        return bytes(
            self.json.encode_json(value) if encoding == JSON else self.ber.encode_ber(value)
        )

    def decode(self, encoding: str, cls_name: str, data: bytes) -> Any:
        cls = getattr(self.types, cls_name)
        return (
            self.json.decode_json(cls, data) if encoding == JSON else self.ber.decode_ber(cls, data)
        )


@pytest.fixture
def generate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    # black only re-lays out valid Python and takes ~95% of the generation time: skip it here.
    # (patched above the black cache, so unformatted text never lands in it)
    monkeypatch.setattr(bindings, "format_python", lambda text, origin="": text)
    sys.path.insert(0, str(tmp_path))
    made: list[str] = []

    def build(xsd: Path) -> Revision:
        module = f"schemadiff_rev{next(_counter)}"
        for artifact in generate_bindings(xsd, module, package=""):
            (tmp_path / artifact.relpath).write_text(artifact.text, encoding="utf-8")
        made.extend([module, f"{module}_json", f"{module}_ber"])
        return Revision(*(importlib.import_module(m) for m in made[-3:]))

    yield build
    sys.path.remove(str(tmp_path))
    for name in made:
        sys.modules.pop(name, None)


def classes(old: Path, new: Path) -> dict[tuple[str, str], tuple[Compat, tuple[str, ...]]]:
    return {(c.kind, c.path): (c.compat, c.encodings) for c in diff_files(old, new).changes}


@pytest.mark.parametrize("encoding", [BER, JSON])
def test_appended_defaulted_element_round_trips_both_ways(generate: Any, encoding: str) -> None:
    old_xsd, new_xsd = HISTORY[0], HISTORY[1]
    assert classes(old_xsd, new_xsd)[("element-added", "StopRequest.version")] == (
        Compat.COMPATIBLE,
        (),
    )
    old, new = generate(old_xsd), generate(new_xsd)
    from_old = new.decode(
        encoding, "StopRequest", old.encode(encoding, old.StopRequest(cluster_name="c1"))
    )
    assert (from_old.cluster_name, from_old.version) == ("c1", 1)  # the schema default
    from_new = old.decode(
        encoding, "StopRequest", new.encode(encoding, new.StopRequest(cluster_name="c2", version=7))
    )
    assert from_new.cluster_name == "c2"  # the unknown member was skipped


def test_reordered_elements_break_ber_but_not_json(generate: Any) -> None:
    old_xsd = HISTORY[4]
    found = classes(old_xsd, CURRENT)
    assert found[("element-reordered", "ReplicaDataRequest.replicaDataType")] == (
        Compat.WIRE,
        (BER,),
    )
    assert found[("element-added", "ReplicaDataRequest.primaryLeaseId")] == (Compat.WIRE, (BER,))
    old, new = generate(old_xsd), generate(CURRENT)
    value = old.ReplicaDataRequest(
        replica_data_type=old.ReplicaDataType.E_PUSH,
        partition_id=3,
        begin_sequence_number=old.PartitionSequenceNumber(primary_lease_id=2, sequence_number=10),
        end_sequence_number=old.PartitionSequenceNumber(primary_lease_id=2, sequence_number=20),
    )
    # JSON: names carry the meaning; the new member is value-initialised.
    via_json = new.decode(JSON, "ReplicaDataRequest", old.encode(JSON, value))
    assert via_json.partition_id == 3 and via_json.replica_data_type.name == "E_PUSH"
    assert via_json.end_sequence_number.sequence_number == 20 and via_json.primary_lease_id == 0
    # BER: positional tags now point at other members: rejected or misread.
    try:
        via_ber = new.decode(BER, "ReplicaDataRequest", old.encode(BER, value))
    except DecodeError:
        return
    assert (via_ber.partition_id, via_ber.end_sequence_number.sequence_number) != (3, 20)


def test_renamed_element_breaks_json_but_not_ber(generate: Any) -> None:
    old_xsd, new_xsd = HISTORY[1], HISTORY[2]
    found = classes(old_xsd, new_xsd)
    assert found[("element-renamed", "ReplicaStateRequest.sequenceNumber")] == (
        Compat.WIRE,
        (JSON,),
    )
    old, new = generate(old_xsd), generate(new_xsd)
    value = old.ReplicaStateRequest(
        partition_id=1,
        sequence_number=old.PartitionSequenceNumber(primary_lease_id=4, sequence_number=99),
    )
    via_ber = new.decode(BER, "ReplicaStateRequest", old.encode(BER, value))
    assert via_ber.latest_sequence_number.sequence_number == 99  # same tag, same bytes
    via_json = new.decode(JSON, "ReplicaStateRequest", old.encode(JSON, value))
    assert via_json.latest_sequence_number.sequence_number == 0  # the old name was skipped: lost


def test_integer_range_change_breaks_when_values_leave_the_common_range(generate: Any) -> None:
    old_xsd, new_xsd = HISTORY[3], HISTORY[4]
    found = classes(old_xsd, new_xsd)
    assert found[("element-type-changed", "AuthenticationResponse.lifetimeMs")][0] is Compat.WIRE
    old, new = generate(old_xsd), generate(new_xsd)
    big = new.AuthenticationResponse(status=new.Status(), lifetime_ms=2**40)
    for encoding in (BER, JSON):
        with pytest.raises(DecodeError):
            old.decode(encoding, "AuthenticationResponse", new.encode(encoding, big))
        # ...while values both sides can hold still pass.
        small = new.AuthenticationResponse(status=new.Status(), lifetime_ms=5000)
        back = old.decode(encoding, "AuthenticationResponse", new.encode(encoding, small))
        assert back.lifetime_ms == 5000


SCHEMA = """<?xml version='1.0' encoding='UTF-8'?>
<schema xmlns='http://www.w3.org/2001/XMLSchema' xmlns:bdem='http://bloomberg.com/schemas/bdem'
        xmlns:tns='urn:t' targetNamespace='urn:t' bdem:package='t' elementFormDefault='qualified'>
  <simpleType name='Color'><restriction base='string'>
    <enumeration value='RED' bdem:id='0'/><enumeration value='GREEN' bdem:id='1'/>{extra_enum}
  </restriction></simpleType>
  <complexType name='Pick'><choice>
    <element name='count' type='int'/><element name='color' type='tns:Color'/>{extra_selection}
  </choice></complexType>
</schema>
"""


@pytest.mark.parametrize("encoding", [BER, JSON])
def test_new_enumerator_and_selection_break_when_sent(
    generate: Any, tmp_path: Path, encoding: str
) -> None:
    old_xsd = tmp_path / "old.xsd"
    new_xsd = tmp_path / "new.xsd"
    old_xsd.write_text(SCHEMA.format(extra_enum="", extra_selection=""))
    new_xsd.write_text(
        SCHEMA.format(
            extra_enum="<enumeration value='BLUE' bdem:id='2'/>",
            extra_selection="<element name='label' type='string'/>",
        )
    )
    found = classes(old_xsd, new_xsd)
    assert found[("enum-value-added", "Color.BLUE")] == (Compat.WIRE, (BER, JSON))
    assert found[("selection-added", "Pick.label")] == (Compat.WIRE, (BER, JSON))
    old, new = generate(old_xsd), generate(new_xsd)
    with pytest.raises(DecodeError):
        old.decode(encoding, "Pick", new.encode(encoding, new.Pick(color=new.Color.BLUE)))
    with pytest.raises(DecodeError):
        old.decode(encoding, "Pick", new.encode(encoding, new.Pick(label="x")))
    # Old values still pass: the break happens only when the new things are sent.
    assert old.decode(encoding, "Pick", new.encode(encoding, new.Pick(count=4))).count == 4
