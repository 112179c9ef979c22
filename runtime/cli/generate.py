"""``pybmq generate --xsd FILE --out DIR``: bindings for your own BDE-style schema.

Writes ``NAME.py`` (dataclasses and enums), ``NAME_json.py`` and ``NAME_ber.py`` (codecs with
``encode_json``/``decode_json`` and ``encode_ber``/``decode_ber``) into DIR, with the same
generator that makes ``pybmq.generated``. NAME defaults to the schema's ``bdem:package``, else the
file name. The codecs import the types as ``NAME`` (DIR on ``sys.path``) or, with ``--package P``,
as ``P.NAME`` (DIR is the folder of package P). Nothing is written outside DIR; an existing file
is replaced only with --force. Exit 2 when the schema or DIR cannot be used.

example: pybmq generate --xsd orders.xsd --out gen/ --package gen
"""

from __future__ import annotations

import argparse
import keyword
from pathlib import Path

from pybmq.cli.common import Subcommands, describe
from pybmq.cli.validate import as_path, output_dir, text
from pybmq.codegen import require_extra
from pybmq.errors import SchemaError, UsageError

__all__ = ["add_parser", "handler", "module_name"]


def add_parser(subparsers: Subcommands) -> None:
    parser = subparsers.add_parser(
        "generate",
        help="generate Python bindings (types, JSON and BER codecs) for a BDE-style XSD",
        description=describe(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--xsd", type=Path, required=True, help="the schema to generate from")
    parser.add_argument(
        "--out", type=as_path(output_dir), required=True, help="folder to write the modules to"
    )
    parser.add_argument(
        "--module", type=text, help="module name (default: bdem:package, else file name)"
    )
    parser.add_argument(
        "--package", default="", help="dotted package the modules will live in (default: none)"
    )
    parser.add_argument(
        "--force", action="store_true", help="replace modules already in --out (default: refuse)"
    )
    parser.set_defaults(func=handler)


def _check_out(out: Path, names: list[str], force: bool) -> None:
    """Refuse an --out that is a file, or that holds these modules already (unless ``force``)."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} exists and is not a folder")
    existing = [name for name in names if (out / name).exists()]
    if existing and not force:
        raise UsageError(f"{', '.join(existing)} already in {out}: pass --force to replace")


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
        what = "a directory, not a file" if xsd.is_dir() else "no such file"
        raise SchemaError(f"cannot read --xsd {xsd}: {what}")
    if args.package and not all(p.isidentifier() for p in args.package.split(".")):
        raise UsageError(f"--package {args.package!r} is not a dotted Python name")
    name = module_name(xsd, args.module)
    artifacts = generate_bindings(xsd, name, package=args.package)
    out: Path = args.out
    _check_out(out, [artifact.relpath for artifact in artifacts], args.force)
    try:
        out.mkdir(parents=True, exist_ok=True)
        for artifact in artifacts:
            (out / artifact.relpath).write_text(artifact.text, encoding="utf-8")
            print(out / artifact.relpath)
    except OSError as exc:
        raise UsageError(f"cannot write to --out {out}: {exc.strerror or exc}") from None
    return 0
