"""The XSD loader: every BDE construct the control-message schema uses lands in the model intact."""

from __future__ import annotations

from pathlib import Path

import pytest
from pybmq.codegen.model import AnonymousChoice, ComplexType, SimpleType, TypeRef
from pybmq.codegen.xsd_loader import load_schema
from pybmq.errors import SchemaError

from tests.helpers.paths import TESTS_DIR

CTRLMSG_XSD = TESTS_DIR.parent / "schema" / "bmqp_ctrlmsg.xsd"
FIXTURES = TESTS_DIR / "vectors" / "xsd"


@pytest.fixture(scope="module")
def schema():  # type: ignore[no-untyped-def]
    return load_schema(CTRLMSG_XSD)


def test_counts_and_package(schema) -> None:  # type: ignore[no-untyped-def]
    assert len(schema.complex_types) == 89
    assert len(schema.simple_types) == 11
    assert schema.package == "bmqp_ctrlmsg"
    assert schema.target_namespace == "http://bloomberg.com/schemas/bmqp"
    assert schema.complex_types[0].name == "Status"  # file order is kept


def test_anonymous_choice_in_sequence_keeps_position_and_bdem_ids(schema) -> None:  # type: ignore[no-untyped-def]
    cm = schema.type("ControlMessage")
    assert isinstance(cm, ComplexType) and cm.kind == "sequence"
    r_id, choice = cm.members
    assert (r_id.name, r_id.id, r_id.min_occurs, r_id.type) == ("rId", 0, 0, TypeRef("int", True))
    assert r_id.is_optional
    assert isinstance(choice, AnonymousChoice) and choice.id == 1
    ids = {e.name: e.id for e in choice.elements}
    assert ids["status"] == 0 and ids["adminCommand"] == 7 and ids["configureStreamResponse"] == 17
    assert all(e.choice == 1 for e in choice.elements)
    assert [e.name for e in cm.elements][:3] == ["rId", "status", "disconnect"]


def test_named_choice_ids_default_to_position(schema) -> None:  # type: ignore[no-untyped-def]
    nego = schema.type("NegotiationMessage")
    assert nego.kind == "choice"
    assert [(e.name, e.id, e.bdem_id) for e in nego.members] == [
        ("clientIdentity", 0, None),
        ("brokerResponse", 1, None),
        ("placeHolder", 2, None),
    ]


def test_defaults_arrays_optionals_and_docs(schema) -> None:  # type: ignore[no-untyped-def]
    ci = schema.type("ClientIdentity")
    assert ci.element("sdkVersion").default == "999999"
    assert ci.element("clusterNodeId").default == "-1"
    assert ci.element("sdkLanguage").default == "E_CPP"
    assert ci.element("guidInfo").default is None and ci.element("guidInfo").min_occurs == 1
    assert "identification" in (ci.doc or "")
    subs = schema.type("StreamParameters").element("subscriptions")
    assert subs.is_array and subs.max_occurs is None and subs.min_occurs == 1
    auth = schema.type("AuthenticationRequest").element("data")
    assert auth.type == TypeRef("base64Binary", True) and auth.is_optional
    assert schema.type("QueueInfo").element("key").type == TypeRef("hexBinary", True)
    flags = schema.type("RoutingConfiguration").element("flags")
    assert flags.type.name == "unsignedLong" and "flag bits" in (flags.doc or "")
    assert schema.type("DummyType").members == ()


def test_enums_keep_bdem_ids_or_get_positions(schema) -> None:  # type: ignore[no-untyped-def]
    cat = schema.type("StatusCategory")
    assert isinstance(cat, SimpleType) and cat.is_enum and cat.preserve_enum_order
    assert cat.value("E_NOT_READY").id == -8
    assert "status categories" in (cat.doc or "")
    node = schema.type("NodeStatus")
    assert [v.id for v in node.values] == [0, 10, 20, 30, 40]
    dump = schema.type("DumpMsgType")
    assert [(v.id, v.bdem_id) for v in dump.values][:2] == [(0, None), (1, None)]


def test_loading_is_deterministic() -> None:
    assert load_schema(CTRLMSG_XSD) == load_schema(CTRLMSG_XSD)


@pytest.mark.parametrize(
    "path", sorted(FIXTURES.glob("*/*.xsd")), ids=lambda p: f"{p.parent.name}/{p.name}"
)
def test_other_bde_schemas_and_history_load(path: Path) -> None:
    schema = load_schema(path)
    assert schema.complex_types
    for complex_type in schema.complex_types:
        for name in schema.references(complex_type):
            assert schema.type(name).name == name


def test_builtin_written_with_schema_prefix_resolves() -> None:
    schema = load_schema(FIXTURES / "other" / "mqbcmd.xsd")
    assert schema.type("LeaderMessageSequence").element("electorTerm").type == TypeRef(
        "unsignedLong", True
    )


def test_unsupported_construct_is_a_schema_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.xsd"
    bad.write_text(
        "<schema xmlns='http://www.w3.org/2001/XMLSchema'>"
        "<complexType name='A'><sequence><element name='x' type='int'/></sequence>"
        "<attribute name='y' type='int'/></complexType></schema>"
    )
    with pytest.raises(SchemaError, match="attributes"):
        load_schema(bad)
    bad.write_text("<schema xmlns='http://www.w3.org/2001/XMLSchema'><complexType name='A'>")
    with pytest.raises(SchemaError):
        load_schema(bad)
    with pytest.raises(SchemaError):
        load_schema(tmp_path / "missing.xsd")
