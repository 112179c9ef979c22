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


def test_a_run_makes_one_environment_and_compiles_each_template_once() -> None:
    """Every generator renders through the run's one jinja2 environment: a template used for
    several schemas (types, JSON, BER for five XSDs) is compiled once. Counted in a fresh
    process, with the formatter left out (only the rendering is counted)."""
    import json
    import subprocess
    import sys

    code = (
        "import json, jinja2\n"
        "made = []; compiled = []\n"
        "init, comp = jinja2.Environment.__init__, jinja2.Environment._compile\n"
        "def counting_init(self, *a, **k):\n"
        "    made.append(1); init(self, *a, **k)\n"
        "def counting_compile(self, source, filename):\n"
        "    compiled.append(filename); return comp(self, source, filename)\n"
        "jinja2.Environment.__init__ = counting_init\n"
        "jinja2.Environment._compile = counting_compile\n"
        "from pybmq.codegen import bindings, driver, layout\n"
        "bindings.format_python = layout.format_python = lambda text, origin='': text\n"
        "artifacts = driver.render_all()\n"
        "print(json.dumps([len(made), compiled, len(artifacts)]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    environments, compiled, artifacts = json.loads(out.stdout)
    assert environments == 1
    assert len(compiled) == len(set(compiled)), compiled
    assert artifacts > len(compiled)
