"""The test suite on every supported CPython found on this machine (``make pythons``).

``make test`` runs the whole suite on the development venv's Python. Here each other CPython
from 3.10 to 3.13 that is on PATH (``python3.X``, e.g. through pyenv's shims) gets a fresh venv
but the development venv's own with pybmq installed as a user would (not editable) and runs the suite without the Spark tests,
the slow ones and the official SDK's interop (that SDK is a peer, not what is being ported).
An absent interpreter is skipped with a printed line; ``--no-error-on-missing-interpreters`` keeps
that from failing the run, and the summary at the end says which ran.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import nox
import tomllib

SUPPORTED = ["3.10", "3.11", "3.12", "3.13"]
# The dev extra minus what the suite does not need to run: the official SDK (a C++ wheel that
# not every Python has; its tests skip without it) and the lint tools.
NOT_FOR_TESTS = ("blazingmq", "mypy", "ruff", "types-")
MARKERS = "not spark and not slow and not interop"

nox.options.default_venv_backend = "venv"
nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = True


def present() -> list[str]:
    """The supported versions whose interpreter is on PATH (printed, so a log shows which), but
    the one running nox: that is the development venv's, where ``make test`` runs everything."""
    found = []
    own = f"{sys.version_info.major}.{sys.version_info.minor}"
    for version in SUPPORTED:
        if version == own:
            print(f"python{version}: the full suite runs on it in make test", file=sys.stderr)
            continue
        path = shutil.which(f"python{version}")
        print(f"python{version}: {path or 'absent, skipped'}", file=sys.stderr)
        if path:
            found.append(version)
    return found


def test_requirements() -> list[str]:
    project = tomllib.loads(Path("pyproject.toml").read_text(encoding="utf-8"))["project"]
    dev = project["optional-dependencies"]["dev"]
    return [req for req in dev if not req.startswith(NOT_FOR_TESTS)]


@nox.session(python=present() or SUPPORTED)
def tests(session: nox.Session) -> None:
    """The suite minus Spark, slow and interop tests, against a regular install of pybmq."""
    session.install(".[codegen,otel]", *test_requirements())
    session.run(
        "python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", MARKERS, *session.posargs
    )
