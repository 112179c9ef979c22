"""The wheel ships what a user needs and nothing of the repository's own; the sdist ships the
whole source tree, so that the bindings can be regenerated and the suite run from it.

They are built by ``make dist`` (CI runs it before ``make test``); without a build in ``dist/``
for this version these tests skip and say so (``test_sdist`` builds its own). The wheel must
hold the generated code, ``py.typed``, the code generator's templates and the licences (ours
and the vendored schemas'), and no tests, caches or compiled files; its metadata must carry the
SPDX licence and the short README. A bare install of it (no extras, a fresh venv) must import
the client, compat, the simulator and ``pybmq.testing``'s brokers (no pytest there), answer
``pybmq --version`` and run the demo's job: none of that may need the code generator.
"""

from __future__ import annotations

import email
import subprocess
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest
from pybmq._version import __version__

from tests.helpers.paths import REPO_ROOT

DIST = REPO_ROOT / "dist"
LICENCES = ["LICENSE", "NOTICE", "schema/LICENSE", "schema/NOTICE/TRADEMARK.txt"]


def built(pattern: str) -> Path:
    found = sorted(DIST.glob(pattern))
    if not found:
        pytest.skip(f"no {pattern} in dist/: run `make dist` first")
    newer = [
        name
        for name in ("README.md", "pyproject.toml")
        if (REPO_ROOT / name).stat().st_mtime > found[-1].stat().st_mtime
    ]
    if newer:
        pytest.skip(f"dist/ is older than {', '.join(newer)}: run `make dist` again")
    return found[-1]


def wheel() -> Path:
    return built(f"pybmq-{__version__}-py3-none-any.whl")


def test_the_wheel_holds_the_package_its_data_and_the_licences() -> None:
    names = set(zipfile.ZipFile(wheel()).namelist())
    dist_info = f"pybmq-{__version__}.dist-info"
    expected = {
        "pybmq/__init__.py",
        "pybmq/py.typed",
        "pybmq/generated/bmqp_ctrlmsg.py",
        "pybmq/generated/wire_codec.py",
        "pybmq/codegen/templates/types.py.j2",
        "pybmq/client/engine.py",
        "pybmq/sim/broker.py",
        "pybmq/compat/session.py",
        "pybmq/spark/datasource.py",
        "pybmq/cli/main.py",
        *(f"{dist_info}/licenses/{name}" for name in LICENCES),
    }
    assert expected <= names, sorted(expected - names)
    unwanted = [
        n
        for n in names
        if n.startswith(("tests/", "bench/", "docs/"))
        or "__pycache__" in n
        or n.endswith((".pyc", ".pyo"))
        or ".pytest_cache" in n
        or "/build/" in n
    ]
    assert not unwanted, unwanted
    templates = {n for n in names if n.startswith("pybmq/codegen/templates/")}
    on_disk = {p.name for p in (REPO_ROOT / "codegen" / "templates").glob("*.j2")}
    assert {Path(n).name for n in templates} == on_disk


def test_the_wheel_metadata_names_the_licence_and_carries_the_short_readme() -> None:
    archive = zipfile.ZipFile(wheel())
    text = archive.read(f"pybmq-{__version__}.dist-info/METADATA").decode("utf-8")
    metadata = email.message_from_string(text)
    assert metadata["License-Expression"] == "Apache-2.0"
    assert set(metadata.get_all("License-File") or []) == set(LICENCES)
    assert "Programming Language :: Python :: 3.13" in (metadata.get_all("Classifier") or [])
    assert metadata["Description-Content-Type"] == "text/markdown"
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert text.split("\n\n", 1)[1].strip() == readme.strip()  # the body: the long description
    assert len(readme.splitlines()) <= 250


def test_the_sdist_holds_the_whole_source_tree_and_no_caches() -> None:
    """What one needs to regenerate the bindings and run the suite: schemas, generator, tests
    and their vectors, docs, the Makefile; every file the repository tracks, none it ignores."""
    sdist = built(f"pybmq-{__version__}.tar.gz")
    root = f"pybmq-{__version__}/"
    with tarfile.open(sdist) as archive:
        names = {n.removeprefix(root) for n in archive.getnames()}
    assert {"pyproject.toml", "README.md", "runtime/py.typed", *LICENCES} <= names
    expected = {
        "Makefile",
        "mkdocs.yml",
        "CHANGELOG.md",
        "schema/bmqp_layout.yaml",
        "schema/bmqp_ctrlmsg.xsd",
        "codegen/templates/types.py.j2",
        "tests/conftest.py",
        "tests/wire/test_capture.py",
        "tests/vectors/java-sdk/README.md",
        "docs/index.md",
        "bench/__main__.py",
        ".ci/typecheck-tree.sh",
    }
    assert expected <= names, sorted(expected - names)
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc") or ".venv" in n]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_bare_install_of_the_wheel_runs_the_client_and_the_simulator(tmp_path: Path) -> None:
    target = tmp_path / "venv"
    venv.create(target, with_pip=True)
    python = target / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, str(wheel())], check=True, timeout=500)
    check = (
        "import importlib.util, pybmq, pybmq.compat, pybmq.sim\n"
        "from pybmq.testing import running_broker\n"
        "assert pybmq.Session and pybmq.AsyncSession and pybmq.compat.Session\n"
        "assert importlib.util.find_spec('jinja2') is None, 'an extra was installed'\n"
        "assert importlib.util.find_spec('pytest') is None, 'pytest was installed'\n"
        "with running_broker('sim') as broker, pybmq.Session(broker.url) as session:\n"
        "    assert session.open_queue('bmq://bmq.test.mem.priority/q', write=True).post(b'x').ok\n"
        "print(pybmq.__version__)\n"
    )
    out = subprocess.run(
        [str(python), "-c", check], check=True, capture_output=True, text=True, cwd=tmp_path
    )
    assert out.stdout.strip() == __version__
    version = subprocess.run(
        [str(target / "bin" / "pybmq"), "--version"], capture_output=True, text=True, check=True
    )
    assert __version__ in version.stdout
    demo = subprocess.run(
        [str(python), "-m", "pybmq.demo", "--count", "500"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert demo.returncode == 0, demo.stderr
