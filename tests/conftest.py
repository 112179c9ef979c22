"""Shared fixtures: where the test vectors live."""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
JAVA_VECTORS = TESTS_DIR / "vectors" / "java-sdk"


@pytest.fixture(scope="session")
def java_vectors() -> Path:
    """Binary vectors from the Java SDK's own tests (see tests/vectors/java-sdk/README.md)."""
    return JAVA_VECTORS
