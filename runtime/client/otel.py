"""An OpenTelemetry metrics bridge for ``session.stats()`` (needs the ``otel`` extra:
``pip install 'pybmq[otel]'``, which brings ``opentelemetry-api``).

``instrument(session)`` registers observable instruments on a meter; each collection reads one
``stats()`` snapshot, so nothing is added to the data path. Counters (monotonic, attribute
``queue`` = the queue URI, ``"*"`` for the session's totals): ``pybmq.messages.posted``,
``pybmq.bytes.posted``, ``pybmq.acks``, ``pybmq.nacks``, ``pybmq.messages.received``,
``pybmq.bytes.received``, ``pybmq.confirms``. Gauges (seconds, attributes ``queue`` and
``quantile`` = ``"p50"``/``"p90"``/``"p99"``/``"max"``): ``pybmq.ack.latency``,
``pybmq.confirm.latency``.

Traces are the session's own: ``SessionOptions(tracer_provider=...)`` (see pybmq.client.tracing).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

from pybmq._version import __version__
from pybmq.client.stats import LatencySummary, QueueStats, SessionStats

__all__ = ["HasStats", "instrument"]

try:
    from opentelemetry import metrics
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "pybmq.client.otel needs opentelemetry-api: pip install 'pybmq[otel]'"
    ) from exc

_COUNTERS: tuple[tuple[str, str, str], ...] = (
    ("pybmq.messages.posted", "posted", "{message}"),
    ("pybmq.bytes.posted", "posted_bytes", "By"),
    ("pybmq.acks", "acks", "{message}"),
    ("pybmq.nacks", "nacks", "{message}"),
    ("pybmq.messages.received", "received", "{message}"),
    ("pybmq.bytes.received", "received_bytes", "By"),
    ("pybmq.confirms", "confirmed", "{message}"),
    ("pybmq.messages.duplicates", "duplicates", "{message}"),
)
_LATENCIES = (("pybmq.ack.latency", "ack_latency"), ("pybmq.confirm.latency", "confirm_latency"))
_QUANTILES = ("p50", "p90", "p99", "max")


class HasStats(Protocol):
    def stats(self) -> SessionStats: ...


def instrument(session: HasStats, meter_provider: Any = None) -> None:
    """Publish ``session``'s stats as OpenTelemetry metrics through ``meter_provider`` (default:
    the global one). An AsyncSession, a Session or a compat session's inner AsyncSession."""
    provider = meter_provider if meter_provider is not None else metrics.get_meter_provider()
    meter = provider.get_meter("pybmq", __version__)

    def each_queue() -> Iterable[QueueStats]:
        stats = session.stats()
        return [stats.total, *stats.queues.values()]

    def counter(field: str) -> Callable[[metrics.CallbackOptions], Iterable[metrics.Observation]]:
        def observe(_options: metrics.CallbackOptions) -> Iterable[metrics.Observation]:
            return [metrics.Observation(getattr(q, field), {"queue": q.uri}) for q in each_queue()]

        return observe

    def latency(field: str) -> Callable[[metrics.CallbackOptions], Iterable[metrics.Observation]]:
        def observe(_options: metrics.CallbackOptions) -> Iterable[metrics.Observation]:
            out = []
            for q in each_queue():
                summary: LatencySummary = getattr(q, field)
                for quantile in _QUANTILES:
                    value = getattr(summary, quantile)
                    if value is not None:
                        out.append(
                            metrics.Observation(value, {"queue": q.uri, "quantile": quantile})
                        )
            return out

        return observe

    for name, field, unit in _COUNTERS:
        meter.create_observable_counter(name, callbacks=[counter(field)], unit=unit)
    for name, field in _LATENCIES:
        meter.create_observable_gauge(name, callbacks=[latency(field)], unit="s")
