"""Interop tests: the official ``blazingmq`` SDK (C++ core) as a real peer of ``pybmq sim``.

Every test here is marked ``interop``; the official SDK runs in subprocesses (see official.py).
"""

from __future__ import annotations

import pytest

pytest.importorskip(
    "blazingmq", reason="the official SDK (pip install blazingmq) is the oracle here"
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/interop/" in item.nodeid.replace("\\", "/"):
            item.add_marker(pytest.mark.interop)
