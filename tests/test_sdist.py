"""From the sdist alone: ``pip install`` of it works, ``make generate`` regenerates the bindings
in its tree (a hand edit of a generated module is undone, and ``make check-generated`` agrees),
and the unit tests of the wire layer pass there. The sdist is built here, so this never skips
for want of ``make dist``; it needs the package index (or pip's cache) for the dependencies.
And ``make dist`` itself says little when it works."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import venv
from pathlib import Path

import pytest
from pybmq._version import __version__

from tests.helpers.paths import REPO_ROOT

pytestmark = [pytest.mark.timeout(900)]

TEST_TOOLS = ["pytest>=8.0", "pytest-timeout>=2.3", "pytest-asyncio>=0.23", "hypothesis>=6.100"]


def run(argv: list[str], cwd: Path | None = None, timeout: float = 600) -> str:
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_PROGRESS_BAR": "off"}
    env.pop("PYBMQ_GENERATED_CHECKED", None)
    done = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{' '.join(argv)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def test_from_the_sdist_one_installs_regenerates_and_runs_the_unit_tests(tmp_path: Path) -> None:
    run([sys.executable, "-m", "build", "--sdist", "--outdir", str(tmp_path), str(REPO_ROOT)])
    sdist = tmp_path / f"pybmq-{__version__}.tar.gz"
    with tarfile.open(sdist) as archive:
        archive.extractall(tmp_path / "src", filter="data")
    tree = tmp_path / "src" / f"pybmq-{__version__}"
    target = tmp_path / "venv"
    venv.create(target, with_pip=True)
    python = str(target / "bin" / "python")
    pip = [python, "-m", "pip", "install", "--quiet"]
    run([*pip, f"{sdist}[codegen]", *TEST_TOOLS])  # the sdist, as a user installs it
    run([python, "-c", "import pybmq.generated.bmqp_ctrlmsg, pybmq.codegen"], cwd=tmp_path)
    run([*pip, "--no-deps", "-e", str(tree)])  # then its own tree, where make writes
    generated = tree / "generated" / "bmqp_ctrlmsg.py"
    shipped = generated.read_bytes()
    generated.write_bytes(shipped + b"# a hand edit\n")
    make = ["make", "-C", str(tree), f"VENV={target}"]
    run([*make, "generate"])
    assert (
        generated.read_bytes() == shipped == (REPO_ROOT / "generated/bmqp_ctrlmsg.py").read_bytes()
    )
    run([*make, "check-generated"])
    out = run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/wire"], cwd=tree)
    assert " passed" in out and "failed" not in out


def test_make_dist_is_quiet_when_it_works(tmp_path: Path) -> None:
    """Its commands and twine's verdict per file, not the build's hundreds of lines."""
    out = run(["make", "-C", str(REPO_ROOT), "--no-print-directory", "dist", f"DIST={tmp_path}"])
    lines = out.splitlines()
    assert len(lines) <= 10, out  # (twine may wrap a long path)
    assert sum("PASSED" in line for line in lines) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        f"pybmq-{__version__}-py3-none-any.whl",
        f"pybmq-{__version__}.tar.gz",
    ]
