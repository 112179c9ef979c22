"""The pytest plugin: a fresh simulator, or the real broker, per test.

Installed as a pytest plugin (entry point ``pytest11``), so in any project with pybmq installed:

    def test_my_producer(bmq_broker_url):
        run_my_producer(broker=bmq_broker_url)   # e.g. "tcp://127.0.0.1:40123"

``bmq_sim`` is the running ``ThreadedBrokerSimulator`` (use ``bmq_sim.call(fn)`` to inspect the
broker's queues); it works from both synchronous and asyncio tests. A test can ask for
authentication and TLS with the keywords of ``pybmq sim``'s flags:

    @pytest.mark.bmq_sim(auth=["BASIC:users.txt"], auth_lifetime_ms=60000,
                         tls_cert="cert.pem", tls_key="key.pem", tls_client_ca=None)

(``tls_port=0`` keeps the simulator's port plain and opens a TLS listener beside it:
``bmq_sim.tls_url``.)

The real broker: ``bmq_real_broker`` is a ``RealBroker`` (``pybmq.testing.real_broker``) started
from ``$BMQ_BROKER_BIN`` (a ``bmqbrkr.tsk`` or its launcher) with a configuration pybmq writes; the
test is skipped, with the reason, when that variable is unset. ``bmq_any_broker`` runs a test twice,
against the simulator and against the real broker (``BrokerHandle``, ``pybmq.testing.brokers``);
``bmq_any_broker_url`` is its URL. BASIC authentication for both:

    @pytest.mark.bmq_broker(basic_users={"alice": "S3cret"}, allow_anonymous=False)

and TLS, a listener beside the plain port with a test CA made for the test (the real broker is
then the TLS-capable build of ``$BMQ_BROKER_TLS_BIN``; ``tls_url`` and ``tls_ca`` on both):

    @pytest.mark.bmq_broker(tls=True)
    def test_over_tls(bmq_any_broker):
        options = SessionOptions(tls_ca=str(bmq_any_broker.tls_ca))
        with Session(bmq_any_broker.tls_url, options=options) as session: ...

A replicated cluster: ``bmq_cluster`` is a ``RealCluster`` (``pybmq.testing.cluster``), three
nodes and a proxy by default, settled (an ACTIVE leader and primary) before the test runs, its
storage and logs under the test's temporary folders; skipped, like ``bmq_real_broker``, without
``$BMQ_BROKER_BIN``. Its shape:

    @pytest.mark.bmq_cluster(nodes=5, proxy=False, partitions=2)

Outside pytest, ``pybmq.testing.running_broker`` needs no pytest at all.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pybmq.sim.server import ThreadedBrokerSimulator
    from pybmq.testing.brokers import BrokerHandle
    from pybmq.testing.cluster import RealCluster
    from pybmq.testing.real_broker import RealBroker

BROKER_KINDS = ("sim", "real")


__all__ = [
    "BROKER_KINDS",
    "bmq_any_broker",
    "bmq_any_broker_url",
    "bmq_broker_url",
    "bmq_cluster",
    "bmq_real_broker",
    "bmq_sim",
    "skip_if_sim_only",
]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "bmq_sim(auth, auth_lifetime_ms, tls_cert, tls_key, tls_client_ca, tls_versions, "
        "tls_port): authentication and TLS of the bmq_sim fixture",
    )
    config.addinivalue_line(
        "markers",
        "bmq_broker(basic_users, allow_anonymous, tls): BASIC authentication and a TLS "
        "listener of the bmq_real_broker and bmq_any_broker fixtures",
    )
    config.addinivalue_line(
        "markers",
        "bmq_cluster(nodes, proxy, partitions, ...): the shape of the bmq_cluster fixture "
        "(other keywords: BrokerSettings fields for every broker)",
    )
    config.addinivalue_line(
        "markers",
        "bmq_sim_only(reason): with bmq_any_broker, run only against the simulator (the test "
        "uses what only the simulator has: fault injection, its statistics)",
    )


@pytest.fixture
def bmq_sim(request: pytest.FixtureRequest) -> Iterator[ThreadedBrokerSimulator]:
    """A broker simulator on 127.0.0.1 and an ephemeral port, stopped after the test."""
    # Imported late: plugin loading stays cheap.
    from pybmq.sim.config import BrokerConfig
    from pybmq.sim.server import ThreadedBrokerSimulator
    from pybmq.sim.tls import security_settings

    marker = request.node.get_closest_marker("bmq_sim")
    settings = dict(marker.kwargs) if marker else {}
    tls_port = settings.pop("tls_port", None)
    auth, tls = security_settings(**settings)
    sim = ThreadedBrokerSimulator(BrokerConfig(auth=auth), tls=tls, tls_port=tls_port)
    sim.start()
    try:
        yield sim
    finally:
        sim.stop()


@pytest.fixture
def bmq_broker_url(bmq_sim: ThreadedBrokerSimulator) -> str:
    """``tcp://127.0.0.1:<port>`` of a fresh simulator (TLS or not, clients use this URL)."""
    return bmq_sim.url


