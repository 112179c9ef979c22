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


# Tests whose wall-clock bounds hold only with the cores to themselves: a broker flooding the
# client in the test's own loop, a timer racing a round trip, a simulator restarting every 0.3 s,
# 20,000 messages through twenty drops within fixed waits, a CLI process that must answer 100 ms
# heartbeats from its start. Sharing the cores with the other workers (or whatever else the
# machine runs) they fail. Under pytest-xdist's workers they are left out (deselected), and
# ``make test`` runs them afterwards, one at a time, with ``--alone``.
ALONE = {
    "tests/client/test_sdk_timeouts_e2e.py::"
    "test_a_broker_that_never_reads_cannot_grow_the_client_and_posts_time_out",
    "tests/client/test_stats_e2e.py::test_periodic_dump_to_the_log",
    "tests/client/test_resilience_e2e.py::test_cli_fault_flags_drop_and_refuse",
    "tests/client/test_resilience_e2e.py::test_twenty_forced_disconnects_while_posting_and_consuming",
    "tests/cli/test_admin_cli.py::test_commands_from_stdin_over_one_connection_with_heartbeats_between",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--alone",
        action="store_true",
        help="run only the tests that need the machine to themselves (ALONE in tests/conftest.py;"
        " a run under pytest-xdist leaves them out)",
    )


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """With --alone only the modules of the ALONE tests are collected."""
    if not config.getoption("alone") or not collection_path.name.startswith("test_"):
        return None
    if collection_path.suffix != ".py":
        return None
    module = collection_path.relative_to(REPO_ROOT).as_posix()
    return all(not test.startswith(f"{module}::") for test in ALONE)


def in_spark_group(nodeid: str) -> bool:
    """Whether a test runs on the worker of the Spark tests (marker ``spark``: they need the
    session's SparkSession), told from its id, as the parallel run's scheduler (below) sees only
    ids: every id that names Spark. The few unmarked ones go along; the collection hook checks
    that every marked test is in, so a Spark test is not silently spread over the workers."""
    return "spark" in nodeid.lower()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    alone = config.getoption("alone")
    if alone or hasattr(config, "workerinput"):  # --alone, or a pytest-xdist worker
        left_out = [item for item in items if (item.nodeid.split("[", 1)[0] in ALONE) != alone]
        if left_out:
            config.hook.pytest_deselected(items=left_out)
            items[:] = [item for item in items if item not in left_out]
    for item in items:
        if item.nodeid.split("[", 1)[0] in SLOW:
            item.add_marker(pytest.mark.slow)
        if item.get_closest_marker("spark") is not None and not in_spark_group(item.nodeid):
            raise pytest.UsageError(f"{item.nodeid}: marked spark, outside in_spark_group()")
    # The longest first (the Spark group, then the slow tests), so that the parallel run does not
    # end waiting on one of them started last; otherwise the collection's order.
    items.sort(
        key=lambda item: (
            0 if in_spark_group(item.nodeid) else 1 if item.get_closest_marker("slow") else 2
        )
    )


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """--alone with paths that hold none of the ALONE tests: nothing to run is not a failure."""
    if session.config.getoption("alone") and exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        session.exitstatus = pytest.ExitCode.OK


# Tests that build the sdist in the checkout itself (setuptools stages it there, as
# pybmq-<version>/ and pybmq.egg-info/): on one worker, one after the other, or one build
# removes the other's staging folder.
BUILDS_IN_THE_CHECKOUT = ("tests/test_sdist.py::",)


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, which the Spark floor run lacks
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``make test`` (``-n N --dist loadgroup``): one worker runs every Spark test, so one JVM
    (the session's SparkSession) serves them all; every other test goes to whichever worker is
    free. (By id rather than by an ``xdist_group`` marker: pytest 9.2 drops the id suffix
    pytest-xdist 3.8 groups by, pytest-xdist issue 1386.)"""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class SparkTogether(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if in_spark_group(nodeid):
                return "spark"
            if nodeid.startswith(BUILDS_IN_THE_CHECKOUT):
                return "builds"
            return super()._split_scope(nodeid)

    return SparkTogether(config, log)
