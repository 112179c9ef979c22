"""The test suite on every supported CPython found on this machine (``make pythons``).

``make test`` runs the whole suite on the development venv's Python. Here every other CPython
from 3.10 to 3.13 (``python3.X`` on PATH, or pyenv's install of it) gets a venv of its own with
pybmq installed editable and runs the suite without the Spark tests, the slow ones and the
official SDK's interop (that SDK is a peer, not what is being ported). An absent interpreter is
skipped with a printed line; ``--no-error-on-missing-interpreters`` keeps that from failing the
run, and nox's summary at the end says which ran.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nox
import tomllib

SUPPORTED = ["3.10", "3.11", "3.12", "3.13"]
# PYBMQ_PYTHONS="3.10 3.13" narrows the versions (CI runs the oldest and the newest).
WANTED = os.environ.get("PYBMQ_PYTHONS", "").split() or SUPPORTED
# The dev extra minus what the suite does not need to run: the official SDK (a C++ wheel that
# not every Python has; its tests skip without it) and the lint tools.
NOT_FOR_TESTS = ("blazingmq", "mypy", "ruff", "types-")
MARKERS = "not spark and not slow and not interop"
WORKERS = os.environ.get("TEST_WORKERS", "4")  # pytest-xdist workers, as make test

nox.options.default_venv_backend = "venv"
nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = True


def interpreter(version: str) -> str | None:
    """``python3.X`` on PATH if it runs, else pyenv's install of it: pyenv's shims are on PATH
    for every installed version but run only the activated ones."""
    path = shutil.which(f"python{version}")
    if path and subprocess.run([path, "-c", ""], capture_output=True).returncode == 0:
        return path
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    for candidate in sorted(root.glob(f"versions/{version}.*/bin/python{version}"), reverse=True):
        if candidate.is_file():
            return str(candidate)
    return None


def present() -> list[str]:
    """The supported versions found (printed, so a log shows which), but the one running nox:
    that is the development venv's, where ``make test`` runs everything. Each found interpreter
    is linked as ``build/pythons/python3.X``, first on PATH, so nox finds it by version."""
    found = []
    own = f"{sys.version_info.major}.{sys.version_info.minor}"
    links = Path("build/pythons").resolve()
    links.mkdir(parents=True, exist_ok=True)
    for version in WANTED:
        if version == own:
            print(f"python{version}: the full suite runs on it in make test", file=sys.stderr)
            continue
        path = interpreter(version)
        print(f"python{version}: {path or 'absent, skipped'}", file=sys.stderr)
        if path:
            link = links / f"python{version}"
            link.unlink(missing_ok=True)
            link.symlink_to(path)
            found.append(version)
    os.environ["PATH"] = f"{links}{os.pathsep}{os.environ.get('PATH', '')}"
    return found


def test_requirements() -> list[str]:
    project = tomllib.loads(Path("pyproject.toml").read_text(encoding="utf-8"))["project"]
    dev = project["optional-dependencies"]["dev"]
    return [req for req in dev if not req.startswith(NOT_FOR_TESTS)]


@nox.session(python=present() or WANTED)
def tests(session: nox.Session) -> None:
    """The suite minus Spark, slow and interop tests (pybmq installed editable, as the suite
    reads the schemas and templates from the checkout; the wheel has a test of its own). Paths
    after ``--`` narrow it (``make pythons-ci``); a part of it may then have no test to run
    alone (pytest's exit code 5)."""
    session.install("-e", ".[codegen,otel,faststream]", *test_requirements())
    pytest = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", MARKERS]
    pytest.append("--ignore=tests/spark")  # its modules import pyspark, not installed here
    # As make test: in parallel, then the tests that need the machine to themselves.
    session.run(*pytest, "-n", WORKERS, "--dist", "loadgroup", *session.posargs)
    session.run(*pytest, "--alone", *session.posargs, success_codes=[0, 5])
