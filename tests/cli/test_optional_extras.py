"""Importing a module whose optional dependency is missing names the extra to install (in a
subprocess where the dependency is made unimportable)."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize(
    "module, blocked, extra",
    [
        ("pybmq.spark", "pyspark", "spark"),
        ("pybmq.client.otel", "opentelemetry", "otel"),
        ("pybmq.codegen.render", "jinja2", "codegen"),
        ("pybmq.codegen.layout", "yaml", "codegen"),
        ("pybmq.codegen.schemacheck", "yaml", "codegen"),
        ("pybmq.codegen.xsd_loader", "xsdata", "codegen"),
    ],
)
def test_a_missing_optional_dependency_names_its_extra(
    module: str, blocked: str, extra: str
) -> None:
    code = f"import sys; sys.modules[{blocked!r}] = None; import {module}"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert f"pip install 'pybmq[{extra}]'" in last, result.stderr
