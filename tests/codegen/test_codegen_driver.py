"""The generate/check plumbing: check-generated must catch stale, hand-edited and orphan files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pybmq.codegen import driver


def test_write_then_check_is_fresh(tmp_path: Path) -> None:
    artifacts = {"a.py": "A = 1\n", "sub/b.py": "B = 2\n"}
    assert sorted(driver.write(artifacts, tmp_path)) == ["a.py", "sub/b.py"]
    assert driver.diff(artifacts, tmp_path) == ""
    assert driver.write(artifacts, tmp_path) == []


def test_hand_edit_is_reported_with_a_diff(tmp_path: Path) -> None:
    artifacts = {"a.py": "A = 1\n"}
    driver.write(artifacts, tmp_path)
    (tmp_path / "a.py").write_text("A = 2\n")
    text = driver.diff(artifacts, tmp_path)
    assert "-A = 2" in text and "+A = 1" in text


def test_orphan_file_is_reported_and_removed(tmp_path: Path) -> None:
    driver.write({"a.py": "A = 1\n"}, tmp_path)
    (tmp_path / "old.py").write_text("X = 0\n")
    assert "old.py" in driver.diff({"a.py": "A = 1\n"}, tmp_path)
    assert "old.py" in driver.write({"a.py": "A = 1\n"}, tmp_path)
    assert not (tmp_path / "old.py").exists()


@pytest.mark.skipif(
    os.environ.get("PYBMQ_GENERATED_CHECKED") == "1",
    reason="make test ran check-generated just before pytest",
)
def test_repository_generated_dir_is_fresh() -> None:
    assert driver.diff(driver.render_all(), driver.GENERATED_DIR) == ""
