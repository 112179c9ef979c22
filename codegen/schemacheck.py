"""The CI gate on protocol changes: schema/ against its committed baseline (schema/baseline/).

Every XSD and layout spec in schema/ is diffed (``schema-diff``) against the file of the same name
in the baseline. A wire-breaking change fails the gate unless ``schema/allowed-changes.yaml`` has an
entry naming it (file, path, and optionally kind) with a reason. Entries that match nothing fail
too, so the list never outlives the change it excused and cannot silently excuse a later one:
after review, the baseline is updated (``--update-baseline``) and the list emptied in one commit.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from pybmq.codegen import extra_missing
from pybmq.codegen.layoutdiff import diff_layout_files
from pybmq.codegen.schemadiff import Change, Compat, SchemaDiff, diff_files
from pybmq.errors import SchemaError

__all__ = [
    "ALLOW_LIST_NAME",
    "BASELINE_NAME",
    "GATED_SUFFIXES",
    "Allowance",
    "GateResult",
    "check",
    "diff_one",
    "gated_files",
    "load_allow_list",
    "update_baseline",
]

try:
    import yaml
except ModuleNotFoundError as exc:  # the codegen extra is not installed: say so
    raise extra_missing(exc)  # noqa: B904 - its context is exc

ALLOW_LIST_NAME = "allowed-changes.yaml"
BASELINE_NAME = "baseline"
GATED_SUFFIXES = (".xsd", ".yaml", ".yml")


@dataclass(frozen=True)
class Allowance:
    """One allow-list entry: a wire-breaking change accepted on purpose, and why."""

    file: str
    path: str
    reason: str
    kind: str | None = None

    def matches(self, file: str, change: Change) -> bool:
        return (
            self.file == file
            and self.path == change.path
            and (self.kind is None or self.kind == change.kind)
        )


@dataclass
class GateResult:
    """What the gate found: per-file diffs, the blocking changes, and problems with the setup."""

    diffs: dict[str, SchemaDiff] = field(default_factory=dict)
    blocking: list[tuple[str, Change]] = field(default_factory=list)
    allowed: list[tuple[str, Change, Allowance]] = field(default_factory=list)
    unused: list[Allowance] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.blocking or self.unused or self.problems)


def gated_files(folder: Path) -> dict[str, Path]:
    """The schema files of ``folder`` the gate covers (not the allow-list, not subfolders)."""
    return {
        p.name: p
        for p in sorted(folder.iterdir())
        if p.is_file() and p.suffix in GATED_SUFFIXES and p.name != ALLOW_LIST_NAME
    }


def load_allow_list(path: Path) -> list[Allowance]:
    """Read the allow-list (a missing file is an empty list); SchemaError when malformed."""
    if not path.exists():
        return []
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise SchemaError(f"{path.name}: {exc}") from exc
    entries = (raw or {}).get("allowed") if isinstance(raw, dict) else None
    if raw is not None and not isinstance(entries, list | None):
        raise SchemaError(f"{path.name}: expected a mapping with a list under 'allowed'")
    out: list[Allowance] = []
    for number, entry in enumerate(entries or [], start=1):
        if not isinstance(entry, dict):
            raise SchemaError(f"{path.name}: entry {number} is not a mapping")
        missing = [k for k in ("file", "path", "reason") if not str(entry.get(k) or "").strip()]
        if missing:
            raise SchemaError(f"{path.name}: entry {number} lacks {', '.join(missing)}")
        unknown = set(entry) - {"file", "path", "reason", "kind"}
        if unknown:
            raise SchemaError(f"{path.name}: entry {number} has unknown keys {sorted(unknown)}")
        kind = entry.get("kind")
        out.append(
            Allowance(
                str(entry["file"]),
                str(entry["path"]),
                " ".join(str(entry["reason"]).split()),
                None if kind is None else str(kind),
            )
        )
    return out


def diff_one(old: Path, new: Path) -> SchemaDiff:
    if new.suffix == ".xsd":
        return diff_files(old, new)
    return diff_layout_files(old, new)


def check(
    schema_dir: Path, baseline_dir: Path | None = None, allow_list: Path | None = None
) -> GateResult:
    """Run the gate over ``schema_dir`` (baseline and allow-list default to inside it)."""
    baseline_dir = baseline_dir or schema_dir / BASELINE_NAME
    allow_list = allow_list or schema_dir / ALLOW_LIST_NAME
    allowances = load_allow_list(allow_list)
    result = GateResult()
    if not baseline_dir.is_dir():
        result.problems.append(
            f"no baseline folder {baseline_dir.name}/: run with --update-baseline"
        )
        return result
    current = gated_files(schema_dir)
    baseline = gated_files(baseline_dir)
    for name in sorted(baseline.keys() - current.keys()):
        result.problems.append(f"{name} is in the baseline but no longer in the schema folder")
    for name in sorted(current.keys() - baseline.keys()):
        result.problems.append(f"{name} has no baseline: review it, then --update-baseline")
    used: set[Allowance] = set()
    for name in sorted(current.keys() & baseline.keys()):
        diff = diff_one(baseline[name], current[name])
        result.diffs[name] = diff
        for change in diff.changes:
            if change.compat < Compat.WIRE:
                continue
            match = next((a for a in allowances if a.matches(name, change)), None)
            if match is None:
                result.blocking.append((name, change))
            else:
                used.add(match)
                result.allowed.append((name, change, match))
    result.unused = [a for a in allowances if a not in used]
    return result


def update_baseline(schema_dir: Path, baseline_dir: Path | None = None) -> list[str]:
    """Make the baseline an exact copy of the gated schema files; returns the names written."""
    baseline_dir = baseline_dir or schema_dir / BASELINE_NAME
    baseline_dir.mkdir(parents=True, exist_ok=True)
    current = gated_files(schema_dir)
    for name, path in gated_files(baseline_dir).items():
        if name not in current:
            path.unlink()
    for name, path in current.items():
        shutil.copyfile(path, baseline_dir / name)
    return sorted(current)
