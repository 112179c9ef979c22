"""``pybmq.testing`` outside pytest, with pytest not importable at all (a base install): the
brokers work, ``import pybmq.testing`` does not reach for pytest, and a fixture asked for says
that it needs pytest."""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.timeout(120)

NO_PYTEST = """
import sys
sys.modules["pytest"] = None  # what a base install is like: `import pytest` fails
"""


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", NO_PYTEST + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=100,
        check=False,
    )


def test_running_broker_works_without_pytest() -> None:
    result = run("""
        import pybmq
        from pybmq.testing import BrokerHandle, RealBroker, running_broker

        with running_broker("sim") as broker:
            assert isinstance(broker, BrokerHandle) and not broker.is_real
            with pybmq.Session(broker.url) as session:
                queue = session.open_queue("bmq://bmq.test.mem.priority/t", read=True, write=True)
                assert queue.post(b"ping").ok
                print(next(iter(queue)).payload)
        assert "pytest" not in sys.modules or sys.modules["pytest"] is None
        """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "b'ping'"


def test_a_fixture_without_pytest_names_what_is_missing() -> None:
    result = run("""
        import pybmq.testing
        try:
            pybmq.testing.bmq_sim
        except ModuleNotFoundError as exc:
            print(exc)
        """)
    assert result.returncode == 0, result.stderr
    assert "pybmq.testing.bmq_sim is part of the pytest plugin, which needs pytest" in result.stdout


def test_the_broker_command_needs_no_pytest() -> None:
    result = run("""
        from pybmq.cli.main import main
        sys.exit(main(["broker", "--bin", "/nonexistent/bmqbrkr"]))
        """)
    assert (
        result.returncode == 2 and "--bin /nonexistent/bmqbrkr: not an executable" in result.stderr
    )


def test_the_packages_names_are_the_plugins_and_the_brokers() -> None:
    import pybmq.testing
    import pybmq.testing.plugin

    homes = pybmq.testing._HOMES
    in_plugin = {name for name, home in homes.items() if home == "pybmq.testing.plugin"}
    assert in_plugin == {*pybmq.testing.plugin.__all__, "BROKER_KINDS"}
    assert set(pybmq.testing.__all__) <= set(homes)
    for name in homes:
        assert getattr(pybmq.testing, name) is getattr(importlib.import_module(homes[name]), name)
