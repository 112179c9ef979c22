"""Shared fixtures: where the test vectors live."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
JAVA_VECTORS = TESTS_DIR / "vectors" / "java-sdk"


@pytest.fixture(scope="session")
def java_vectors() -> Path:
    """Binary vectors from the Java SDK's own tests (see tests/vectors/java-sdk/README.md)."""
    return JAVA_VECTORS


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The shared local[2] SparkSession with the ``blazingmq`` data source registered."""
    from tests.helpers.spark import local_spark

    yield from local_spark(tmp_path_factory.mktemp("spark"))
