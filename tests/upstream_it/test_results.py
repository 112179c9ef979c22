"""The upstream suite runner's results: JUnit XML read per test and topology, saved, two runs set
side by side, and a docs page's block replaced (``upstream_it.results``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from upstream_it import results
from upstream_it.__main__ import main

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="test_breathing" name="test_a[single_node-eventual_consistency]" time="3.1"/>
<testcase classname="test_breathing" name="test_b[single_node]" time="1.0">
  <failure message="AssertionError: no PUSH">traceback</failure></testcase>
<testcase classname="test_queue_close" name="test_c[multi_node-strong_consistency]" time="9">
  <skipped message="flakey"/></testcase>
<testcase classname="test_queue_close.TestClose" name="test_d[virtual_cluster_fsm]" time="2">
  <error message="">teardown: cluster did not shut down cleanly
more</error></testcase>
</testsuite></testsuites>
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_junit_is_read_per_test_and_topology(tmp_path: Path) -> None:
    found = results.read_junit(write(tmp_path, "run.xml", JUNIT))
    assert [(r.test, r.topology, r.outcome) for r in found] == [
        ("test_breathing.py::test_a[single_node-eventual_consistency]", "single_node", "passed"),
        ("test_breathing.py::test_b[single_node]", "single_node", "failed"),
        ("test_queue_close.py::test_c[multi_node-strong_consistency]", "multi_node", "skipped"),
        (
            "test_queue_close.py::TestClose::test_d[virtual_cluster_fsm]",
            "virtual_cluster_fsm",
            "failed",
        ),
    ]
    assert found[1].reason == "AssertionError: no PUSH"
    assert found[3].reason == "teardown: cluster did not shut down cleanly"
    table = results.counts(found)
    assert (table["single_node"]["passed"], table["single_node"]["failed"]) == (1, 1)
    assert (table["all"]["passed"], table["all"]["failed"], table["all"]["skipped"]) == (1, 2, 1)


def test_a_failed_test_whose_teardown_errs_too_counts_once(tmp_path: Path) -> None:
    # pytest writes a second test case for the teardown's error.
    junit = """<testsuites><testsuite name="pytest">
<testcase classname="test_client_timeout" name="test_r[multi_node-eventual_consistency]" time="30">
  <failure message="ProcessExitError: east2 exited">traceback</failure></testcase>
<testcase classname="test_client_timeout" name="test_r[multi_node-eventual_consistency]" time="1">
  <error message="failed on teardown with RuntimeError">teardown</error></testcase>
<testcase classname="test_client_timeout" name="test_s[multi_node]" time="2"/>
<testcase classname="test_client_timeout" name="test_s[multi_node]" time="1">
  <error message="failed on teardown with RuntimeError">teardown</error></testcase>
</testsuite></testsuites>"""
    found = results.read_junit(write(tmp_path, "run.xml", junit))
    assert [(r.test, r.outcome, r.reason, r.seconds) for r in found] == [
        (
            "test_client_timeout.py::test_r[multi_node-eventual_consistency]",
            "failed",
            "ProcessExitError: east2 exited",
            31.0,
        ),
        (
            "test_client_timeout.py::test_s[multi_node]",
            "failed",
            "failed on teardown with RuntimeError",
            3.0,
        ),
    ]


def test_two_runs_side_by_side_and_into_a_page(tmp_path: Path) -> None:
    found = results.read_junit(write(tmp_path, "run.xml", JUNIT))
    ours, _ = results.save(found, "pybmq", 12.0, tmp_path, "-m single")
    flipped = [
        results.Result(r.test, r.topology, "passed" if r.outcome == "failed" else r.outcome)
        for r in found
    ]
    theirs, markdown = results.save(flipped, "bmqtool", 10.0, tmp_path, "-m single")
    assert "| `test_breathing.py::test_b[single_node]` | single_node | passed |" in (
        markdown.read_text()
    )
    text = results.side_by_side(ours, theirs)
    assert "| single_node | 1 / 1 / 0 | 2 / 0 / 0 |" in text
    assert "| all | 1 / 2 / 1 | 3 / 0 / 1 |" in text
    assert "Wall time: pybmq 12 s, bmqtool 10 s." in text
    assert "| `test_breathing.py::test_b[single_node]` | failed | passed |" in text
    page = write(tmp_path, "page.md", "# P\n<!-- x:begin -->\nold\n<!-- x:end -->\ntail\n")
    results.update_page(page, "x", text)
    content = page.read_text()
    assert "old" not in content and text in content and content.endswith("tail\n")
    with pytest.raises(SystemExit, match="no <!-- y:begin -->"):
        results.update_page(page, "y", text)


def test_compare_command_prints_and_run_refuses_a_missing_suite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    found = results.read_junit(write(tmp_path, "run.xml", JUNIT))
    a, _ = results.save(found, "a", 1.0, tmp_path / "a")
    b, _ = results.save(found, "b", 1.0, tmp_path / "b")
    assert main(["compare", str(a), str(b)]) == 0
    assert "Every test has the same outcome with both clients." in capsys.readouterr().out
    assert json.loads(a.read_text())["tests"][0]["outcome"] == "passed"
    with pytest.raises(SystemExit, match="--suite"):
        main(["run", "--suite", str(tmp_path / "missing"), "--broker", str(a)])
    with pytest.raises(SystemExit, match="src/integration-tests"):
        main(["run", "--suite", str(tmp_path), "--broker", str(a), "--out", str(tmp_path / "o")])
