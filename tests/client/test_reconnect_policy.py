"""The reconnect policy is pure: time and randomness are passed in, so every decision is checked."""

from __future__ import annotations

import random

import pytest
from pybmq.client.reconnect import EndpointSelector, ReconnectPolicy
from pybmq.errors import UsageError

A, B, C = "tcp://a:1", "tcp://b:1", "tcp://c:1"


def test_backoff_grows_exponentially_and_is_capped_without_jitter() -> None:
    policy = ReconnectPolicy(initial_delay=0.1, max_delay=1.0, multiplier=2.0, jitter=0.0)
    rng = random.Random(1)
    assert [policy.backoff(n, rng) for n in range(6)] == pytest.approx(
        [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    )


def test_jitter_stays_within_its_band_and_varies() -> None:
    policy = ReconnectPolicy(initial_delay=1.0, max_delay=1.0, jitter=0.25)
    rng = random.Random(42)
    delays = [policy.backoff(0, rng) for _ in range(200)]
    assert all(0.75 <= d <= 1.25 for d in delays)
    assert len(set(delays)) > 100  # not a constant


def test_same_seed_same_decisions() -> None:
    def run(seed: int) -> list[tuple[str, float]]:
        selector = EndpointSelector((A, B), ReconnectPolicy(jitter=0.5), random.Random(seed))
        out = []
        for step in range(10):
            endpoint, delay = selector.next_attempt(float(step))
            selector.record_failure(endpoint, float(step))
            out.append((endpoint, delay))
        return out

    assert run(3) == run(3)
    assert run(3) != run(4)


def test_round_robin_over_endpoints_and_success_resets_backoff() -> None:
    policy = ReconnectPolicy(initial_delay=0.1, max_delay=10, jitter=0.0, isolate_after=10)
    selector = EndpointSelector((A, B, C), policy, random.Random(0))
    seen = []
    for _ in range(4):
        endpoint, delay = selector.next_attempt(0.0)
        seen.append((endpoint, delay))
        selector.record_failure(endpoint, 0.0)
    assert seen == [(A, 0.1), (B, 0.2), (C, pytest.approx(0.4)), (A, pytest.approx(0.8))]
    selector.record_success(A)
    assert selector.next_attempt(0.0)[1] == pytest.approx(0.1)


def test_after_a_loss_the_endpoint_that_failed_is_tried_last() -> None:
    """A failover: the session's own broker (A) dies; the first attempt goes to B, not back to A,
    and A is tried again only when no other endpoint is in play."""
    policy = ReconnectPolicy(initial_delay=0.1, max_delay=1.0, jitter=0.0, isolate_after=10)
    selector = EndpointSelector((A, B, C), policy, random.Random(0))
    selector.record_failure(A, 0.0)  # the connection to A was lost
    assert selector.next_attempt(0.0)[0] == B
    selector.record_success(B)
    selector.record_failure(B, 5.0)  # then B dies
    assert selector.next_attempt(5.0)[0] == C
    lone = EndpointSelector((A,), policy, random.Random(0))
    lone.record_failure(A, 0.0)
    assert lone.next_attempt(0.0)[0] == A  # nothing else to try
    isolated = EndpointSelector((A, B), ReconnectPolicy(isolate_after=1), random.Random(0))
    isolated.record_failure(B, 0.0)  # B is set aside (A still in play)
    isolated.record_failure(A, 0.0)  # then A fails: A is the only one in play, so A again
    assert isolated.next_attempt(0.0)[0] == A


def test_failing_endpoint_is_isolated_then_probed_again() -> None:
    policy = ReconnectPolicy(
        initial_delay=0.0, max_delay=0.0, jitter=0.0, isolate_after=2, isolation_period=30.0
    )
    selector = EndpointSelector((A, B), policy, random.Random(0))
    # A fails twice in a row (B in between is not reached: each failure is recorded for A only).
    selector.record_failure(A, 100.0)
    selector.record_failure(A, 100.0)
    assert selector.isolated(100.0) == [A]
    picks = [selector.next_attempt(t)[0] for t in (101.0, 102.0, 103.0)]
    assert picks == [B, B, B]  # A is set aside
    assert selector.isolated(130.0) == []
    assert A in [selector.next_attempt(131.0)[0] for _ in range(2)]  # probed again after the period


def test_the_last_endpoint_in_play_is_never_isolated() -> None:
    # Changed on purpose (issue 25 item 4): isolation is only across several endpoints. With A
    # set aside, B failing keeps being retried at the backoff's pace, never after a 30 s pause.
    policy = ReconnectPolicy(
        initial_delay=0.1, max_delay=0.1, jitter=0.0, isolate_after=1, isolation_period=10.0
    )
    selector = EndpointSelector((A, B), policy, random.Random(0))
    selector.record_failure(A, 0.0)  # isolated until 10
    selector.record_failure(B, 5.0)  # A is aside: B stays in play
    assert selector.isolated(6.0) == [A]
    endpoint, delay = selector.next_attempt(6.0)
    assert endpoint == B and delay == pytest.approx(0.1)


def test_a_single_broker_is_never_isolated_and_retried_at_a_short_capped_pace() -> None:
    # The default policy: 3 quick failures used to set a lone broker aside for 30 s.
    selector = EndpointSelector((A,), ReconnectPolicy(jitter=0.0), random.Random(0))
    now, delays = 0.0, []
    for _ in range(20):
        endpoint, delay = selector.next_attempt(now)
        assert endpoint == A
        delays.append(delay)
        now += delay
        selector.record_failure(A, now)
    assert selector.isolated(now) == []
    assert delays[:5] == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.6])
    assert max(delays) == pytest.approx(2.0)  # the documented cap


def test_default_policy_finds_a_broker_back_within_its_cap_after_a_short_outage() -> None:
    # A broker down from t=0 to t=1.5 (issue 25's 1.5 s restart): the first attempt after it
    # is back comes at most max_delay (with jitter) later, not 30 s.
    policy = ReconnectPolicy()
    for seed in range(20):
        selector = EndpointSelector((A,), policy, random.Random(seed))
        now = 0.0
        while True:
            _endpoint, delay = selector.next_attempt(now)
            now += delay
            if now >= 1.5:
                break
            selector.record_failure(A, now)
        assert now - 1.5 <= policy.max_delay * (1 + policy.jitter)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"initial_delay": -1},
        {"initial_delay": 2, "max_delay": 1},
        {"multiplier": 0.5},
        {"jitter": 1.0},
        {"isolate_after": 0},
    ],
)
def test_invalid_policies_are_usage_errors(kwargs: dict[str, float]) -> None:
    with pytest.raises(UsageError):
        ReconnectPolicy(**kwargs)  # type: ignore[arg-type]


def test_no_endpoints_is_a_usage_error() -> None:
    with pytest.raises(UsageError):
        EndpointSelector(())
