"""A disk cache of formatter output, so that regenerating unchanged code costs no formatting.

black over the ~48k generated lines is nearly all of a generate/check run. Its output depends only
on the formatter (name and version), its options and the unformatted text, so an entry is keyed
by a hash of those three: a changed template, spec or schema changes the text and misses; an
upgraded formatter changes the key and misses. Each entry stores a hash of its own output and is
ignored when that does not match, so a truncated or edited entry is a miss, never wrong code.

The cache lives in the build folder (ignored by git), never in the source tree, and is bounded:
``prune`` (called after a full run) deletes every entry that run did not use.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

__all__ = ["SUFFIX", "FormatCache"]

SUFFIX = ".fmt"


class FormatCache:
    """Formatted text by content hash: in memory for this process and, if ``folder`` is set, on
    disk across runs."""

    def __init__(self, folder: Path | None, formatter_id: str) -> None:
        self.folder = folder
        self.formatter_id = formatter_id  # formatter name, version and options
        self._memory: dict[str, str] = {}
        self._used: set[str] = set()

    def key(self, text: str) -> str:
        digest = hashlib.sha256()
        for part in (self.formatter_id, text):
            encoded = part.encode("utf-8")
            digest.update(len(encoded).to_bytes(8, "big"))
            digest.update(encoded)
        return digest.hexdigest()

    def format(self, text: str, formatter: Callable[[str], str]) -> str:
        """``formatter(text)``, from the cache when this exact input was formatted before."""
        key = self.key(text)
        self._used.add(key)
        hit = self._memory.get(key)
        if hit is None:
            hit = self._read(key)
        if hit is None:
            hit = formatter(text)
            self._write(key, hit)
        self._memory[key] = hit
        return hit

    def prune(self) -> int:
        """Delete the disk entries this process did not use; the number deleted."""
        if self.folder is None or not self.folder.is_dir():
            return 0
        removed = 0
        for entry in self.folder.glob(f"*{SUFFIX}"):
            if entry.stem not in self._used:
                entry.unlink(missing_ok=True)
                removed += 1
        return removed

    def _path(self, key: str) -> Path | None:
        return None if self.folder is None else self.folder / f"{key}{SUFFIX}"

    def _read(self, key: str) -> str | None:
        path = self._path(key)
        if path is None:
            return None
        try:
            raw = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
        check, _, body = raw.partition("\n")
        if check != _digest(body):
            return None
        return body

    def _write(self, key: str, formatted: str) -> None:
        path = self._path(key)
        if path is None:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        except OSError:
            return  # a read-only disk only costs speed
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
                out.write(f"{_digest(formatted)}\n{formatted}")
            os.replace(tmp, path)  # atomic: a concurrent reader sees all or nothing
        except OSError:
            Path(tmp).unlink(missing_ok=True)  # a full disk only costs speed


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
