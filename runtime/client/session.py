"""The session: connect, negotiate, heartbeats, stop, connection loss and reconnect, and the
dispatch of incoming events and timers to the layers below.
"""

from __future__ import annotations

import logging

from pybmq._version import __version__
from pybmq.client.credit import CreditLedger
from pybmq.client.events import (
    Ack,
    AckReceived,
    AckStatus,
    ClientEvent,
    ConnectionLost,
    OperationCompleted,
    Reconnected,
    SessionStarted,
    SessionStopped,
)
from pybmq.client.fsm import (
    QueueInput,
    QueueState,
    RemoteQueueState,
    SessionInput,
    SessionState,
)
from pybmq.client.queues import Queues
from pybmq.client.records import (
    EXPECTED_RESPONSE,
    FEATURE_CONFIGURE_STREAM,
    FEATURES_MPS,
    PROTOCOL_VERSION,
    SDK_VERSION,
    PendingRequest,
    Req,
)
from pybmq.errors import (
    BrokerError,
    ProtocolError,
    PybmqError,
    RequestTimeoutError,
    SessionStoppedError,
)
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.generated.wire_codec import (
    EventType,
)
from pybmq.wire.control import (
    HEARTBEAT_REQ_EVENT,
    HEARTBEAT_RSP_EVENT,
    decode_control_as,
    encode_control,
    has_feature,
    parse_features,
)
from pybmq.wire.framing import Event

log = logging.getLogger("pybmq.client.engine")


