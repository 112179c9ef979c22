"""What every generator returns: one file's path under the output folder and its full text.

A module of its own so that the driver and the generators both import it without importing each
other."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Artifact", "Generator"]


@dataclass(frozen=True)
class Artifact:
    """One generated file: where it goes under generated/ and its full text."""

    relpath: str
    text: str


Generator = Callable[[Path], Iterable[Artifact]]
