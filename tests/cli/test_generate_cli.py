"""``pybmq generate`` on a user's own BDE-style schema: the modules import and their codecs work."""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pybmq.cli import main

SCHEMA = """<?xml version='1.0' encoding='UTF-8'?>
<schema xmlns='http://www.w3.org/2001/XMLSchema'
        xmlns:bdem='http://bloomberg.com/schemas/bdem'
        xmlns:tns='urn:example:orders' targetNamespace='urn:example:orders'
        bdem:package='{package}' elementFormDefault='qualified'>
  <simpleType name='Side'>
    <annotation><documentation>Which way an order goes.</documentation></annotation>
    <restriction base='string'>
      <enumeration value='BUY' bdem:id='1'/>
      <enumeration value='SELL' bdem:id='2'/>
    </restriction>
  </simpleType>
  <complexType name='Order'>
    <annotation><documentation>One order.</documentation></annotation>
    <sequence>
      <element name='orderId'  type='unsignedLong'/>
      <element name='side'     type='tns:Side' default='BUY'/>
      <element name='price'    type='double'/>
      <element name='placedAt' type='dateTime' minOccurs='0'/>
      <element name='tags'     type='string' minOccurs='0' maxOccurs='unbounded'/>
      <element name='venue'    type='string' default='XLON'/>
    </sequence>
  </complexType>
  <complexType name='Envelope'>
    <sequence>
      <element name='requestId' type='int' minOccurs='0'/>
      <choice>
        <element name='order'  type='tns:Order'/>
        <element name='cancel' type='unsignedLong'/>
      </choice>
    </sequence>
  </complexType>
</schema>
"""


@pytest.fixture
def importable(tmp_path: Path) -> Iterator[Path]:
    before = set(sys.modules)
    yield tmp_path
    for entry in [p for p in sys.path if p.startswith(str(tmp_path))]:
        sys.path.remove(entry)
    for name in set(sys.modules) - before:
        if name.startswith(("orders", "acme")):
            del sys.modules[name]


def test_generate_and_use_top_level_modules(
    importable: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    xsd = importable / "orders.xsd"
    xsd.write_text(SCHEMA.format(package="orders_v1"))
    out = importable / "out"
    assert main(["generate", "--xsd", str(xsd), "--out", str(out)]) == 0
    written = capsys.readouterr().out.split()
    assert sorted(Path(p).name for p in written) == [
        "orders_v1.py",
        "orders_v1_ber.py",
        "orders_v1_json.py",
    ]
    sys.path.insert(0, str(out))
    types = importlib.import_module("orders_v1")
    codec_json = importlib.import_module("orders_v1_json")
    codec_ber = importlib.import_module("orders_v1_ber")
    assert types.Order.__doc__.strip() == "One order."
    order = types.Order(order_id=2**63, price=101.25, placed_at="2026-11-22T07:00:00.000+00:00")
    assert order.side is types.Side.BUY and order.venue == "XLON"  # schema defaults
    message = types.Envelope(request_id=7, order=order)
    as_json = codec_json.encode_json(message)
    assert json.loads(as_json) == {
        "requestId": 7,
        "order": {
            "orderId": 2**63,
            "side": "BUY",
            "price": 101.25,
            "placedAt": "2026-11-22T07:00:00.000+00:00",
            "venue": "XLON",
        },
    }
    assert codec_json.decode_json(types.Envelope, as_json) == message
    as_ber = codec_ber.encode_ber(message)
    assert codec_ber.decode_ber(types.Envelope, as_ber) == message
    cancel = types.Envelope(cancel=5)
    assert codec_ber.decode_ber(types.Envelope, codec_ber.encode_ber(cancel)).cancel == 5


def test_generate_into_a_package_with_an_explicit_module_name(importable: Path) -> None:
    xsd = importable / "orders.xsd"
    xsd.write_text(SCHEMA.format(package="ignored"))
    package_dir = importable / "root" / "acme"
    package_dir.mkdir(parents=True)
    (package_dir / "__init__.py").write_text("")
    args = ["--xsd", str(xsd), "--out", str(package_dir), "--module", "orders", "--package", "acme"]
    status = main(["generate", *args])
    assert status == 0
    sys.path.insert(0, str(importable / "root"))
    types = importlib.import_module("acme.orders")
    codec = importlib.import_module("acme.orders_json")
    value = types.Envelope(cancel=9)
    assert codec.decode_json(types.Envelope, codec.encode_json(value)) == value


def test_generate_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["generate", "--xsd", str(tmp_path / "none.xsd"), "--out", str(out)]) == 2
    assert "none.xsd" in capsys.readouterr().err
    xsd = tmp_path / "orders.xsd"
    xsd.write_text(SCHEMA.format(package="orders"))
    assert main(["generate", "--xsd", str(xsd), "--out", str(out), "--module", "not-a-name"]) == 2
    assert "module name" in capsys.readouterr().err
    bad = tmp_path / "bad.xsd"
    bad.write_text(SCHEMA.format(package="p").replace("<sequence>", "<all>", 1))
    assert main(["generate", "--xsd", str(bad), "--out", str(out)]) == 2
    assert "bad.xsd" in capsys.readouterr().err
    assert not out.exists() or not any(out.iterdir())


