"""The Spark suite's ``bmq_broker_url``: the simulator, and the real broker when
``$BMQ_BROKER_BIN`` names one (tests that inspect ``bmq_sim`` run on the simulator only)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers.brokers import BROKER_KINDS, broker_url_sync


@pytest.fixture(params=BROKER_KINDS)
def bmq_broker_url(request: pytest.FixtureRequest) -> Iterator[str]:
    with broker_url_sync(request) as url:
        yield url