class SessionLayer(Queues):
    """The session: connect, negotiate, heartbeats, stop, connection loss and reconnect, and the"""

    def start(self, now: float) -> None:
        """The user wants a session; the shell should now open the transport."""
        self._now = now
        self._session_step(SessionInput.START)

    def connection_made(self, now: float) -> None:
        """The transport is up: send our ClientIdentity."""
        self._now = self._last_received = self._last_probe = now
        self._session_step(SessionInput.CONNECTED)
        self._send_identity()

    def _send_identity(self) -> None:
        self._negotiation_deadline = self._now + self.options.request_timeout
        identity = ctrl.ClientIdentity(
            protocol_version=PROTOCOL_VERSION,
            sdk_version=SDK_VERSION,
            client_type=ctrl.ClientType.E_TCPCLIENT,
            process_name=self.options.process_name,
            pid=self.options.pid,
            session_id=self.options.session_id,
            host_name=self.options.host_name,
            features=self._features(),
            cluster_name="",
            cluster_node_id=-1,
            sdk_language=ctrl.ClientLanguage.E_UNKNOWN,
            guid_info=ctrl.GuidInfo(
                client_id=self._guids.client_id_hex,
                nano_seconds_from_epoch=self._guids.nanoseconds_from_epoch,
            ),
            user_agent=f"pybmq/{__version__}",
        )
        message = ctrl.NegotiationMessage(client_identity=identity)
        self._out.append(encode_control(message, self.options.negotiation_encoding))

    def _features(self) -> str:
        return f"PROTOCOL_ENCODING:{','.join(self.options.encodings)};{FEATURES_MPS}"

    def connection_lost(self, now: float, error: Exception | None = None) -> None:
        """The transport closed. Everything still pending fails; the session is over."""
        self._now = now
        if self.state in (SessionState.STOPPED, SessionState.RECONNECTING):
            return
        if self._can_reconnect():
            self._drop_connection(
                f"connection lost: {error}" if error else "connection closed by the broker"
            )
            return
        if self.state is SessionState.STOPPING and self._disconnect_sent:
            self._finish_stop("stopped")
            return
        reason = f"connection lost: {error}" if error else "connection closed by the broker"
        self._fail_session(reason, SessionStoppedError(reason))

    def _can_reconnect(self) -> bool:
        return self.options.reconnect and (
            self.state is SessionState.STARTED
            or (
                self._restoring
                and self.state
                in (
                    SessionState.AUTHENTICATING,
                    SessionState.NEGOTIATING,
                    SessionState.RECONNECTING,
                )
            )
        )

    def _drop_connection(self, reason: str) -> None:
        """The connection is gone but the session lives on: keep open queues for a reopen, put
        every sent-but-unacknowledged post back in front of the held ones (same GUIDs), fail
        the user operations in flight, and tell the shell to reconnect (ConnectionLost)."""
        self._session_step(SessionInput.CONNECTION_DROPPED)
        self.generation += 1
        self.credit.new_connection()
        self._reader = self._new_reader()
        self._out.clear()
        self._confirms.clear()
        first_drop = not self._restoring
        self._restoring = True
        self._reopening.clear()
        for request in self._requests.values():
            if request.op_id is not None:
                self._complete(request.op_id, SessionStoppedError(f"{reason} ({request.kind})"))
        self._requests.clear()
        self._abandoned_opens.clear()
        self._pending_subscriptions.clear()
        for queue in list(self.queues.values()):
            queue.remote = RemoteQueueState.CLOSED
            if queue.state is QueueState.OPENED:
                if queue.op_id is not None:  # a reconfigure in flight: reopened with old options
                    self._complete(queue.op_id, SessionStoppedError(f"{reason} ({queue.uri})"))
                    queue.op_id = None
                continue
            # Opening: failed. Closing: the lost connection detached it, so the close succeeded.
            error = (
                None
                if queue.state is QueueState.CLOSING
                else SessionStoppedError(f"{reason} ({queue.uri})")
            )
            queue.step(QueueInput.SESSION_DOWN)
            self._finish_queue_op(queue, error)
            self._cancel_posts(
                queue, AckStatus.CANCELED, "queue closed" if error is None else reason
            )
            self._forget(queue)
        if first_drop:
            resend = [
                p.put for p in self._unacked.values() if p.batch is not None and p.put is not None
            ]
            for pending in self._unacked.values():
                pending.batch = None
            self._ack_deadlines.clear()
            self._puts[:0] = resend
            log.warning("connection dropped (%s): %d posts to retransmit", reason, len(resend))
        self._events.append(ConnectionLost(reason))

    def stop(self, now: float) -> int:
        """Start a graceful stop; returns the op id that completes when the session is stopped."""
        self._now = now
        op_id = self._new_op()
        if self.state is SessionState.STOPPED:
            self._events.append(OperationCompleted(op_id))
            return op_id
        if self.state is SessionState.STOPPING:
            # Already on its way: the earlier stop's completion also completes this one.
            self._extra_stop_ops.append(op_id)
            return op_id
        if self.state is not SessionState.STARTED or self._restoring:
            if self.state is SessionState.STARTED:
                self._session_step(SessionInput.CONNECTION_LOST)
            else:
                self._session_step(SessionInput.STOP)
            self._fail_everything("session stopped before it started (or while reconnecting)")
            self._events.append(OperationCompleted(op_id))
            self._events.append(SessionStopped("stopped before the session started"))
            return op_id
        self._session_step(SessionInput.STOP)
        self._stop_op = op_id
        self._stop_deadline = now + self.options.stop_timeout
        for queue in list(self.queues.values()):
            if queue.op_id is not None and queue.state in (
                QueueState.OPENING,
                QueueState.CONFIGURING,
            ):
                self._complete(queue.op_id, SessionStoppedError(f"session stopping: {queue.uri}"))
                queue.op_id = None
            if queue.state is QueueState.OPENED and queue.op_id is None:
                queue.step(QueueInput.CLOSE)
                self._start_close(queue)
        self._maybe_disconnect()
        return op_id

    def _finish_stop(self, reason: str) -> None:
        if self.state is not SessionState.STOPPED:
            self._session_step(
                SessionInput.DISCONNECTED if reason == "stopped" else SessionInput.STOP_TIMED_OUT
            )
        self._fail_everything("session stopped")
        self._reader = self._new_reader()  # free a partial event (it may be large)
        if self._stop_op is not None:
            self._complete(self._stop_op, None)
            self._stop_op = None
        for op_id in self._extra_stop_ops:
            self._complete(op_id, None)
        self._extra_stop_ops.clear()
        self._events.append(SessionStopped(reason))

    def _fail_session(self, reason: str, error: PybmqError) -> None:
        self._session_step(SessionInput.CONNECTION_LOST)
        self._fail_everything(reason)
        self._reader = self._new_reader()  # free a partial event (it may be large)
        if self._stop_op is not None:
            self._complete(self._stop_op, None)
            self._stop_op = None
        for op_id in self._extra_stop_ops:
            self._complete(op_id, None)
        self._extra_stop_ops.clear()
        self._events.append(SessionStopped(reason, error))

    def _fail_everything(self, reason: str) -> None:
        """Every request and post still pending fails with SessionStoppedError / NOT_CONNECTED."""
        for request in self._requests.values():
            if request.op_id is not None and request.op_id != self._stop_op:
                self._complete(request.op_id, SessionStoppedError(f"{reason} ({request.kind})"))
        self._requests.clear()
        self._abandoned_opens.clear()
        self._restoring = False
        self._reopening.clear()
        for queue in self.queues.values():
            if queue.op_id is not None:
                self._complete(queue.op_id, SessionStoppedError(f"{reason} ({queue.uri})"))
                queue.op_id = None
            queue.step(QueueInput.SESSION_DOWN)
            queue.remote = RemoteQueueState.CLOSED
        self._nack_all(AckStatus.NOT_CONNECTED, reason)
        for queue in self.queues.values():
            queue.counters.add_into(self._closed_counters)
        self.queues.clear()
        self._routes.clear()
        self._by_uri.clear()
        self._qids.clear()
        self.credit = CreditLedger()
        self._subscription_handles.clear()
        self._puts.clear()
        self._confirms.clear()

    def data_to_send(self) -> bytes:
        """Everything to write to the socket now (buffered posts and confirms become events)."""
        self._flush_data()
        if not self._out:
            return b""
        data = b"".join(self._out)
        self._out.clear()
        return data

    def next_events(self) -> list[ClientEvent]:
        events = list(self._events)
        self._events.clear()
        return events

    def next_deadline(self) -> float | None:
        """When ``handle_timeout`` must run next (absolute, on the caller's clock), or None."""
        if self.state is SessionState.NEGOTIATING:
            return self._negotiation_deadline
        candidates = [r.deadline for r in self._requests.values()]
        if self._ack_deadlines:
            candidates.append(self._ack_deadlines[0].deadline)
        if self._stop_deadline is not None and self.state is SessionState.STOPPING:
            candidates.append(self._stop_deadline)
        if self.state in (SessionState.STARTED, SessionState.STOPPING):
            candidates.append(self._last_probe + self.heartbeat_interval)
        return min(candidates) if candidates else None

    def handle_timeout(self, now: float) -> None:
        """Expire requests and ACKs whose deadline passed; probe or give up on a silent broker."""
        self._now = now
        if self.state is SessionState.NEGOTIATING and self._negotiation_deadline <= now:
            error = RequestTimeoutError("no BrokerResponse to our ClientIdentity")
            if self._can_reconnect():
                self._drop_connection(str(error))
                return
            self._session_step(SessionInput.NEGOTIATION_FAILED)
            self._events.append(SessionStopped(str(error), error))
            return
        for rid, request in list(self._requests.items()):
            if self.state is SessionState.STOPPED:
                return
            if request.deadline <= now and rid in self._requests:
                del self._requests[rid]
                if request.kind in (Req.OPEN, Req.REOPEN) and request.queue_id in self.queues:
                    # If the broker opens it after all, its late response gets a CloseQueue.
                    abandoned = self.queues[request.queue_id]
                    self._abandoned_opens[rid] = self._handle_parameters(abandoned)
                self._on_request_failed(
                    request, RequestTimeoutError(f"no response to {request.kind} (rId {rid})")
                )
        while self._ack_deadlines and self._ack_deadlines[0].deadline <= now:
            for guid in self._ack_deadlines.popleft().guids:
                pending = self._unacked.pop(guid, None)
                if pending is not None:
                    queue = self.queues.get(pending.queue_id)
                    reason = f"no ACK within {self.options.ack_timeout:g}s"
                    ack = Ack(
                        guid,
                        queue.uri if queue else "",
                        AckStatus.TIMEOUT,
                        local=True,
                        reason=reason,
                    )
                    self._events.append(AckReceived(ack, pending.context))
        stop_deadline = self._stop_deadline
        if (
            self.state is SessionState.STOPPING
            and stop_deadline is not None
            and stop_deadline <= now
        ):
            self._finish_stop("stop timed out: no DisconnectResponse")
            return
        if self.state in (SessionState.STARTED, SessionState.STOPPING):
            silent = now - self._last_received
            if self.reading_paused:
                pass  # we are not reading: the broker's silence tells nothing
            elif silent >= self.heartbeat_interval * self.max_missed_heartbeats:
                reason = f"no traffic from the broker for {silent:.1f}s"
                if self._can_reconnect():
                    self._drop_connection(f"{reason} (missed heartbeats)")
                    return
                self._fail_session(reason, SessionStoppedError(reason))
            elif now - self._last_probe >= self.heartbeat_interval:
                self._last_probe = now
                if silent >= self.heartbeat_interval:
                    self._out.append(HEARTBEAT_REQ_EVENT)
        self._maybe_disconnect()

    def pause_reading(self, paused: bool, now: float) -> None:
        """The shell stopped (True) or resumed (False) reading the socket because the
        application is behind: no heartbeat is missed while we are the ones not reading."""
        if not paused and self.reading_paused:
            self._last_received = now
        self.reading_paused = paused

    def receive_data(self, data: bytes, now: float) -> None:
        """Bytes from the socket. Malformed input stops the session and raises ProtocolError."""
        self._now = self._last_received = now
        if self.stopped or self.state is SessionState.RECONNECTING:
            return
        try:
            for event in self._reader.feed(data):
                self._on_event(event.header.type, event)
                if self.stopped:
                    return
        except ProtocolError as exc:
            if self.state is SessionState.NEGOTIATING:
                # Garbage before any negotiation answer: most likely another protocol (HTTP …).
                exc = ProtocolError(
                    f"the peer is not a BlazingMQ broker (it sent {bytes(data[:16])!r}…): "
                    f"{exc.reason}",
                    offset=exc.offset,
                )
            if not self.stopped:
                self._fail_session(f"protocol error from the broker: {exc}", exc)
            raise exc from None

    def _on_event(self, event_type: int, event: Event) -> None:
        if event_type == EventType.PUSH:
            self._on_push(event)
        elif event_type == EventType.ACK:
            self._on_ack(event)
        elif event_type == EventType.CONTROL:
            self._on_control(event)
        elif event_type == EventType.HEARTBEAT_REQ:
            self._out.append(HEARTBEAT_RSP_EVENT)
        elif event_type == EventType.HEARTBEAT_RSP:
            pass
        else:
            raise ProtocolError(f"unexpected event type {event_type} for a client", offset=0)

    def _on_control(self, event: Event) -> None:
        if self.state is SessionState.NEGOTIATING:
            self._on_negotiation(event)
            return
        message, _encoding = decode_control_as(event, ctrl.ControlMessage)
        rid = message.r_id
        if rid is None:
            log.warning("control message without rId ignored: %s", message.selection)
            return
        request = self._requests.pop(rid, None)
        if request is None:
            abandoned = self._abandoned_opens.pop(rid, None)
            if abandoned is not None and message.selection == "open_queue_response":
                log.warning("late open of %s (rId %s): closing it again", abandoned.uri, rid)
                if self.state in (SessionState.STARTED, SessionState.STOPPING):
                    close = ctrl.CloseQueue(handle_parameters=abandoned, is_final=True)
                    self._request(
                        ctrl.ControlMessage(close_queue=close), Req.CLOSE_ABANDONED, None, None
                    )
                return
            log.warning("late or unknown response (rId %s, %s) dropped", rid, message.selection)
            return
        if message.selection == "status":
            status = message.status
            assert status is not None
            if status.category == ctrl.StatusCategory.E_SUCCESS:
                self._on_request_ok(request, message)
            else:
                self._on_request_failed(
                    request,
                    BrokerError(request.kind, status.category.name, status.code, status.message),
                )
            return
        expected = EXPECTED_RESPONSE[request.kind]
        if message.selection not in expected:
            raise ProtocolError(
                f"response to {request.kind} (rId {rid}) is {message.selection}, expected {' or '.join(expected)}",
                path="ControlMessage",
            )
        self._on_request_ok(request, message)

    def _on_negotiation(self, event: Event) -> None:
        message, encoding = decode_control_as(event, ctrl.NegotiationMessage)
        response = message.broker_response
        if response is None:
            raise ProtocolError(
                f"expected a brokerResponse during negotiation, got {message.selection}",
                path="NegotiationMessage",
            )
        result = response.result
        if result.category != ctrl.StatusCategory.E_SUCCESS:
            error = BrokerError("negotiation", result.category.name, result.code, result.message)
            if self._can_reconnect():
                self._drop_connection(str(error))
                return
            self._session_step(SessionInput.NEGOTIATION_FAILED)
            self._fail_everything("negotiation refused")
            self._events.append(SessionStopped(str(error), error))
            return
        features = response.broker_identity.features
        self.encoding = self._pick_encoding(features, encoding.name)
        self.broker_configure_stream = has_feature(
            features, "SUBSCRIPTIONS", FEATURE_CONFIGURE_STREAM
        )
        # As the C++ SDK (bmqimp_negotiatedchannelfactory.cpp sets the channel's MPS_EX property,
        # bmqimp_brokersession.cpp converts PUTs without it): an older broker gets old-format
        # message properties.
        self.extended_properties = has_feature(features, "MPS", "MESSAGE_PROPERTIES_EX")
        if not self.extended_properties:
            log.info("the broker lacks MPS:MESSAGE_PROPERTIES_EX: posting old-format properties")
        self.heartbeat_interval = max(response.heartbeat_interval_ms, 1) / 1000.0
        self.max_missed_heartbeats = max(response.max_missed_heartbeats, 1)
        self._session_step(SessionInput.NEGOTIATED)
        info = SessionStarted(
            broker_version=response.broker_version,
            protocol_version=response.protocol_version,
            encoding=self.encoding,
            heartbeat_interval_ms=response.heartbeat_interval_ms,
            max_missed_heartbeats=response.max_missed_heartbeats,
        )
        if self._restoring:
            self._events.append(Reconnected(info))
            self._start_reopen()
        else:
            self._events.append(info)

    def _on_request_ok(self, request: PendingRequest, message: ctrl.ControlMessage) -> None:
        # The Disconnect answer ends the session; every other answer belongs to a queue.
        if request.kind == Req.DISCONNECT:
            self._finish_stop("stopped")
            return
        super()._on_request_ok(request, message)

    def _on_request_failed(self, request: PendingRequest, error: PybmqError) -> None:
        if request.kind == Req.DISCONNECT:
            self._finish_stop(f"stopped without DisconnectResponse: {error}")
            return
        super()._on_request_failed(request, error)

    def _pick_encoding(self, features: str, response_encoding: str) -> str:
        """First of our encodings the broker lists; its response's encoding if it lists none."""
        theirs = parse_features(features).get("PROTOCOL_ENCODING", [])
        if not theirs:
            return response_encoding
        for encoding in self.options.encodings:
            if encoding in theirs:
                return encoding
        raise ProtocolError(
            f"no common control encoding: broker offers {theirs}, we accept {list(self.options.encodings)}",
            path="BrokerResponse.brokerIdentity.features",
        )
