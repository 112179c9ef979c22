"""Where the tests' data lives, whatever folder a test module sits in."""

from __future__ import annotations

from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parent.parent
REPO_ROOT = TESTS_DIR.parent
VECTORS = TESTS_DIR / "vectors"
SCHEMA_DIR = REPO_ROOT / "schema"
