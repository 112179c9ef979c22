"""When and where to reconnect: a short, capped exponential backoff with jitter over endpoints.

Pure (no clock, no sockets): the caller passes ``now`` and a ``random.Random``, so the policy is
unit-testable and deterministic under a seed.

For a single broker the policy is the official SDKs': retry soon and keep retrying at a short
capped interval (0.1 s doubling to at most 2 s, so a broker restarted within a second is found
again within about a second of coming back). Isolation is only for several endpoints: one that
fails ``isolate_after`` times in a row is set aside for ``isolation_period`` seconds while another
endpoint is still worth trying (the retry-and-isolate pattern of the RocketMQ client), so a dead
broker in the list does not eat every attempt; the last endpoint still in play is never set
aside, so a lost cluster is retried at the backoff's pace, never after a 30 s pause.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from pybmq.errors import UsageError


@dataclass(frozen=True)
class ReconnectPolicy:
    """Backoff and isolation settings; times in seconds."""

    initial_delay: float = 0.1
    max_delay: float = 2.0
    multiplier: float = 2.0
    jitter: float = 0.2  # each delay is scaled by a uniform factor in [1 - jitter, 1 + jitter]
    isolate_after: int = 3  # consecutive failures of one endpoint before it is set aside
    isolation_period: float = 30.0

    def __post_init__(self) -> None:
        if self.initial_delay < 0 or self.max_delay < self.initial_delay:
            raise UsageError("reconnect delays need 0 <= initial_delay <= max_delay")
        if self.multiplier < 1:
            raise UsageError("reconnect multiplier must be >= 1")
        if not 0 <= self.jitter < 1:
            raise UsageError("reconnect jitter must be in [0, 1)")
        if self.isolate_after < 1 or self.isolation_period < 0:
            raise UsageError("isolate_after must be >= 1 and isolation_period >= 0")

    def backoff(self, attempt: int, rng: random.Random) -> float:
        """Delay before attempt number ``attempt`` (0 = first retry after a loss)."""
        base = min(self.max_delay, self.initial_delay * self.multiplier**attempt)
        if self.jitter:
            base *= rng.uniform(1 - self.jitter, 1 + self.jitter)
        return min(base, self.max_delay * (1 + self.jitter))


@dataclass
class _EndpointHealth:
    failures: int = 0
    isolated_until: float = 0.0


@dataclass
class EndpointSelector:
    """Which endpoint to try next and after how long; fed with each attempt's outcome."""

    endpoints: tuple[str, ...]
    policy: ReconnectPolicy = field(default_factory=ReconnectPolicy)
    rng: random.Random = field(default_factory=random.Random)
    attempt: int = 0  # consecutive failed attempts since the last success
    _health: dict[str, _EndpointHealth] = field(default_factory=dict)
    _cursor: int = 0
    # The endpoint that failed last: the next attempt goes elsewhere while another is in play
    # (after a failover, the node that just died is not the first one tried again); once.
    _last_failed: str | None = None

    def __post_init__(self) -> None:
        if not self.endpoints:
            raise UsageError("at least one broker endpoint is needed")
        self._health = {e: _EndpointHealth() for e in self.endpoints}

    def isolated(self, now: float) -> list[str]:
        return [e for e, h in self._health.items() if h.isolated_until > now]

    def next_attempt(self, now: float) -> tuple[str, float]:
        """(endpoint, delay): round-robin over endpoints not isolated at ``now``, the one that
        failed last only if no other is in play; when all are isolated, the one whose isolation
        ends first, no earlier than that."""
        n = len(self.endpoints)
        delay = self.policy.backoff(self.attempt, self.rng)
        for avoid in (self._last_failed, None):
            for i in range(n):
                endpoint = self.endpoints[(self._cursor + i) % n]
                if endpoint != avoid and self._health[endpoint].isolated_until <= now + delay:
                    self._cursor = (self._cursor + i + 1) % n
                    self._last_failed = None  # avoided once: from here on, round-robin again
                    return endpoint, delay
        endpoint = min(self.endpoints, key=lambda e: self._health[e].isolated_until)
        self._cursor = (self.endpoints.index(endpoint) + 1) % n
        return endpoint, max(delay, self._health[endpoint].isolated_until - now)

    def record_failure(self, endpoint: str, now: float) -> None:
        """``endpoint`` failed at ``now``; it is set aside after ``isolate_after`` failures in a
        row, but only while another endpoint is not set aside (never for a single broker)."""
        self.attempt += 1
        self._last_failed = endpoint
        health = self._health[endpoint]
        health.failures += 1
        if health.failures >= self.policy.isolate_after:
            health.failures = 0
            others = [e for e in self.endpoints if e != endpoint]
            if any(self._health[e].isolated_until <= now for e in others):
                health.isolated_until = now + self.policy.isolation_period

    def record_success(self, endpoint: str) -> None:
        self.attempt = 0
        self._last_failed = None
        self._health[endpoint] = _EndpointHealth()
