"""Finding the broker again after a lost connection, for :class:`~pybmq.client.aio.AsyncSession`.

The engine decides whether to reconnect (its state is RECONNECTING) and restores the session once
connected; this part only picks endpoints (backoff, jitter and isolation from the
:class:`~pybmq.client.reconnect.EndpointSelector`) and opens connections until one succeeds.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable

from pybmq.client.aio_link import Connection, Link
from pybmq.client.engine import ClientEngine
from pybmq.client.fsm import SessionState
from pybmq.client.reconnect import EndpointSelector, ReconnectPolicy
from pybmq.client.tls import connect_failure
from pybmq.uri import parse_broker_url

log = logging.getLogger("pybmq.client.aio")


class Reconnector:
    """The endpoint in use and the reconnect loop; ``connected(connection)`` is the owner's
    (it puts the connection in use and tells the engine)."""

    def __init__(
        self,
        endpoints: tuple[str, ...],
        policy: ReconnectPolicy,
        rng: random.Random,
        *,
        engine: ClientEngine,
        link: Link,
        now: Callable[[], float],
        connected: Callable[[Connection], None],
    ) -> None:
        self._selector = EndpointSelector(endpoints, policy, rng)
        self.endpoint = endpoints[0]  # the endpoint of the current (or last) connection
        self._engine = engine
        self._link = link
        self._now = now
        self._connected = connected
        self._task: asyncio.Task[None] | None = None

    def connection_lost(self) -> None:
        """The connection in use was lost and the engine is RECONNECTING: start looking."""
        self._selector.record_failure(self.endpoint, self._now())
        self._link.abort()
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._reconnect())

    def reconnected(self) -> None:
        """The engine negotiated on the new connection."""
        self._selector.record_success(self.endpoint)

    def cancel(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
        self._task = None

    async def _reconnect(self) -> None:
        """Try endpoints until one connects; the engine then negotiates and reopens. A failed
        negotiation comes back as ConnectionLost."""
        engine = self._engine
        while engine.state is SessionState.RECONNECTING:
            now = self._now()
            endpoint, delay = self._selector.next_attempt(now)
            # A broker that throttled our authentication said when to come back: not sooner.
            delay = max(delay, engine.retry_not_before - now)
            await asyncio.sleep(delay)
            if engine.state is not SessionState.RECONNECTING:
                return
            host, port = parse_broker_url(endpoint)
            self.endpoint = endpoint
            link = self._link
            try:
                connection = await link.connect(host, port)
            except (OSError, asyncio.TimeoutError) as exc:
                log.info(
                    "reconnect failed: %s",
                    connect_failure(endpoint, exc, link.tls is not None, link.connect_timeout),
                )
                self._selector.record_failure(endpoint, self._now())
                continue
            if engine.state is not SessionState.RECONNECTING:
                connection[0].close()
                return
            self._connected(connection)
            return


__all__ = ["Reconnector"]
