"""The CI gate: schema/ against schema/baseline/ with the allow-list."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pybmq.cli import main
from pybmq.codegen.schemacheck import check

from tests.helpers.paths import TESTS_DIR

REPO_SCHEMA = TESTS_DIR.parent / "schema"
HISTORY = TESTS_DIR / "vectors" / "xsd" / "history"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A schema folder whose baseline is the 2026-06-05 upstream revision, schema/ the current one."""
    schema = tmp_path / "schema"
    (schema / "baseline").mkdir(parents=True)
    shutil.copyfile(REPO_SCHEMA / "bmqp_ctrlmsg.xsd", schema / "bmqp_ctrlmsg.xsd")
    shutil.copyfile(HISTORY / "2026-06-05_fc9dfc1b2.xsd", schema / "baseline" / "bmqp_ctrlmsg.xsd")
    return schema


def gate(capsys: pytest.CaptureFixture[str], schema: Path, *extra: str) -> tuple[int, str]:
    status = main(["schema-check", "--schema-dir", str(schema), *extra])
    out, err = capsys.readouterr()
    return status, out + err


ALLOW_ALL = """\
allowed:
{entries}
"""
BREAKING = [
    (name, path)
    for name in ("ReplicaDataRequest", "ReplicaDataResponse")
    for path in (
        "partitionId",
        "primaryLeaseId",
        "replicaDataType",
        "beginSequenceNumber",
        "endSequenceNumber",
    )
]


def allow(
    schema: Path,
    entries: list[tuple[str, str]],
    reason: str = "cluster-internal; brokers upgrade together",
) -> None:
    lines = [
        f"  - file: bmqp_ctrlmsg.xsd\n    path: {t}.{p}\n    reason: {reason}" for t, p in entries
    ]
    (schema / "allowed-changes.yaml").write_text(ALLOW_ALL.format(entries="\n".join(lines)))


def test_breaking_change_without_allow_list_fails(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out = gate(capsys, repo)
    assert status == 1
    assert "BLOCKED  bmqp_ctrlmsg.xsd: ReplicaDataRequest.primaryLeaseId (element-added" in out
    assert out.count("BLOCKED") == len(BREAKING)
    assert "schema-check: FAILED" in out


def test_github_format_annotates_each_blocked_change(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out = gate(capsys, repo, "--format", "github")
    assert status == 1
    annotations = [line for line in out.splitlines() if line.startswith("::error ")]
    assert len(annotations) == len(BREAKING)
    lines = (repo / "bmqp_ctrlmsg.xsd").read_text().splitlines()
    for annotation in annotations:
        file_part, line_part = annotation.split(",")[:2]
        assert file_part == f"::error file={repo / 'bmqp_ctrlmsg.xsd'}"
        member = annotation.split("title=wire-breaking: ")[1].split("::")[0].split(".")[-1]
        assert member in lines[int(line_part.removeprefix("line=")) - 1]


def test_breaking_change_named_in_allow_list_passes(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    allow(repo, BREAKING)
    status, out = gate(capsys, repo)
    assert status == 0, out
    assert "allowed  bmqp_ctrlmsg.xsd: ReplicaDataResponse.replicaDataType" in out
    assert "brokers upgrade together" in out


def test_partial_allow_list_still_fails(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    allow(repo, BREAKING[:-1])
    status, out = gate(capsys, repo)
    assert status == 1 and out.count("BLOCKED") == 1
    assert "ReplicaDataResponse.endSequenceNumber" in out


def test_kind_restricts_an_entry(repo: Path) -> None:
    (repo / "allowed-changes.yaml").write_text(
        "allowed:\n"
        "  - {file: bmqp_ctrlmsg.xsd, path: ReplicaDataRequest.primaryLeaseId, kind: element-removed,"
        " reason: wrong kind}\n"
    )
    result = check(repo)
    assert not result.ok
    assert [a.path for a in result.unused] == ["ReplicaDataRequest.primaryLeaseId"]
    assert ("bmqp_ctrlmsg.xsd", "ReplicaDataRequest.primaryLeaseId") in {
        (name, c.path) for name, c in result.blocking
    }


def test_stale_entry_fails_then_update_baseline_clears(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    allow(repo, BREAKING)
    assert gate(capsys, repo, "--update-baseline")[0] == 0
    assert (repo / "baseline" / "bmqp_ctrlmsg.xsd").read_bytes() == (
        repo / "bmqp_ctrlmsg.xsd"
    ).read_bytes()
    status, out = gate(capsys, repo)
    assert status == 1 and out.count("STALE") == len(BREAKING)
    (repo / "allowed-changes.yaml").write_text("allowed: []\n")
    assert gate(capsys, repo)[0] == 0


def test_compatible_and_api_changes_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = tmp_path / "schema"
    (schema / "baseline").mkdir(parents=True)
    shutil.copyfile(HISTORY / "2025-10-23_eef016a51.xsd", schema / "baseline" / "bmqp_ctrlmsg.xsd")
    shutil.copyfile(HISTORY / "2025-11-24_6e29feea7.xsd", schema / "bmqp_ctrlmsg.xsd")
    status, out = gate(capsys, schema)
    assert status == 0 and "bmqp_ctrlmsg.xsd: 2 compatible" in out


def test_setup_problems(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    allow(repo, BREAKING)
    shutil.copyfile(REPO_SCHEMA / "bmqp_layout.yaml", repo / "bmqp_layout.yaml")
    status, out = gate(capsys, repo)
    assert status == 1 and "bmqp_layout.yaml has no baseline" in out
    (repo / "allowed-changes.yaml").write_text("allowed:\n  - {file: x.xsd, path: A.b}\n")
    status, out = gate(capsys, repo)
    assert status == 2 and "lacks reason" in out
    shutil.rmtree(repo / "baseline")
    (repo / "allowed-changes.yaml").write_text("allowed: []\n")
    status, out = gate(capsys, repo)
    assert status == 1 and "no baseline folder" in out


def test_verbose_lists_the_passing_changes_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = tmp_path / "schema"
    (schema / "baseline").mkdir(parents=True)
    shutil.copyfile(HISTORY / "2023-07-11_fae9e586a.xsd", schema / "baseline" / "bmqp_ctrlmsg.xsd")
    shutil.copyfile(HISTORY / "2024-09-19_9075a4bdc.xsd", schema / "bmqp_ctrlmsg.xsd")
    status, out = gate(capsys, schema, "--verbose")
    assert status == 0
    assert "compatible StopRequest.version (element-added" in out