def test_element_names_that_match_decoder_variables(importable: Path) -> None:
    # `length`, `number`, `path`... are also names the generated decoders use internally.
    xsd = importable / "orders.xsd"
    names = SCHEMA.format(package="orders_v2").replace("name='cancel'", "name='length'")
    xsd.write_text(names.replace("name='venue'", "name='number'"))
    out = importable / "out"
    assert main(["generate", "--xsd", str(xsd), "--out", str(out)]) == 0
    sys.path.insert(0, str(out))
    types = importlib.import_module("orders_v2")
    codec_ber = importlib.import_module("orders_v2_ber")
    codec_json = importlib.import_module("orders_v2_json")
    value = types.Envelope(order=types.Order(order_id=1, price=0.5, number="XPAR"))
    for codec, enc, dec in (
        (codec_ber, "encode_ber", "decode_ber"),
        (codec_json, "encode_json", "decode_json"),
    ):
        back = getattr(codec, dec)(types.Envelope, getattr(codec, enc)(value))
        assert back == value and back.order.number == "XPAR"
    value = types.Envelope(length=3)
    assert codec_ber.decode_ber(types.Envelope, codec_ber.encode_ber(value)).length == 3


def test_codegen_commands_name_the_extra_when_it_is_missing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without the codegen extra, each codegen subcommand says which extra to install."""
    import importlib.util

    real_find_spec = importlib.util.find_spec

    def without_black(name: str, *args: object) -> object:
        return None if name == "black" else real_find_spec(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(importlib.util, "find_spec", without_black)
    for command in (
        ["generate", "--xsd", "x.xsd", "--out", "out"],
        ["schema-diff", "a.xsd", "b.xsd"],
        ["schema-check"],
    ):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert "needs the codegen extra (black not installed)" in err
        assert "pip install 'pybmq[codegen]'" in err


def test_generate_refuses_to_overwrite_and_bad_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    xsd = tmp_path / "orders.xsd"
    xsd.write_text(SCHEMA.format(package="orders"))
    out = tmp_path / "gen"
    before = set(tmp_path.rglob("*"))
    assert main(["generate", "--xsd", str(xsd), "--out", str(out)]) == 0
    written = set(tmp_path.rglob("*")) - before
    assert written and all(p == out or out in p.parents for p in written)  # only under --out
    capsys.readouterr()
    assert main(["generate", "--xsd", str(xsd), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "already in" in err and "--force" in err
    assert main(["generate", "--xsd", str(xsd), "--out", str(out), "--force"]) == 0
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    capsys.readouterr()
    assert main(["generate", "--xsd", str(xsd), "--out", str(a_file)]) == 2
    assert "is not a folder" in capsys.readouterr().err
    assert main(["generate", "--xsd", str(xsd), "--out", str(a_file / "sub")]) == 2
    assert "Traceback" not in capsys.readouterr().err
