"""The control-message generator: deterministic, registered, parameterised by schema and module."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import pytest
from pybmq.codegen import driver
from pybmq.codegen.bindings import generate_bindings
from pybmq.codegen.filters import snake
from pybmq.errors import SchemaError

from tests.helpers.paths import TESTS_DIR

FIXTURES = TESTS_DIR / "vectors" / "xsd"


def test_registered_and_deterministic() -> None:
    names = [name for name, _ in driver.registered_generators()]
    assert "control messages" in names
    first = driver.render_all()
    # Other generators (the binary layout) add their own files next to these.
    assert {"bmqp_ctrlmsg.py", "bmqp_ctrlmsg_ber.py", "bmqp_ctrlmsg_json.py"} <= set(first)
    assert driver.render_all() == first  # byte-identical on a second run


def test_hand_edit_of_generated_code_is_caught(tmp_path: Path) -> None:
    artifacts = driver.render_all()
    driver.write(artifacts, tmp_path)
    target = tmp_path / "bmqp_ctrlmsg_ber.py"
    target.write_text(target.read_text().replace("_b.put_int(", "_b.put_int (", 1))
    assert "bmqp_ctrlmsg_ber.py" in driver.diff(artifacts, tmp_path)


MINI_XSD = """<?xml version='1.0'?>
<schema xmlns='http://www.w3.org/2001/XMLSchema' xmlns:bdem='http://bloomberg.com/schemas/bdem'
        xmlns:tns='urn:mini' targetNamespace='urn:mini' bdem:package='mini'>
  <simpleType name='Color'>
    <restriction base='string'>
      <enumeration value='E_RED' bdem:id='3'/>
      <enumeration value='E_BLUE' bdem:id='7'/>
    </restriction>
  </simpleType>
  <complexType name='Item'>
    <sequence>
      <element name='tags'   type='string'       maxOccurs='unbounded'/>
      <element name='counts' type='unsignedInt'  maxOccurs='unbounded'/>
      <element name='key'    type='hexBinary'    minOccurs='0'/>
      <element name='color'  type='tns:Color'    default='E_BLUE'/>
      <choice>
        <element name='name'   type='string' bdem:id='5'/>
        <element name='number' type='long'   bdem:id='6'/>
      </choice>
    </sequence>
  </complexType>
  <complexType name='Envelope'>
    <choice>
      <element name='item'  type='tns:Item'/>
      <element name='other' type='tns:Item'/>
    </choice>
  </complexType>
</schema>
"""


def _import_generated(tmp_path: Path, xsd: Path, module: str) -> tuple[Any, Any, Any]:
    package = tmp_path / "pybmq_gen_test"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for artifact in generate_bindings(xsd, module):
        text = artifact.text.replace("pybmq.generated.", "pybmq_gen_test.")
        (package / artifact.relpath).write_text(text)
    sys.path.insert(0, str(tmp_path))
    try:
        return tuple(  # type: ignore[return-value]
            importlib.import_module(f"pybmq_gen_test.{module}{suffix}")
            for suffix in ("", "_ber", "_json")
        )
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m.startswith("pybmq_gen_test")]:
            del sys.modules[name]


def test_another_schema_generates_working_bindings(tmp_path: Path) -> None:
    xsd = tmp_path / "mini.xsd"
    xsd.write_text(MINI_XSD)
    types, ber, js = _import_generated(tmp_path, xsd, "mini")
    item = types.Item(tags=["a"], counts=[5, 2**32 - 1], number=-2)
    assert (
        item.color == types.Color.E_BLUE and types.Color.E_BLUE == 7 and item.selection == "number"
    )
    encoded = ber.encode_ber(item)
    assert encoded == bytes.fromhex(
        "3080"
        "a0800c016100 00"  # tags: [0] holding UTF8String items
        "a180020105020500ffffffff0000"  # counts: INTEGER items, 2**32-1 with a 00 prefix
        "830107"  # color [3] = 7 (the optional key [2] is absent)
        "a480 8601fe 0000"  # the anonymous choice [4] holding selection number [6] = -2
        "0000".replace(" ", "")
    )
    assert ber.decode_ber(types.Item, encoded) == item
    assert (
        js.encode_json(item)
        == b'{"tags":["a"],"counts":[5,4294967295],"color":"E_BLUE","number":-2}'
    )
    envelope = types.Envelope(other=types.Item(name="n", key=b"\x01"))
    assert ber.encode_ber(envelope).startswith(bytes.fromhex("3080a080a180"))  # [0] wrapper, [1]
    assert ber.decode_ber(types.Envelope, ber.encode_ber(envelope)) == envelope
    assert js.decode_json(types.Envelope, js.encode_json(envelope)) == envelope
    assert b'"key":"AQ=="' in js.encode_json(envelope)


def test_array_in_a_choice_is_refused(tmp_path: Path) -> None:
    xsd = tmp_path / "bad.xsd"
    xsd.write_text(
        MINI_XSD.replace("name='other' type='tns:Item'", "name='o' type='int' maxOccurs='9'")
    )
    with pytest.raises(SchemaError, match="array in a choice"):
        generate_bindings(xsd, "bad")


def test_bmqstm_generates(tmp_path: Path) -> None:
    types, _, _ = _import_generated(tmp_path, FIXTURES / "other" / "bmqstm.xsd", "bmqstm")
    assert hasattr(types, "StatContextUpdateList")


def test_element_names_that_were_decoder_locals_are_fine(tmp_path: Path) -> None:
    # "number" and "length" used to be names of the BER decoder's own variables
    xsd = tmp_path / "locals.xsd"
    xsd.write_text(
        MINI_XSD.replace("name='tags'", "name='length'").replace("name='counts'", "name='r'")
    )
    types, ber, js = _import_generated(tmp_path, xsd, "locals")
    item = types.Item(length=["x"], r=[1], number=3)
    assert ber.decode_ber(types.Item, ber.encode_ber(item)) == item
    assert js.decode_json(types.Item, js.encode_json(item)) == item


def test_snake_case() -> None:
    assert snake("rId") == "r_id"
    assert snake("openQueue") == "open_queue"
    assert snake("qId") == "q_id"
    assert snake("clusterStateFSMMessage") == "cluster_state_fsm_message"
    assert snake("followerLSNRequest") == "follower_lsn_request"
    assert snake("isFinal") == "is_final"
