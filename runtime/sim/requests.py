"""The control requests a client session serves: open, configure (both forms), close and
disconnect, each answered as a real broker answers (a response, or a failure status).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pybmq.errors import PybmqError
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.generated.wire_codec import DEFAULT_APP_ID
from pybmq.sim import admin
from pybmq.sim.config import (
    FLAG_ADMIN,
    FLAG_READ,
    FLAG_WRITE,
    RESERVED_QUEUE_ID,
)
from pybmq.sim.expressions import ExpressionError, compile_expression
from pybmq.sim.queues import Consumer, SimQueue
from pybmq.sim.routing import (
    FANOUT_APP_IDS,
    ROUTING_FLAGS,
    RoutingMode,
    routing_mode,
)
from pybmq.uri import QUEUE_NAME_MAX_LENGTH, QueueUri, parse_queue_uri

if TYPE_CHECKING:
    from pybmq.sim.auth import SessionAuth
    from pybmq.sim.broker import Broker
    from pybmq.sim.flow import MessageFlow
    from pybmq.wire.channel import Channel

__all__ = [
    "NO_PRIORITY",
    "REQUESTS",
    "QueueHandle",
    "QueueRequests",
    "RequestRefused",
    "check_consumer",
]

log = logging.getLogger("pybmq.sim")


class RequestRefused(PybmqError):
    """A well-formed request the broker turns down; becomes a failure status response with the
    broker's category and code (0 where the broker's own check answers 0, else -1)."""

    def __init__(self, category: str, message: str, code: int = -1) -> None:
        super().__init__(message)
        self.category = category
        self.code = code


# The ConsumerInfo priority that means "no consumer" (bmqp Protocol::k_CONSUMER_PRIORITY_INVALID).
NO_PRIORITY = -(2**31)


def check_consumer(priority: int, count: int, messages: int, size: int) -> None:
    """Refuse what a broker refuses in a consumer's stream parameters, as it refuses it:
    a priority valid only with a positive count (the "no consumer" priority only with a count
    of 0) is ``E_UNKNOWN`` -1; negative flow-control limits are ``E_INVALID_ARGUMENT`` here,
    where a broker fails an assertion and aborts (it takes its whole process down)."""
    if messages < 0 or size < 0:
        raise RequestRefused(
            "E_INVALID_ARGUMENT",
            f"negative flow control (maxUnconfirmedMessages {messages}, maxUnconfirmedBytes "
            f"{size}): a broker aborts on this",
        )
    if (count != 0) if priority == NO_PRIORITY else (count <= 0):
        raise RequestRefused(
            "E_UNKNOWN", "Attempting to configure stream with invalid priority.", code=-1
        )


@dataclass(eq=False)
class QueueHandle:
    """A queue as opened by one session under one queue id."""

    queue_id: int
    uri: QueueUri
    queue: SimQueue
    app_id: str
    sub_id: int
    parameters: ctrl.QueueHandleParameters
    readable: bool
    writable: bool
    # The handle's subscriptions by id (the sId, or the subId for configureQueueStream).
    consumers: dict[int, Consumer] = field(default_factory=dict)


class QueueRequests:
    """The request handlers of a ``ClientSession`` (its base class), with the state they use."""

    broker: Broker
    session_id: int
    client_identity: ctrl.ClientIdentity | None
    auth: SessionAuth | None
    handles: dict[tuple[int, int], QueueHandle]
    by_qid: dict[int, dict[int, QueueHandle]]  # the same handles: qId → subId → handle
    channel: Channel
    flow: MessageFlow
    _now: float

    def open_queue(self, request: ctrl.OpenQueue) -> ctrl.ControlMessage:
        params = request.handle_parameters
        uri = parse_queue_uri(params.uri)
        if uri is None:
            raise RequestRefused("E_REFUSED", f"invalid queue URI {params.uri!r}", code=0)
        if len(uri.queue) > QUEUE_NAME_MAX_LENGTH:  # the broker's URI parser refuses it too
            raise RequestRefused(
                "E_REFUSED", f"queue name exceeds {QUEUE_NAME_MAX_LENGTH} characters", code=0
            )
        mode = routing_mode(uri.domain)
        if mode is None:
            raise RequestRefused("E_UNKNOWN", f"domain {uri.domain!r} does not exist")
        flags = params.flags
        # Flag bits the protocol does not define are ignored, as by a broker.
        if flags & FLAG_ADMIN or not flags & (FLAG_READ | FLAG_WRITE):
            raise RequestRefused("E_INVALID_ARGUMENT", f"invalid queue flags {flags:#x}", code=0)
        readable, writable = bool(flags & FLAG_READ), bool(flags & FLAG_WRITE)
        if (
            (params.read_count > 0) != readable
            or (params.write_count > 0) != writable
            or params.admin_count
        ):
            raise RequestRefused(
                "E_INVALID_ARGUMENT",
                f"counts read={params.read_count} write={params.write_count} admin={params.admin_count} "
                f"do not match flags {flags:#x}",
                code=0,
            )
        if params.q_id >= RESERVED_QUEUE_ID:
            raise RequestRefused(
                "E_INVALID_ARGUMENT", f"queue id {params.q_id} is in the reserved range"
            )
        info = params.sub_id_info
        # The appId comes from subIdInfo (as for a broker); a ?id= in the URI must agree with it.
        app_id = info.app_id if info is not None else (uri.app_id or DEFAULT_APP_ID)
        sub_id = info.sub_id if info is not None else 0
        if uri.app_id is not None and uri.app_id != app_id:
            raise RequestRefused(
                "E_INVALID_ARGUMENT", f"subIdInfo appId {app_id!r} does not match URI {uri.text!r}"
            )
        if (app_id == DEFAULT_APP_ID) != (sub_id == 0):
            raise RequestRefused("E_INVALID_ARGUMENT", f"subId {sub_id} with appId {app_id!r}")
        if writable and app_id != DEFAULT_APP_ID:
            raise RequestRefused(
                "E_INVALID_ARGUMENT", "an appId may not be given when opening for writing"
            )
        if mode is RoutingMode.FANOUT:
            if readable and app_id not in FANOUT_APP_IDS:
                # As a broker: the open succeeds (with an alarm) and the app gets nothing until
                # the domain lists it.
                log.warning(
                    "session %d: %s opened with appId %r, which the domain does not list "
                    "(it lists %s): nothing will be delivered to it",
                    self.session_id,
                    uri.canonical,
                    app_id,
                    ", ".join(FANOUT_APP_IDS),
                )
        elif app_id != DEFAULT_APP_ID:
            # A broker answers an appId on a queue without apps as it answers an unknown queue.
            raise RequestRefused("E_UNKNOWN", f"{mode.value} queues have no appIds; got {app_id!r}")
        if (params.q_id, sub_id) in self.handles:
            raise RequestRefused(
                "E_INVALID_ARGUMENT", f"queue id {params.q_id}, subId {sub_id} is already open"
            )
        for other in self.by_qid.get(params.q_id, {}).values():
            if other.queue.uri != uri.canonical:
                raise RequestRefused(
                    "E_INVALID_ARGUMENT",
                    f"queue id {params.q_id} is already in use for {other.queue.uri}",
                )
        queue = self.broker.store.get_or_create(uri.canonical, mode)
        queue.handles += 1
        handle = QueueHandle(params.q_id, uri, queue, app_id, sub_id, params, readable, writable)
        self.handles[(params.q_id, sub_id)] = handle
        self.by_qid.setdefault(params.q_id, {})[sub_id] = handle
        log.info(
            "session %d: opened %s as queue id %d (flags %#x)",
            self.session_id,
            uri.text,
            params.q_id,
            flags,
        )
        return ctrl.ControlMessage(
            open_queue_response=ctrl.OpenQueueResponse(
                original_request=request,
                routing_configuration=ctrl.RoutingConfiguration(flags=ROUTING_FLAGS[mode]),
                deduplication_time_ms=self.broker.config.deduplication_time_ms,
            )
        )

    def _handle_for_configure(self, q_id: int, app_id: str, sub_id: int | None) -> QueueHandle:
        """The handle a configure request names: by subId (old style) or by appId (new style)."""
        for handle_sub_id, handle in self.by_qid.get(q_id, {}).items():
            if handle.app_id == app_id and sub_id in (None, handle_sub_id):
                return handle
        raise RequestRefused(
            "E_INVALID_ARGUMENT",
            f"configure of queue id {q_id}, appId {app_id!r}, which is not open",
        )

    def configure_queue_stream(self, request: ctrl.ConfigureQueueStream) -> ctrl.ControlMessage:
        params = request.stream_parameters
        info = params.sub_id_info
        handle = self._handle_for_configure(
            request.q_id, info.app_id if info else DEFAULT_APP_ID, info.sub_id if info else 0
        )
        if handle.readable:
            check_consumer(
                params.consumer_priority,
                params.consumer_priority_count,
                params.max_unconfirmed_messages,
                params.max_unconfirmed_bytes,
            )
            self._set_consumers(
                handle,
                [
                    (
                        handle.sub_id,
                        params.consumer_priority,
                        params.max_unconfirmed_messages,
                        params.max_unconfirmed_bytes,
                        None,
                    )
                ],
            )
        return ctrl.ControlMessage(
            configure_queue_stream_response=ctrl.ConfigureQueueStreamResponse(request=request)
        )

    def configure_stream(self, request: ctrl.ConfigureStream) -> ctrl.ControlMessage:
        params = request.stream_parameters
        handle = self._handle_for_configure(request.q_id, params.app_id, None)
        wanted: list[tuple[int, int, int, int, Callable[[Mapping[str, object]], bool] | None]] = []
        for subscription in params.subscriptions:
            if len(subscription.consumers) != 1:
                raise RequestRefused(
                    "E_INVALID_ARGUMENT",
                    f"subscription {subscription.s_id} needs one ConsumerInfo, got {len(subscription.consumers)}",
                )
            matches = None
            if subscription.expression.text:
                try:
                    matches = compile_expression(
                        subscription.expression.text, self.broker.config.subscription_limits
                    )
                except ExpressionError as exc:
                    raise RequestRefused(
                        "E_INVALID_ARGUMENT",
                        f"subscription {subscription.s_id}: invalid expression: {exc}",
                    ) from None
            info = subscription.consumers[0]
            if handle.readable:  # a broker does not look at a writer's
                check_consumer(
                    info.consumer_priority,
                    info.consumer_priority_count,
                    info.max_unconfirmed_messages,
                    info.max_unconfirmed_bytes,
                )
            wanted.append(
                (
                    subscription.s_id,
                    info.consumer_priority,
                    info.max_unconfirmed_messages,
                    info.max_unconfirmed_bytes,
                    matches,
                )
            )
        if len({w[0] for w in wanted}) != len(wanted):
            raise RequestRefused("E_INVALID_ARGUMENT", "subscription ids must be unique")
        if handle.readable:
            self._set_consumers(handle, wanted)
        return ctrl.ControlMessage(
            configure_stream_response=ctrl.ConfigureStreamResponse(request=request)
        )

    def _set_consumers(
        self,
        handle: QueueHandle,
        wanted: list[tuple[int, int, int, int, Callable[[Mapping[str, object]], bool] | None]],
    ) -> None:
        """Make the handle's subscriptions exactly ``wanted`` (id, priority, max messages, max
        bytes, expression)."""
        stream = handle.queue.stream(handle.app_id)
        keep = {w[0] for w in wanted}
        for sub_queue_id in [i for i in handle.consumers if i not in keep]:
            dropped = handle.consumers[sub_queue_id]
            if dropped.unconfirmed:
                # Retired, not detached: the client may still confirm what it holds (it does
                # while closing); what stays unconfirmed is redelivered when the queue closes.
                dropped.max_messages = dropped.max_bytes = 0
                dropped.matches = None
            else:
                self._detach(handle, handle.consumers.pop(sub_queue_id))
        for sub_queue_id, priority, messages, size, matches in wanted:
            existing = handle.consumers.get(sub_queue_id)
            if existing is None:
                consumer = handle.consumers[sub_queue_id] = Consumer(
                    self, handle.queue_id, sub_queue_id, blocked=self.channel.paused
                )
                stream.attach(consumer)
            else:
                consumer = existing
            consumer.priority = priority
            consumer.max_messages = max(messages, 0)
            consumer.max_bytes = max(size, 0)
            consumer.matches = matches
        stream.changed()
        self.flow.touched.add(handle.queue)

    def close_queue(self, request: ctrl.CloseQueue) -> ctrl.ControlMessage:
        params = request.handle_parameters
        key = (params.q_id, params.sub_id_info.sub_id if params.sub_id_info else 0)
        handle = self.handles.get(key)
        if handle is None:
            # A broker answers E_UNKNOWN ("no queue with that id").
            raise RequestRefused(
                "E_UNKNOWN",
                f"close of queue id {key[0]}, subId {key[1]}, which is not open",
            )
        if params.uri != handle.parameters.uri:
            raise RequestRefused(
                "E_INVALID_ARGUMENT",
                f"close of queue id {params.q_id} names {params.uri!r}, opened as {handle.uri.text!r}",
            )
        self._forget(key, handle)
        if request.is_final:
            # As a broker: a final close releases the queue id, with every handle still on it
            # (another appId's, the writer's); they are unknown from now on.
            for sub_id, other in list(self.by_qid.get(key[0], {}).items()):
                log.warning(
                    "session %d: final close of queue id %d also releases %s",
                    self.session_id,
                    key[0],
                    other.uri.text,
                )
                self._forget((key[0], sub_id), other)
        return ctrl.ControlMessage(close_queue_response=ctrl.CloseQueueResponse())

    def _forget(self, key: tuple[int, int], handle: QueueHandle) -> None:
        """Close one handle: detach its consumers and let go of the queue."""
        self._release(handle)
        del self.handles[key]
        same_qid = self.by_qid[key[0]]
        del same_qid[key[1]]
        if not same_qid:
            del self.by_qid[key[0]]
        self.flow.touched.add(handle.queue)  # its messages go to the next consumer
        handle.queue.handles -= 1
        self.broker.store.free_if_unused(handle.queue, self._now)
        log.info("session %d: closed %s (queue id %d)", self.session_id, handle.uri.text, key[0])

    def disconnect(self, request: ctrl.Disconnect) -> ctrl.ControlMessage:
        return ctrl.ControlMessage(disconnect_response=ctrl.DisconnectResponse())

    def _release(self, handle: QueueHandle) -> None:
        """Detach a handle's consumers; their unconfirmed messages go to the next consumer."""
        for consumer in handle.consumers.values():
            self._detach(handle, consumer)
        handle.consumers.clear()

    def _detach(self, handle: QueueHandle, consumer: Consumer) -> None:
        if handle.queue.mode is not RoutingMode.BROADCAST:
            self.broker.stats.redelivered += len(consumer.unconfirmed)
        handle.queue.stream(handle.app_id).detach(consumer)
        # PUSHes not yet written for this consumer: their messages were just returned.
        self.flow.forget(consumer)


REQUESTS: dict[str, Callable[[QueueRequests, Any], ctrl.ControlMessage]] = {
    "open_queue": QueueRequests.open_queue,
    "configure_queue_stream": QueueRequests.configure_queue_stream,
    "configure_stream": QueueRequests.configure_stream,
    "close_queue": QueueRequests.close_queue,
    "disconnect": QueueRequests.disconnect,
    "admin_command": admin.handle_request,
}
