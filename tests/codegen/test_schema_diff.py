"""schema-diff on small synthetic schema pairs: one change kind at a time, its class and encodings,
then the command line (text and JSON output, exit statuses) and the layout-spec diff."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from pybmq.cli import main
from pybmq.codegen.layoutdiff import diff_layout_files
from pybmq.codegen.schemadiff import BER, JSON, Compat, diff_files

from tests.helpers.paths import TESTS_DIR

LAYOUT = TESTS_DIR.parent / "schema" / "bmqp_layout.yaml"
HISTORY = TESTS_DIR / "vectors" / "xsd" / "history"

C, A, W = Compat.COMPATIBLE, Compat.API, Compat.WIRE

HEAD = (
    "<?xml version='1.0' encoding='UTF-8'?>\n"
    "<schema xmlns='http://www.w3.org/2001/XMLSchema' xmlns:bdem='http://bloomberg.com/schemas/bdem'"
    " xmlns:tns='urn:t' targetNamespace='urn:t' bdem:package='{package}'"
    " elementFormDefault='qualified'>\n"
)

BASE_TYPES = {
    "Color": "<simpleType name='Color'><restriction base='string'>"
    "<enumeration value='RED' bdem:id='0'/><enumeration value='GREEN' bdem:id='1'/>"
    "</restriction></simpleType>",
    "Name": "<simpleType name='Name'><restriction base='string'><maxLength value='8'/>"
    "</restriction></simpleType>",
    "Point": "<complexType name='Point'><sequence><element name='x' type='int'/>"
    "<element name='y' type='int'/></sequence></complexType>",
    "Msg": "<complexType name='Msg'><annotation><documentation>A message.</documentation>"
    "</annotation><sequence>"
    "<element name='id' type='int'/>"
    "<element name='label' type='string' default='none'/>"
    "<element name='note' type='string' minOccurs='0'/>"
    "</sequence></complexType>",
    "Pick": "<complexType name='Pick'><choice>"
    "<element name='point' type='tns:Point'/><element name='color' type='tns:Color'/>"
    "</choice></complexType>",
    "Env": "<complexType name='Env'><sequence><element name='rId' type='int' minOccurs='0'/>"
    "<choice><element name='a' type='tns:Point'/><element name='b' type='tns:Msg'/></choice>"
    "</sequence></complexType>",
}


def write(path: Path, package: str = "demo", **replace: str) -> Path:
    """An XSD made of BASE_TYPES with some types replaced (value '' drops the type)."""
    types = {**BASE_TYPES, **replace}
    body = "\n".join(text for text in types.values() if text)
    path.write_text(HEAD.format(package=package) + body + "\n</schema>\n", encoding="utf-8")
    return path


def changes(tmp_path: Path, package: str = "demo", **replace: str) -> list[tuple[Compat, str, str]]:
    old = write(tmp_path / "old.xsd")
    new = write(tmp_path / "new.xsd", package=package, **replace)
    return [(c.compat, c.kind, c.path) for c in diff_files(old, new).changes]


def msg(*elements: str, doc: str = "A message.") -> str:
    return (
        f"<complexType name='Msg'><annotation><documentation>{doc}</documentation></annotation>"
        f"<sequence>{''.join(elements)}</sequence></complexType>"
    )


ID = "<element name='id' type='int'/>"
LABEL = "<element name='label' type='string' default='none'/>"
NOTE = "<element name='note' type='string' minOccurs='0'/>"


@pytest.mark.parametrize(
    ("added", "expected"),
    [
        ("<element name='extra' type='int' minOccurs='0'/>", C),  # optional: None when absent
        ("<element name='extra' type='int' default='7'/>", C),  # defaulted
        ("<element name='extra' type='int' minOccurs='0' maxOccurs='unbounded'/>", C),  # array
        # Required without default: old peers omit it, decoders value-initialise it (0), as BDE.
        ("<element name='extra' type='int'/>", C),
        ("<element name='extra' type='int' maxOccurs='unbounded'/>", C),  # read as []
        ("<element name='extra' type='tns:Point'/>", C),  # an all-default Point
        # A choice cannot be value-initialised: new decoders reject old peers' messages.
        ("<element name='extra' type='tns:Pick'/>", W),
        ("<element name='extra' type='tns:Env'/>", W),  # a sequence holding a choice
    ],
)
def test_element_added_at_the_end(tmp_path: Path, added: str, expected: Compat) -> None:
    assert changes(tmp_path, Msg=msg(ID, LABEL, NOTE, added)) == [
        (expected, "element-added", "Msg.extra")
    ]


def test_element_added_in_the_middle_shifts_tags(tmp_path: Path) -> None:
    extra = "<element name='extra' type='int' minOccurs='0'/>"
    assert changes(tmp_path, Msg=msg(ID, extra, LABEL, NOTE)) == [
        (W, "element-added", "Msg.extra"),  # on tag 1, which carried `label` before
        (W, "element-reordered", "Msg.label"),
        (W, "element-reordered", "Msg.note"),
    ]


def test_element_removed(tmp_path: Path) -> None:
    # The last, optional member: wire fine (skipped / None), the field is gone for importers.
    assert changes(tmp_path, Msg=msg(ID, LABEL)) == [(A, "element-removed", "Msg.note")]
    # A required int: old decoders read 0 when new peers omit it; the shift breaks BER.
    assert changes(tmp_path, Msg=msg(LABEL, NOTE)) == [
        (A, "element-removed", "Msg.id"),
        (W, "element-reordered", "Msg.label"),
        (W, "element-reordered", "Msg.note"),
    ]


def test_element_renamed_on_the_same_tag_breaks_json_only(tmp_path: Path) -> None:
    renamed = "<element name='ident' type='int'/>"
    old = write(tmp_path / "old.xsd")
    new = write(tmp_path / "new.xsd", Msg=msg(renamed, LABEL, NOTE))
    (change,) = diff_files(old, new).changes
    assert (change.compat, change.kind, change.path) == (W, "element-renamed", "Msg.id")
    assert change.encodings == (JSON,)
    assert "ident" in change.detail


def test_elements_swapped_break_ber_only(tmp_path: Path) -> None:
    old = write(tmp_path / "old.xsd")
    new = write(tmp_path / "new.xsd", Msg=msg(LABEL, ID, NOTE))
    found = diff_files(old, new).changes
    assert [(c.kind, c.path, c.encodings) for c in found] == [
        ("element-reordered", "Msg.label", (BER,)),  # listed in the new schema's order
        ("element-reordered", "Msg.id", (BER,)),
    ]


@pytest.mark.parametrize(
    ("new_type", "expected"),
    [
        ("long", W),  # wider range: old decoders reject large new values
        ("token", C),  # another string type: same encoding, same Python str
        ("tns:Point", W),  # a scalar became a sequence
        ("boolean", W),
    ],
)
def test_element_type_changed(tmp_path: Path, new_type: str, expected: Compat) -> None:
    changed = f"<element name='id' type='{new_type}'/>"
    # (string -> token is judged on `label`, the others on `id`)
    if new_type == "token":
        found = changes(
            tmp_path, Msg=msg(ID, "<element name='label' type='token' default='none'/>", NOTE)
        )
        assert found == [(expected, "element-type-changed", "Msg.label")]
    else:
        assert changes(tmp_path, Msg=msg(changed, LABEL, NOTE)) == [
            (expected, "element-type-changed", "Msg.id")
        ]


def test_type_renamed_with_the_same_shape_is_api_only(tmp_path: Path) -> None:
    coord = BASE_TYPES["Point"].replace("'Point'", "'Coord'")
    pick = BASE_TYPES["Pick"].replace("tns:Point", "tns:Coord")
    env = BASE_TYPES["Env"].replace("tns:Point", "tns:Coord")
    assert changes(tmp_path, Point="", Coord=coord, Pick=pick, Env=env) == [
        (A, "type-removed", "Point"),
        (A, "selection-type-changed", "Pick.point"),
        (A, "selection-type-changed", "Env.a"),
        (C, "type-added", "Coord"),
    ]


@pytest.mark.parametrize(
    ("note", "expected"),
    [
        ("<element name='note' type='string' minOccurs='0' maxOccurs='unbounded'/>", W),
        ("<element name='note' type='string'/>", A),  # now required: new decoders read ""
        ("<element name='note' type='string' default='x'/>", A),  # required but defaulted
    ],
)
def test_occurs_changed(tmp_path: Path, note: str, expected: Compat) -> None:
    found = changes(tmp_path, Msg=msg(ID, LABEL, note))
    assert (expected, "element-occurs-changed", "Msg.note") in found


def test_required_becomes_optional(tmp_path: Path) -> None:
    optional_id = "<element name='id' type='int' minOccurs='0'/>"
    assert changes(tmp_path, Msg=msg(optional_id, LABEL, NOTE)) == [
        (A, "element-occurs-changed", "Msg.id")  # old decoders read 0; the field becomes Optional
    ]
    # A choice-typed member becoming optional: old decoders have nothing to put in its place.
    pick = "<element name='pick' type='tns:Pick'/>"
    optional_pick = "<element name='pick' type='tns:Pick' minOccurs='0'/>"
    old = write(tmp_path / "o.xsd", Msg=msg(ID, LABEL, NOTE, pick))
    new = write(tmp_path / "n.xsd", Msg=msg(ID, LABEL, NOTE, optional_pick))
    assert [(c.compat, c.kind) for c in diff_files(old, new).changes] == [
        (W, "element-occurs-changed")
    ]
    optional_label = "<element name='label' type='string' default='none' minOccurs='0'/>"
    assert changes(tmp_path, Msg=msg(ID, optional_label, NOTE)) == [
        (A, "element-occurs-changed", "Msg.label")  # old decoders use the default
    ]


def test_default_changed(tmp_path: Path) -> None:
    other = "<element name='label' type='string' default='other'/>"
    assert changes(tmp_path, Msg=msg(ID, other, NOTE)) == [
        (A, "element-default-changed", "Msg.label")
    ]
    none = "<element name='label' type='string'/>"
    assert changes(tmp_path, Msg=msg(ID, none, NOTE)) == [
        (A, "element-default-changed", "Msg.label")  # an omitted label now reads as ""
    ]
    given = "<element name='id' type='int' default='5'/>"
    assert changes(tmp_path, Msg=msg(given, LABEL, NOTE)) == [
        (A, "element-default-changed", "Msg.id")  # an omitted id now reads as 5, not 0
    ]


def test_choice_selections(tmp_path: Path) -> None:
    point = "<element name='point' type='tns:Point'/>"
    color = "<element name='color' type='tns:Color'/>"
    extra = "<element name='name' type='tns:Name'/>"

    def pick(*elements: str) -> str:
        return f"<complexType name='Pick'><choice>{''.join(elements)}</choice></complexType>"

    assert changes(tmp_path, Pick=pick(point, color, extra)) == [
        (W, "selection-added", "Pick.name")  # old peers cannot decode it once it is sent
    ]
    assert changes(tmp_path, Pick=pick(point)) == [(W, "selection-removed", "Pick.color")]
    assert changes(tmp_path, Pick=pick(color, point)) == [
        (W, "selection-reordered", "Pick.color"),
        (W, "selection-reordered", "Pick.point"),
    ]
    renamed = "<element name='colour' type='tns:Color'/>"
    assert changes(tmp_path, Pick=pick(point, renamed)) == [(W, "selection-renamed", "Pick.color")]


def test_anonymous_choice_selection_added(tmp_path: Path) -> None:
    env = BASE_TYPES["Env"].replace("</choice>", "<element name='c' type='tns:Color'/></choice>")
    assert changes(tmp_path, Env=env) == [(W, "selection-added", "Env.c")]


def test_bdem_ids(tmp_path: Path) -> None:
    # Explicit element ids: a changed id moves the BER tag; a reorder that keeps ids is API-only.
    with_ids = msg(
        "<element name='id' type='int' bdem:id='1'/>",
        "<element name='label' type='string' default='none' bdem:id='2'/>",
    )
    old = write(tmp_path / "old.xsd", Msg=with_ids)
    new = write(tmp_path / "new.xsd", Msg=with_ids.replace("bdem:id='2'", "bdem:id='5'"))
    (change,) = diff_files(old, new).changes
    assert (change.kind, change.compat, change.encodings) == ("bdem-id-changed", W, (BER,))


def test_enum_values(tmp_path: Path) -> None:
    def color(*values: str) -> str:
        return (
            "<simpleType name='Color'><restriction base='string'>"
            + "".join(values)
            + "</restriction></simpleType>"
        )

    red = "<enumeration value='RED' bdem:id='0'/>"
    green = "<enumeration value='GREEN' bdem:id='1'/>"
    assert changes(
        tmp_path, Color=color(red, green, "<enumeration value='BLUE' bdem:id='2'/>")
    ) == [(W, "enum-value-added", "Color.BLUE")]
    assert changes(tmp_path, Color=color(red)) == [(W, "enum-value-removed", "Color.GREEN")]
    old = write(tmp_path / "old.xsd")
    new = write(tmp_path / "new.xsd", Color=color(red, "<enumeration value='GREEN' bdem:id='7'/>"))
    (renumbered,) = diff_files(old, new).changes
    assert (renumbered.kind, renumbered.compat, renumbered.encodings) == (
        "enum-value-renumbered",
        W,
        (BER,),
    )
    new = write(tmp_path / "new.xsd", Color=color(red, "<enumeration value='LIME' bdem:id='1'/>"))
    (renamed,) = diff_files(old, new).changes
    assert (renamed.kind, renamed.compat, renamed.encodings) == ("enum-value-renamed", W, (JSON,))


def test_types_added_removed_and_kind_changed(tmp_path: Path) -> None:
    extra = "<complexType name='Extra'><sequence/></complexType>"
    assert changes(tmp_path, Extra=extra) == [(C, "type-added", "Extra")]
    found = diff_files(write(tmp_path / "a.xsd", Extra=extra), write(tmp_path / "b.xsd")).changes
    assert [(c.compat, c.kind, c.path) for c in found] == [(A, "type-removed", "Extra")]
    assert "no old type referred to it" in found[0].detail
    as_choice = (
        BASE_TYPES["Point"].replace("<sequence>", "<choice>").replace("</sequence>", "</choice>")
    )
    assert changes(tmp_path, Point=as_choice) == [(W, "type-kind-changed", "Point")]


def test_restriction_and_package(tmp_path: Path) -> None:
    longer = BASE_TYPES["Name"].replace("value='8'", "value='16'")
    assert changes(tmp_path, Name=longer) == [(C, "restriction-changed", "Name")]
    as_int = "<simpleType name='Name'><restriction base='int'/></simpleType>"
    assert changes(tmp_path, Name=as_int) == [
        (W, "restriction-changed", "Name"),  # string -> int base
        (C, "restriction-changed", "Name"),  # the facets went away
    ]
    assert changes(tmp_path, package="renamed") == [(A, "package-changed", "<schema>")]


def test_documentation(tmp_path: Path) -> None:
    assert changes(tmp_path, Msg=msg(ID, LABEL, NOTE, doc="Another text.")) == [
        (C, "doc-changed", "Msg")
    ]
    # Re-wrapping is not a change.
    assert changes(tmp_path, Msg=msg(ID, LABEL, NOTE, doc="  A\n      message.  ")) == []


# -- command line --------------------------------------------------------------------------------


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(["schema-diff", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_cli_exit_status_by_fail_on(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = write(tmp_path / "base.xsd")
    compatible = write(tmp_path / "c.xsd", Msg=msg(ID, LABEL, NOTE, doc="Other."))
    api = write(tmp_path / "a.xsd", Msg=msg(ID, LABEL))
    wire = write(
        tmp_path / "w.xsd", Msg=msg(ID, LABEL, NOTE, "<element name='z' type='tns:Pick'/>")
    )
    table = {
        compatible: {"wire": 0, "api": 0, "none": 0},
        api: {"wire": 0, "api": 1, "none": 0},
        wire: {"wire": 1, "api": 1, "none": 0},
    }
    for new, statuses in table.items():
        for fail_on, expected in statuses.items():
            assert run(capsys, str(base), str(new), "--fail-on", fail_on)[0] == expected
    status, out, _ = run(capsys, str(base), str(wire))  # default --fail-on wire
    assert status == 1
    assert "wire-breaking  Msg.z: element-added" in out
    assert "why: old peers never send it and nothing can stand in for it" in out
    assert "[breaks BER, JSON]" in out
    assert out.rstrip().endswith("1 change (1 wire-breaking)")


def test_cli_json_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old, new = HISTORY / "2025-10-23_eef016a51.xsd", HISTORY / "2025-11-24_6e29feea7.xsd"
    status, out, _ = run(capsys, str(old), str(new), "--format", "json")
    assert status == 0
    data = json.loads(out)
    assert data["worst"] == "compatible"
    assert data["counts"] == {"compatible": 2, "api-breaking": 0, "wire-breaking": 0}
    assert data["changes"][1] == {
        "kind": "element-added",
        "path": "ClientIdentity.userAgent",
        "detail": "added (id 12; xs:string, default '')",
        "class": "compatible",
        "encodings": [],
        "reason": data["changes"][1]["reason"],
        "file": str(new),
        "line": 1680,  # <element name='userAgent' …> in ClientIdentity
    }
    assert set(data) == {"old", "new", "worst", "counts", "changes"}


def test_cli_github_annotations_and_text_carry_file_and_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    old, new = HISTORY / "2025-10-23_eef016a51.xsd", HISTORY / "2025-11-24_6e29feea7.xsd"
    status, out, _ = run(capsys, str(old), str(new), "--format", "github")
    assert status == 0
    assert f"::warning file={new},line=1680,title=compatible: ClientIdentity.userAgent::" in out
    status, out, _ = run(capsys, str(old), str(new))
    assert f"at: {new}:1680" in out


def test_cli_warns_when_the_schemas_share_almost_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = HISTORY / "2025-11-24_6e29feea7.xsd"
    other = tmp_path / "other.xsd"
    other.write_text(
        "<?xml version='1.0' encoding='UTF-8'?>\n"
        "<schema xmlns='http://www.w3.org/2001/XMLSchema' xmlns:tns='urn:x' targetNamespace='urn:x'"
        " elementFormDefault='qualified'>\n"
        "  <complexType name='Unrelated'><sequence>"
        "<element name='a' type='int'/></sequence></complexType>\n</schema>\n"
    )
    _, _, err = run(capsys, str(old), str(other), "--fail-on", "none")
    assert "share almost nothing" in err


def test_cli_closed_pipe_is_not_a_traceback() -> None:
    import subprocess
    import sys

    # Two unrelated schemas: a JSON report larger than a pipe's 64 KiB buffer.
    old, new = (
        TESTS_DIR.parent / "schema" / "mqbcfg.xsd",
        TESTS_DIR.parent / "schema" / "mqbcmd.xsd",
    )
    producer = subprocess.Popen(
        [sys.executable, "-m", "pybmq.cli", "schema-diff", str(old), str(new), "--format", "json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert producer.stdout is not None
    producer.stdout.read(10)
    producer.stdout.close()  # as `| head -c 10` does
    _, err = producer.communicate(timeout=60)
    assert b"Traceback" not in err and b"BrokenPipe" not in err
    assert b"share almost nothing" in err


def test_cli_unreadable_input_is_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = write(tmp_path / "good.xsd")
    status, _, err = run(capsys, str(tmp_path / "missing.xsd"), str(good))
    assert status == 2 and "missing.xsd" in err
    broken = tmp_path / "broken.xsd"
    broken.write_text("<schema xmlns='http://www.w3.org/2001/XMLSchema'><complexType")
    status, _, err = run(capsys, str(good), str(broken))
    assert status == 2 and "broken.xsd" in err
    status, _, err = run(capsys, str(good), str(LAYOUT))
    assert status == 2 and "not the same kind" in err
    other = tmp_path / "notes.txt"
    other.write_text("hello")
    status, _, err = run(capsys, str(other), str(other))
    assert status == 2 and ".xsd" in err
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("constants: [1, 2]\n")
    status, _, err = run(capsys, str(LAYOUT), str(bad_yaml))
    assert status == 2 and "bad.yaml" in err


# -- layout spec ---------------------------------------------------------------------------------


def layout_variant(tmp_path: Path, edit) -> Path:  # type: ignore[no-untyped-def]
    spec = yaml.safe_load(LAYOUT.read_text(encoding="utf-8"))
    edit(spec)
    out = tmp_path / "new.yaml"
    out.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return out


def layout_changes(tmp_path: Path, edit) -> list[tuple[Compat, str, str]]:  # type: ignore[no-untyped-def]
    new = layout_variant(tmp_path, edit)
    return [(c.compat, c.kind, c.path) for c in diff_layout_files(LAYOUT, new).changes]


def test_layout_identical() -> None:
    assert diff_layout_files(LAYOUT, LAYOUT).changes == []


def test_layout_enum_and_flag_changes(tmp_path: Path) -> None:
    def add_event_type(spec):  # type: ignore[no-untyped-def]
        spec["enums"]["EventType"]["values"]["NEW_KIND"] = 42

    assert layout_changes(tmp_path, add_event_type) == [
        (W, "enum-value-added", "EventType.NEW_KIND")
    ]

    def rename_flag(spec):  # type: ignore[no-untyped-def]
        values = spec["enums"]["PutHeaderFlags"]["values"]
        values["SPARE3"] = values.pop("UNUSED3")

    assert layout_changes(tmp_path, rename_flag) == [(A, "flag-renamed", "PutHeaderFlags.UNUSED3")]

    def move_flag(spec):  # type: ignore[no-untyped-def]
        spec["enums"]["PushHeaderFlags"]["values"]["OUT_OF_ORDER"] = 8
        del spec["enums"]["PushHeaderFlags"]["values"]["UNUSED4"]

    found = layout_changes(tmp_path, move_flag)
    assert (W, "flag-value-changed", "PushHeaderFlags.OUT_OF_ORDER") in found

    def renumber(spec):  # type: ignore[no-untyped-def]
        spec["enums"]["EncodingType"]["values"]["JSON"] = 2

    assert layout_changes(tmp_path, renumber) == [(W, "enum-value-renumbered", "EncodingType.JSON")]


def test_layout_field_changes(tmp_path: Path) -> None:
    def widen_length(spec):  # type: ignore[no-untyped-def]
        bits = spec["structs"]["EventHeader"]["units"][0]["bits"]
        bits[0]["width"] = 2  # fragment_bit
        bits[1]["width"] = 30  # length

    found = layout_changes(tmp_path, widen_length)
    assert (W, "field-width-changed", "EventHeader.fragment_bit") in found
    assert (W, "field-width-changed", "EventHeader.length") in found
    assert (W, "field-moved", "EventHeader.length") in found

    def rename(spec):  # type: ignore[no-untyped-def]
        spec["structs"]["EventHeader"]["units"][2]["name"] = "header_size_words"

    assert layout_changes(tmp_path, rename) == [(A, "field-renamed", "EventHeader.header_words")]

    def use_reserved(spec):  # type: ignore[no-untyped-def]
        spec["structs"]["EventHeader"]["units"][4]["name"] = "new_byte"

    assert layout_changes(tmp_path, use_reserved) == [(C, "field-added", "EventHeader.new_byte")]

    def grow(spec):  # type: ignore[no-untyped-def]
        spec["structs"]["EventHeader"]["units"].append({"name": "tail", "unit": "u32"})

    found = layout_changes(tmp_path, grow)
    assert found == [
        (W, "field-added", "EventHeader.tail"),
        (W, "struct-size-changed", "EventHeader"),
    ]

    def constant(spec):  # type: ignore[no-untyped-def]
        spec["constants"]["PROTOCOL_VERSION"] = 2

    assert layout_changes(tmp_path, constant) == [(W, "constant-changed", "PROTOCOL_VERSION")]


def test_cli_on_layout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def rename(spec):  # type: ignore[no-untyped-def]
        spec["structs"]["EventHeader"]["units"][2]["name"] = "header_size_words"

    new = layout_variant(tmp_path, rename)
    assert run(capsys, str(LAYOUT), str(new))[0] == 0
    status, out, _ = run(capsys, str(LAYOUT), str(new), "--fail-on", "api")
    assert status == 1 and "api-breaking" in out


def test_layout_padding_and_event_descriptions(tmp_path: Path) -> None:
    def padding(spec):  # type: ignore[no-untyped-def]
        spec["padding"]["word"] = 8
        spec["padding"]["max"] = 8

    found = layout_changes(tmp_path, padding)
    assert found == [(W, "padding-changed", "<padding>")]

    def describe(spec):  # type: ignore[no-untyped-def]
        spec["events"]["ACK"] = "AckHeader, then AckMessage entries (reworded)"

    assert layout_changes(tmp_path, describe) == [(C, "doc-changed", "<events>.ACK")]


def test_order_change_with_explicit_ids_is_compatible(tmp_path: Path) -> None:
    first = "<element name='id' type='int' bdem:id='1'/>"
    second = "<element name='label' type='string' default='none' bdem:id='2'/>"
    old = write(tmp_path / "old.xsd", Msg=msg(first, second))
    new = write(tmp_path / "new.xsd", Msg=msg(second, first))
    assert [(c.compat, c.kind, c.path) for c in diff_files(old, new).changes] == [
        (C, "element-reordered", "Msg")
    ]


def test_restricted_simple_type_travels_as_its_base(tmp_path: Path) -> None:
    # Name is a restriction of string: string <-> Name changes neither bytes nor Python type.
    as_name = "<element name='label' type='tns:Name' default='none'/>"
    assert changes(tmp_path, Msg=msg(ID, as_name, NOTE)) == [
        (C, "element-type-changed", "Msg.label")
    ]
    as_color = "<element name='label' type='tns:Color' default='RED'/>"
    found = changes(tmp_path, Msg=msg(ID, as_color, NOTE))
    assert (W, "element-type-changed", "Msg.label") in found  # an enumeration is another encoding


def test_cli_sarif_and_junit_reports(capsys: pytest.CaptureFixture[str]) -> None:
    import xml.etree.ElementTree as ET

    old, new = HISTORY / "2025-10-23_eef016a51.xsd", HISTORY / "2025-11-24_6e29feea7.xsd"
    status, out, _ = run(capsys, str(old), str(new), "--format", "sarif")
    assert status == 0
    (sarif_run,) = json.loads(out)["runs"]
    located = {
        r["message"]["text"].split(":")[0]: r["locations"][0]["physicalLocation"]
        for r in sarif_run["results"]
    }
    assert located["ClientIdentity.userAgent"]["region"]["startLine"] == 1680
    assert located["ClientIdentity.userAgent"]["artifactLocation"]["uri"] == new.as_posix()
    status, out, _ = run(capsys, str(old), str(new), "--format", "junit", "--fail-on", "none")
    suite = ET.fromstring(out)
    assert suite.get("tests") == "2" and suite.get("failures") == "0"
    case = suite.findall("testcase")[1]
    assert (case.get("name"), case.get("line")) == ("compatible: ClientIdentity.userAgent", "1680")
