"""Runs every generator, then writes generated/ or proves it fresh.

A generator is a function that returns artifacts (a path relative to generated/ and its text).
Writing and checking share one rendering pass, so ``check-generated`` can never disagree with
``generate`` about what the output should be.
"""

from __future__ import annotations

import argparse
import difflib
from pathlib import Path

from pybmq.codegen.artifact import Generator
from pybmq.codegen.bindings import generate_ctrlmsg
from pybmq.codegen.layout import generate_layout
from pybmq.codegen.other_schemas import generate_other_schemas
from pybmq.codegen.render import format_cache

__all__ = [
    "GENERATED_DIR",
    "REPO_ROOT",
    "SCHEMA_DIR",
    "UNOWNED",
    "diff",
    "existing_files",
    "main",
    "registered_generators",
    "render_all",
    "write",
]

REPO_ROOT = Path(__file__).resolve().parent.parent
SCHEMA_DIR = REPO_ROOT / "schema"
GENERATED_DIR = REPO_ROOT / "generated"

# Files in generated/ that no generator owns (hand-written package marker).
UNOWNED = {"__init__.py"}


def registered_generators() -> list[tuple[str, Generator]]:
    """The generators that make up generated/, in a fixed order."""
    generators: list[tuple[str, Generator]] = [
        ("control messages", generate_ctrlmsg),
        ("binary layout", generate_layout),
        ("other BlazingMQ schemas", generate_other_schemas),
    ]
    return generators


def render_all(schema_dir: Path = SCHEMA_DIR) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, generator in registered_generators():
        for artifact in generator(schema_dir):
            if artifact.relpath in out:
                raise RuntimeError(f"{name}: {artifact.relpath} is produced twice")
            out[artifact.relpath] = artifact.text
    return out


def existing_files(generated_dir: Path) -> dict[str, str]:
    return {
        str(p.relative_to(generated_dir)): p.read_text(encoding="utf-8")
        for p in sorted(generated_dir.rglob("*.py"))
        if "__pycache__" not in p.parts and str(p.relative_to(generated_dir)) not in UNOWNED
    }


def write(artifacts: dict[str, str], generated_dir: Path) -> list[str]:
    """Write artifacts and delete generated files no generator produces any more."""
    changed = []
    for relpath, text in artifacts.items():
        target = generated_dir / relpath
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            target.write_text(text, encoding="utf-8")
            changed.append(relpath)
    for relpath in existing_files(generated_dir):
        if relpath not in artifacts:
            (generated_dir / relpath).unlink()
            changed.append(relpath)
    return changed


def diff(artifacts: dict[str, str], generated_dir: Path) -> str:
    """A unified diff from what is on disk to what the generators produce; empty when fresh."""
    on_disk = existing_files(generated_dir)
    chunks: list[str] = []
    for relpath in sorted(set(on_disk) | set(artifacts)):
        old = on_disk.get(relpath, "")
        new = artifacts.get(relpath, "")
        if old != new:
            chunks.extend(
                difflib.unified_diff(
                    old.splitlines(keepends=True),
                    new.splitlines(keepends=True),
                    fromfile=f"generated/{relpath} (on disk)",
                    tofile=f"generated/{relpath} (from make generate)",
                )
            )
    return "".join(chunks)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pybmq.codegen", description=__doc__)
    parser.add_argument(
        "--check", action="store_true", help="fail with a diff if generated/ is stale"
    )
    parser.add_argument("--schema-dir", type=Path, default=SCHEMA_DIR)
    parser.add_argument("--out", type=Path, default=GENERATED_DIR)
    args = parser.parse_args(argv)
    artifacts = render_all(args.schema_dir)
    format_cache().prune()  # keep only what this full run used: the cache stays bounded
    if args.check:
        text = diff(artifacts, args.out)
        if text:
            print(text, end="")
            print(
                "\ngenerated/ is stale or hand-edited: run `make generate` and commit the result."
            )
            return 1
        print(f"generated/ is fresh ({len(artifacts)} files)")
        return 0
    changed = write(artifacts, args.out)
    print(f"generated {len(artifacts)} files, {len(changed)} changed")
    return 0
