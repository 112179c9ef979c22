"""OpenTelemetry tracing for a session (needs the ``otel`` extra: ``pip install 'pybmq[otel]'``).

This module is imported only when ``SessionOptions.tracing`` or ``tracer_provider`` is set, so a
session without tracing never imports ``opentelemetry``; the shells hold a ``Tracing`` (or None)
and their data paths check that one attribute.

Spans follow OpenTelemetry's messaging semantic conventions (``messaging.system`` =
``"blazingmq"``, ``messaging.destination.name`` = the queue URI, ``messaging.operation.type``,
``messaging.message.id`` = the GUID in hex):

- ``publish <uri>`` (PRODUCER) per post, or per ``post_many`` batch; it ends at the ACK (its
  status in ``messaging.blazingmq.ack.status``; a NACK sets the span's status to ERROR) or, for
  a post asking no ACK, once buffered. Its W3C trace context is written into the message's
  properties ``traceparent`` (and ``tracestate`` when there is one): the names are
  ``SessionOptions.trace_property`` and ``trace_state_property``.
- ``receive <uri>`` (CONSUMER) per delivered message, a child of the producer's context when
  the message carries one (so producer and consumer share one trace), with a link to it too;
  the message's ``trace_context`` is that span's context, for the application's own spans.
- ``settle <uri>`` (CLIENT) per confirm of such a message.
- ``start``, ``stop``, ``open <uri>``, ``configure <uri>``, ``close <uri>`` (CLIENT), and
  ``reconnect`` from the connection's loss to its return, with the outcome as the span status.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from pybmq._version import __version__
from pybmq.client.events import Ack
from pybmq.wire.logbudget import worth_logging
from pybmq.wire.properties import MessageProperties

__all__ = [
    "MAX_TRACEPARENT",
    "MAX_TRACESTATE",
    "MAX_TRACESTATE_MEMBERS",
    "SYSTEM",
    "TRACEPARENT",
    "TRACESTATE_MEMBER",
    "Tracing",
]

try:
    from opentelemetry import context as otel_context
    from opentelemetry import trace
    from opentelemetry.context import Context
    from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("tracing needs opentelemetry-api: pip install 'pybmq[otel]'") from exc

if TYPE_CHECKING:
    from pybmq.client.options import SessionOptions

SYSTEM = "blazingmq"
_PROPAGATOR = TraceContextTextMapPropagator()
log = logging.getLogger("pybmq.client.tracing")

# W3C Trace Context: what a receiving session accepts before it hands a header to the propagator
# (which would log a warning per bad header). traceparent: version-trace id-parent id-flags, and
# for a future version more fields after a dash; tracestate: at most 32 list members of
# key=value, and no more than the 512 characters the standard asks every vendor to pass on.
TRACEPARENT = re.compile(r"[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}(-[0-9a-zA-Z-]*)?")
MAX_TRACEPARENT = 512
TRACESTATE_MEMBER = re.compile(
    r"([a-z0-9][_0-9a-z\-*/]{0,240}@[a-z][_0-9a-z\-*/]{0,13}|[a-z][_0-9a-z\-*/]{0,255})"
    r"=[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]"
)
MAX_TRACESTATE = 512
MAX_TRACESTATE_MEMBERS = 32


def _guid(guid: bytes) -> str:
    return guid.hex().upper()


class Tracing:
    """The spans of one session (see the module docstring)."""

    def __init__(self, options: SessionOptions, host: str, port: int) -> None:
        provider = options.tracer_provider
        if provider is None:
            provider = trace.get_tracer_provider()
        self.tracer = provider.get_tracer("pybmq", __version__)
        self.parent_key = options.trace_property
        self.state_key = options.trace_state_property
        self.server = {"server.address": host, "server.port": port}
        self._lost_at: int | None = None  # ns, while reconnecting
        self.bad_headers = 0  # messages whose trace context could not be read

    def _attributes(self, operation: str, uri: str | None) -> dict[str, Any]:
        attributes: dict[str, Any] = {
            "messaging.system": SYSTEM,
            "messaging.operation.name": operation,
            **self.server,
        }
        if uri is not None:
            attributes["messaging.destination.name"] = uri
        return attributes

    # ------------------------------------------------------------------ producer

    def publish(
        self, uri: str, properties: Mapping[str, Any] | None, count: int = 1
    ) -> tuple[Span, MessageProperties]:
        """A started producer span and ``properties`` with its trace context added."""
        attributes = self._attributes("post", uri)
        attributes["messaging.operation.type"] = "publish"
        if count != 1:
            attributes["messaging.batch.message_count"] = count
        span = self.tracer.start_span(
            f"publish {uri}", kind=SpanKind.PRODUCER, attributes=attributes
        )
        carrier: dict[str, str] = {}
        _PROPAGATOR.inject(carrier, context=trace.set_span_in_context(span))
        # A MessageProperties, not a dict: every traceparent differs, and a dict would fill the
        # publisher's cache of property mappings with entries never seen again.
        if isinstance(properties, MessageProperties):
            traced = MessageProperties({n: (int(t), v) for n, t, v in properties.typed_items()})
        else:
            traced = MessageProperties(properties)
        if "traceparent" in carrier:
            traced.set_string(self.parent_key, carrier["traceparent"])
        if carrier.get("tracestate"):
            traced.set_string(self.state_key, carrier["tracestate"])
        return span, traced

    @staticmethod
    def posted(span: Span, guids: list[bytes] | bytes) -> None:
        """The post was buffered with these GUIDs."""
        if isinstance(guids, bytes):
            span.set_attribute("messaging.message.id", _guid(guids))
        elif len(guids) == 1:
            span.set_attribute("messaging.message.id", _guid(guids[0]))

    @staticmethod
    def failed(span: Span, exc: BaseException) -> None:
        """The post (or operation) raised: the span ends with the error."""
        span.record_exception(exc)
        span.set_status(Status(StatusCode.ERROR, str(exc)))
        span.set_attribute("error.type", type(exc).__name__)
        span.end()

    @staticmethod
    def acked(span: Span, ack: Ack) -> None:
        """End a producer span with the broker's (or the local) ACK status."""
        span.set_attribute("messaging.blazingmq.ack.status", ack.status.name)
        if not ack.ok:
            span.set_status(Status(StatusCode.ERROR, f"NACK {ack.status.name}"))
        span.end()

    @staticmethod
    def current() -> Context:
        """The caller's OpenTelemetry context (what a blocking call hands to the I/O thread)."""
        return otel_context.get_current()

    @staticmethod
    @contextmanager
    def attached(parent: Context | None) -> Iterator[None]:
        """``parent`` made current (on the I/O thread) for the spans started inside."""
        if parent is None:
            yield
            return
        token = otel_context.attach(parent)
        try:
            yield
        finally:
            otel_context.detach(token)

    # ------------------------------------------------------------------ consumer

    def received(self, uri: str, guid: bytes, properties: Mapping[str, Any]) -> Context:
        """Record a ``receive`` span for one delivered message; its context (for children).
        A trace header that is not W3C's (malformed or oversized) is ignored, counted in
        ``bad_headers`` and logged under the log budget, never handed to the propagator."""
        parent: Context | None = None
        links: list[Link] = []
        traceparent = properties.get(self.parent_key) if properties else None
        if isinstance(traceparent, str) and self._valid(guid, self.parent_key, traceparent):
            carrier = {"traceparent": traceparent}
            tracestate = properties.get(self.state_key)
            if isinstance(tracestate, str) and self._valid(guid, self.state_key, tracestate):
                carrier["tracestate"] = tracestate
            parent = _PROPAGATOR.extract(carrier)
            producer = trace.get_current_span(parent).get_span_context()
            if producer.is_valid:
                links.append(Link(producer))
            else:
                parent = None
        attributes = self._attributes("receive", uri)
        attributes["messaging.operation.type"] = "receive"
        attributes["messaging.message.id"] = _guid(guid)
        span = self.tracer.start_span(
            f"receive {uri}",
            # Without the producer's context, a trace of its own (not a child of whatever the
            # loop's callback happened to inherit, such as the session's start span).
            context=parent if parent is not None else Context(),
            kind=SpanKind.CONSUMER,
            attributes=attributes,
            links=links,
        )
        span.end()
        return trace.set_span_in_context(span)

    def _valid(self, guid: bytes, name: str, value: str) -> bool:
        """Whether a trace header has W3C Trace Context's form and size (else counted)."""
        if name == self.parent_key:
            ok = len(value) <= MAX_TRACEPARENT and TRACEPARENT.fullmatch(value) is not None
        else:
            members = [m.strip() for m in value.split(",") if m.strip()]
            ok = (
                len(value) <= MAX_TRACESTATE
                and len(members) <= MAX_TRACESTATE_MEMBERS
                and all(TRACESTATE_MEMBER.fullmatch(m) for m in members)
            )
        if not ok:
            self.unreadable(guid, f"{name} is not a W3C trace header ({len(value)} characters)")
        return ok

    def unreadable(self, guid: bytes, reason: str) -> None:
        """A message's trace context cannot be read (its properties or a trace header are
        malformed or too big): its ``receive`` span has no parent. Counted; logged rarely."""
        self.bad_headers += 1
        if worth_logging(self.bad_headers):
            log.warning(
                "message %s: no trace context: %s (#%d)", guid.hex(), reason, self.bad_headers
            )

    def settled(self, uri: str, guid: bytes, context: Context | None) -> None:
        """Record a ``settle`` span for the confirm of a traced message."""
        attributes = self._attributes("confirm", uri)
        attributes["messaging.operation.type"] = "settle"
        attributes["messaging.message.id"] = _guid(guid)
        self.tracer.start_span(
            f"settle {uri}", context=context, kind=SpanKind.CLIENT, attributes=attributes
        ).end()

    # ------------------------------------------------------------------ session and queues

    @contextmanager
    def operation(self, name: str, uri: str | None = None) -> Iterator[Span]:
        """A CLIENT span around a session or queue operation; an error ends it as ERROR."""
        title = f"{name} {uri}" if uri is not None else name
        with self.tracer.start_as_current_span(
            title,
            kind=SpanKind.CLIENT,
            attributes=self._attributes(name, uri),
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                yield span
            except BaseException as exc:
                span.record_exception(exc)
                span.set_status(Status(StatusCode.ERROR, str(exc)))
                span.set_attribute("error.type", type(exc).__name__)
                category = getattr(exc, "category", None)
                if isinstance(category, str):
                    span.set_attribute("messaging.blazingmq.status", category)
                raise

    def connection_lost(self) -> None:
        """The connection is lost and the session reconnects: the reconnect span starts."""
        if self._lost_at is None:
            self._lost_at = time.time_ns()

    def reconnected(self, endpoint: str, error: str | None = None) -> None:
        """The session is back (or gave up: ``error``): record the reconnect span."""
        started, self._lost_at = self._lost_at, None
        if started is None:
            return
        attributes = self._attributes("reconnect", None)
        attributes["messaging.blazingmq.endpoint"] = endpoint
        span = self.tracer.start_span(
            "reconnect", kind=SpanKind.CLIENT, attributes=attributes, start_time=started
        )
        if error is not None:
            span.set_status(Status(StatusCode.ERROR, error))
        span.end()
