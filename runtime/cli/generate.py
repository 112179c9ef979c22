"""``pybmq generate --xsd FILE --out DIR``: bindings for your own BDE-style schema.

Writes ``NAME.py`` (dataclasses and enums), ``NAME_json.py`` and ``NAME_ber.py`` (codecs with
``encode_json``/``decode_json`` and ``encode_ber``/``decode_ber``) into DIR, with the same
generator that makes ``pybmq.generated``. NAME defaults to the schema's ``bdem:package``, else the
file name. The codecs import the types as ``NAME`` (DIR on ``sys.path``) or, with ``--package P``,
as ``P.NAME`` (DIR is the folder of package P). Exit 2 when the schema cannot be used.
"""

from __future__ import annotations

import argparse
import keyword
from pathlib import Path
from typing import TYPE_CHECKING

from pybmq.codegen import require_extra
from pybmq.errors import SchemaError, UsageError

if TYPE_CHECKING:
    pass


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "generate",
        help="generate Python bindings (types, JSON and BER codecs) for a BDE-style XSD",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--xsd", type=Path, required=True, help="the schema to generate from")
    parser.add_argument("--out", type=Path, required=True, help="folder to write the modules to")
    parser.add_argument("--module", help="module name (default: bdem:package, else file name)")
    parser.add_argument(
        "--package", default="", help="dotted package the modules will live in (default: none)"
    )
    parser.set_defaults(func=handler)


def module_name(xsd: Path, given: str | None) -> str:
    from pybmq.codegen.xsd_loader import load_schema

    name = given or load_schema(xsd).package or xsd.stem
    if not name.isidentifier() or keyword.iskeyword(name):
        raise UsageError(f"{name!r} is not a usable Python module name: pass --module NAME")
    return name


def handler(args: argparse.Namespace) -> int:
    require_extra("pybmq generate")
    from pybmq.codegen.bindings import generate_bindings

    xsd: Path = args.xsd
    if not xsd.is_file():
        raise SchemaError(f"cannot read {xsd}: no such file")
    if args.package and not all(p.isidentifier() for p in args.package.split(".")):
        raise UsageError(f"--package {args.package!r} is not a dotted Python name")
    name = module_name(xsd, args.module)
    artifacts = generate_bindings(xsd, name, package=args.package)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    for artifact in artifacts:
        (out / artifact.relpath).write_text(artifact.text, encoding="utf-8")
        print(out / artifact.relpath)
    return 0
