"""Shared fixtures: where the test vectors live."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
JAVA_VECTORS = TESTS_DIR / "vectors" / "java-sdk"


@pytest.fixture(scope="session")
def java_vectors() -> Path:
    """Binary vectors from the Java SDK's own tests (see tests/vectors/java-sdk/README.md)."""
    return JAVA_VECTORS


@pytest.fixture(scope="module", params=("sim", "real"))
def tls_broker(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A broker with a plain and a TLS listener (``url``, ``tls_url``, ``tls_ca``), one per
    module and kind: the simulator, and the TLS-capable real broker (skipped, with the reason,
    when ``$BMQ_BROKER_TLS_BIN`` is unset). Tests use queues of their own."""
    from tests.helpers.tls import running_tls_broker

    with running_tls_broker(request.param) as broker:
        yield broker


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The shared local[2] SparkSession with the ``blazingmq`` data source registered."""
    from tests.helpers.spark import local_spark

    yield from local_spark(tmp_path_factory.mktemp("spark"))


# Tests that take tens of seconds (measured with --durations on the 2-core CI machine), marked
# here in one list rather than in their modules: ``make pythons`` leaves them out on the extra
# interpreters (``-m "not slow"``), ``make test`` runs them. Everything else they exercise runs
# on every interpreter through faster tests.
SLOW = {
    "tests/codegen/test_ctrlmsg_codegen.py::test_registered_and_deterministic",
    "tests/compat/test_callbacks.py::test_many_posts_keep_no_memory",
    "tests/client/test_resilience_e2e.py::test_twenty_forced_disconnects_while_posting_and_consuming",
    "tests/client/test_auth_e2e.py::test_reauthenticates_under_traffic_without_loss",
    "tests/cli/test_consume_reconnect_cli.py::test_consume_rides_over_dropped_connections",
    "tests/cli/test_consume_reconnect_cli.py::test_consume_rides_over_a_simulator_restart",
    "tests/cli/test_admin_cli.py::test_a_long_session_authenticates_again_before_its_credential_expires",
    "tests/cli/test_post_consume_cli.py::test_text_summary_and_idle_timeout",
    "tests/bench/test_bench_compat.py::test_bench_compat_runs_quick",
    "tests/test_packaging.py::test_a_bare_install_of_the_wheel_runs_the_client_and_the_simulator",
    "tests/test_sdist.py::test_from_the_sdist_one_installs_regenerates_and_runs_the_unit_tests",
    "tests/test_sdist.py::test_make_dist_is_quiet_when_it_works",
    "tests/faststream/test_chain.py::test_ten_thousand_messages_through_a_handler_chain_lose_none",
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid.split("[", 1)[0] in SLOW:
            item.add_marker(pytest.mark.slow)
