"""schema-diff reports for CI systems: SARIF 2.1.0 (code scanning) and JUnit XML (test reports).
Each change is one result / test case at its file and line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, TextIO
from xml.sax.saxutils import quoteattr

from pybmq._version import __version__
from pybmq.cli.schema_locate import locate

if TYPE_CHECKING:
    from pybmq.codegen.schemadiff import Compat, SchemaDiff

__all__ = ["write_junit", "write_sarif"]

_SARIF_LEVELS = {"wire-breaking": "error", "api-breaking": "warning", "compatible": "note"}


def write_sarif(result: SchemaDiff, old: Path, new: Path, out: TextIO) -> None:
    results = []
    for change in result.changes:
        path, line = locate(change, old, new)
        results.append(
            {
                "ruleId": change.kind,
                "level": _SARIF_LEVELS.get(change.compat.label, "note"),
                "message": {"text": f"{change.path}: {change.detail}. {change.reason}"},
                "locations": [
                    {
                        "physicalLocation": {
                            "artifactLocation": {"uri": path.as_posix()},
                            "region": {"startLine": line},
                        }
                    }
                ],
            }
        )
    document = {
        "version": "2.1.0",
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "runs": [
            {
                "tool": {"driver": {"name": "pybmq schema-diff", "version": __version__}},
                "results": results,
            }
        ],
    }
    json.dump(document, out, indent=2)
    out.write("\n")


def write_junit(
    result: SchemaDiff, old: Path, new: Path, threshold: Compat | None, out: TextIO
) -> None:
    """One test case per change; a change at or above ``threshold`` (--fail-on) is a failure."""
    cases = []
    failures = 0
    for change in result.changes:
        path, line = locate(change, old, new)
        name = quoteattr(f"{change.compat.label}: {change.path}")
        where = quoteattr(str(path))
        failed = threshold is not None and change.compat >= threshold
        failures += failed
        body = (
            f"<failure message={quoteattr(change.reason)} type={quoteattr(change.kind)}>"
            f"{change.detail} at {path}:{line}</failure>"
            if failed
            else ""
        )
        cases.append(
            f'  <testcase classname="schema-diff" name={name} file={where} line="{line}">{body}</testcase>'
        )
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(f'<testsuite name="pybmq schema-diff" tests="{len(cases)}" failures="{failures}">\n')
    out.write("\n".join(cases) + ("\n" if cases else ""))
    out.write("</testsuite>\n")
