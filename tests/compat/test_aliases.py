"""Running a program written for the official SDK unchanged: ``python -m pybmq.compat`` and
``pybmq.compat.install()`` make ``import blazingmq`` / ``from blazingmq.testing import HostHealth``
give pybmq.compat, and leave a real installed ``blazingmq`` alone unless forced."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pybmq.compat
import pytest

pytestmark = pytest.mark.timeout(120)
TIMEOUT = 90

PROGRAM = textwrap.dedent("""
    import sys
    import threading

    import blazingmq
    from blazingmq import session_events
    from blazingmq.testing import HostHealth

    acked = threading.Event()
    events = []
    uri = "bmq://bmq.test.mem.priority/compat-aliases"
    with blazingmq.Session(events.append, broker=sys.argv[1]) as session:
        session.open_queue(uri, write=True)
        session.post(uri, b"unchanged", on_ack=lambda ack: acked.set())
        acked.wait(30)
    print(blazingmq.__name__, HostHealth.__module__, acked.is_set(), sys.argv[2])
    print([type(e).__name__ for e in events], isinstance(events[0], session_events.Connected))
    """)

# Makes `blazingmq` look not installed in the child, as on a machine with only pybmq.
HIDE_REAL_SDK = textwrap.dedent("""
    import sys
    class HideBlazingmq:
        def find_spec(self, name, path=None, target=None):
            if name == "blazingmq" or name.startswith("blazingmq."):
                raise ModuleNotFoundError(name)
            return None
    sys.meta_path.insert(0, HideBlazingmq())
    from pybmq.compat.__main__ import main
    sys.exit(main(sys.argv[1:]))
    """)


@pytest.fixture
def program(tmp_path: Path) -> Path:
    path = tmp_path / "official_program.py"
    path.write_text(PROGRAM)
    return path


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "BMQ_BROKER_URI"}
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=TIMEOUT, env=env
    )


def _real_sdk_installed() -> bool:
    return _run(["-c", "import blazingmq._ext"]).returncode == 0


def test_module_runner_without_a_real_sdk(program: Path, bmq_broker_url: str) -> None:
    done = _run(["-c", HIDE_REAL_SDK, str(program), bmq_broker_url, "arg"])
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert first == "pybmq.compat pybmq.compat.values True arg"
    assert second == "['Connected', 'Disconnected'] True"


def test_module_runner_leaves_a_real_sdk_alone_unless_forced(
    program: Path, bmq_broker_url: str
) -> None:
    if not _real_sdk_installed():
        pytest.skip("the official blazingmq package is not installed here")
    plain = _run(["-m", "pybmq.compat", str(program), bmq_broker_url, "x"])
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.startswith("blazingmq blazingmq.")  # the real SDK ran the program
    assert "a real blazingmq package is installed" in plain.stderr
    forced = _run(["-m", "pybmq.compat", "--force", str(program), bmq_broker_url, "y"])
    assert forced.returncode == 0, forced.stderr
    assert forced.stdout.splitlines()[0] == "pybmq.compat pybmq.compat.values True y"


def test_module_runner_runs_a_module(tmp_path: Path, bmq_broker_url: str) -> None:
    (tmp_path / "official_module.py").write_text(PROGRAM)
    done = subprocess.run(
        [sys.executable, "-m", "pybmq.compat", "--force", "-m", "official_module", bmq_broker_url, "m"],
        capture_output=True, text=True, timeout=TIMEOUT, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "pybmq.compat pybmq.compat.values True m"


@pytest.fixture
def clean_modules() -> Iterator[None]:
    """Put back whatever ``blazingmq`` modules this process had (the interop tests import the
    real SDK in the same process)."""
    saved = {n: m for n, m in sys.modules.items() if n.split(".")[0] == "blazingmq"}
    yield
    for name in [n for n in sys.modules if n.split(".")[0] == "blazingmq"]:
        del sys.modules[name]
    sys.modules.update(saved)


@pytest.mark.usefixtures("clean_modules")
def test_install_registers_the_aliases_when_forced() -> None:
    assert pybmq.compat.install(force=True)
    import blazingmq
    import blazingmq.testing
    from blazingmq import exceptions, session_events

    assert blazingmq is pybmq.compat
    assert blazingmq.testing.HostHealth is pybmq.compat.BasicHealthMonitor
    assert exceptions is pybmq.compat.exceptions
    assert session_events is pybmq.compat.session_events
    assert pybmq.compat.install()  # idempotent
    pybmq.compat.uninstall()
    assert sys.modules.get("blazingmq") is not pybmq.compat


@pytest.mark.usefixtures("clean_modules")
def test_install_warns_and_refuses_over_a_real_sdk() -> None:
    if not _real_sdk_installed():
        pytest.skip("the official blazingmq package is not installed here")
    pybmq.compat.uninstall()
    with pytest.warns(UserWarning, match="a real blazingmq package is installed"):
        assert not pybmq.compat.install()
    assert sys.modules.get("blazingmq") is not pybmq.compat


def test_uninstall_before_any_install_does_nothing() -> None:
    """In a fresh process (a pytest-xdist worker, say) nothing is aliased, and some of the alias
    targets are not imported: uninstall leaves everything as it was (it raised KeyError)."""
    code = (
        "import sys, pybmq.compat; pybmq.compat.uninstall(); assert 'blazingmq' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=TIMEOUT)