def _broker_options(request: pytest.FixtureRequest) -> dict[str, Any]:
    marker = request.node.get_closest_marker("bmq_broker")
    return dict(marker.kwargs) if marker else {}


@pytest.fixture
def bmq_real_broker(request: pytest.FixtureRequest) -> Iterator[RealBroker]:
    """A real broker on 127.0.0.1 and an ephemeral port, in a temporary folder, stopped after
    the test; the test is skipped when ``$BMQ_BROKER_BIN`` is unset (with the marker's
    ``tls=True``: ``$BMQ_BROKER_TLS_BIN``)."""
    from pybmq.testing.brokers import NO_BROKER_REASON, NO_TLS_BROKER_REASON
    from pybmq.testing.real_broker import RealBroker, broker_executable

    options = _broker_options(request)
    tls = bool(options.get("tls"))
    executable = broker_executable(tls)
    if executable is None:
        pytest.skip(NO_TLS_BROKER_REASON if tls else NO_BROKER_REASON)
    with RealBroker(executable, **options) as broker:
        yield broker


@pytest.fixture
def bmq_cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RealCluster]:
    """A settled cluster of real brokers (3 nodes and a proxy unless the test's
    ``bmq_cluster`` marker says otherwise) on ephemeral 127.0.0.1 ports, stopped after the
    test; its storage and logs stay in pytest's temporary folders (the last runs' are kept).
    Skipped when ``$BMQ_BROKER_BIN`` is unset."""
    from pybmq.testing.brokers import NO_BROKER_REASON
    from pybmq.testing.cluster import RealCluster
    from pybmq.testing.real_broker import broker_executable

    executable = broker_executable()
    if executable is None:
        pytest.skip(NO_BROKER_REASON)
    marker = request.node.get_closest_marker("bmq_cluster")
    options = dict(marker.kwargs) if marker else {}
    folder = tmp_path_factory.mktemp("bmq-cluster")
    with RealCluster(executable, folder, **options) as cluster:
        yield cluster


def skip_if_sim_only(request: pytest.FixtureRequest) -> None:
    """Skip the real-broker run of a test marked ``bmq_sim_only``, with its reason."""
    marker = request.node.get_closest_marker("bmq_sim_only")
    if marker is not None and getattr(request, "param", None) == "real":
        reason = marker.args[0] if marker.args else marker.kwargs.get("reason", "")
        pytest.skip(f"simulator only: {reason}" if reason else "simulator only")


@pytest.fixture(params=BROKER_KINDS)
def bmq_any_broker(request: pytest.FixtureRequest) -> Iterator[BrokerHandle]:
    """The test once against the simulator and once against the real broker (skipped, with
    the reason, when ``$BMQ_BROKER_BIN`` is unset)."""
    from pybmq.testing.brokers import BrokerUnavailable, running_broker

    skip_if_sim_only(request)
    with contextlib.ExitStack() as stack:
        try:
            broker = stack.enter_context(running_broker(request.param, **_broker_options(request)))
        except BrokerUnavailable as exc:
            pytest.skip(str(exc))
        yield broker


@pytest.fixture
def bmq_any_broker_url(bmq_any_broker: BrokerHandle) -> str:
    """``tcp://127.0.0.1:<port>`` of ``bmq_any_broker``."""
    return bmq_any_broker.url
