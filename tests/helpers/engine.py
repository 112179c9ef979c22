"""A scripted broker for engine unit tests: it reads what the engine sent and writes replies as
bytes, so the engine is tested exactly as it runs (bytes in, bytes out), with no socket."""

from __future__ import annotations

from pybmq.client.engine import ClientEngine
from pybmq.client.events import ClientEvent, SessionStarted
from pybmq.client.options import SessionOptions
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.generated.wire_codec import EventType
from pybmq.wire.control import HEARTBEAT_REQ_EVENT, decode_control_as, encode_control
from pybmq.wire.framing import Event, EventReader

BROKER_FEATURES = (
    "PROTOCOL_ENCODING:JSON,BER;MPS:MESSAGE_PROPERTIES_EX;SUBSCRIPTIONS:CONFIGURE_STREAM"
)


def sent_events(engine: ClientEngine) -> list[Event]:
    return EventReader().feed(engine.data_to_send())


def control(event: Event) -> ctrl.ControlMessage:
    assert event.header.type == EventType.CONTROL
    return decode_control_as(event, ctrl.ControlMessage)[0]


def broker_response(
    category: ctrl.StatusCategory = ctrl.StatusCategory.E_SUCCESS,
    features: str = BROKER_FEATURES,
    heartbeat_ms: int = 3000,
) -> bytes:
    identity = ctrl.ClientIdentity(
        protocol_version=1,
        sdk_version=999999,
        client_type=ctrl.ClientType.E_TCPBROKER,
        process_name="broker",
        pid=1,
        session_id=1,
        host_name="localhost",
        features=features,
        cluster_name="",
        cluster_node_id=-1,
        sdk_language=ctrl.ClientLanguage.E_CPP,
        guid_info=ctrl.GuidInfo(client_id="", nano_seconds_from_epoch=0),
        user_agent="",
    )
    response = ctrl.BrokerResponse(
        result=ctrl.Status(category=category, code=0 if category == 0 else -1, message=""),
        protocol_version=1,
        broker_version=999999,
        is_deprecated_sdk=False,
        broker_identity=identity,
        heartbeat_interval_ms=heartbeat_ms,
        max_missed_heartbeats=10,
    )
    return encode_control(ctrl.NegotiationMessage(broker_response=response), "JSON")


def started_engine(
    now: float = 0.0, options: SessionOptions | None = None
) -> tuple[ClientEngine, list[ClientEvent]]:
    engine = ClientEngine(options)
    engine.start(now)
    engine.connection_made(now)
    engine.data_to_send()
    engine.receive_data(broker_response(), now)
    events = engine.next_events()
    assert any(isinstance(e, SessionStarted) for e in events)
    return engine, events


def reply(engine: ClientEngine, request: ctrl.ControlMessage, now: float = 0.0) -> None:
    """Answer ``request`` the way a broker does: echo it inside the matching response."""
    engine.receive_data(reply_bytes(request), now)


def reply_bytes(request: ctrl.ControlMessage) -> bytes:
    """The CONTROL event a broker sends back for ``request`` (in JSON)."""
    kind = request.selection
    rid = request.r_id
    if kind == "open_queue":
        assert request.open_queue is not None
        response = ctrl.ControlMessage(
            r_id=rid,
            open_queue_response=ctrl.OpenQueueResponse(
                original_request=request.open_queue,
                routing_configuration=ctrl.RoutingConfiguration(flags=0),
                deduplication_time_ms=300000,
            ),
        )
    elif kind == "configure_stream":
        assert request.configure_stream is not None
        response = ctrl.ControlMessage(
            r_id=rid,
            configure_stream_response=ctrl.ConfigureStreamResponse(
                request=request.configure_stream
            ),
        )
    elif kind == "close_queue":
        response = ctrl.ControlMessage(r_id=rid, close_queue_response=ctrl.CloseQueueResponse())
    elif kind == "disconnect":
        response = ctrl.ControlMessage(r_id=rid, disconnect_response=ctrl.DisconnectResponse())
    else:
        raise AssertionError(f"no scripted reply for {kind}")
    return encode_control(response, "JSON")


def serve_control(engine: ClientEngine, now: float = 0.0) -> list[str]:
    """Answer every control request the engine has sent until it sends none; returns their kinds."""
    kinds = []
    while True:
        requests = [e for e in sent_events(engine) if e.header.type == EventType.CONTROL]
        if not requests:
            return kinds
        for event in requests:
            message = control(event)
            kinds.append(message.selection)
            reply(engine, message, now)


def heartbeat_request() -> bytes:
    return HEARTBEAT_REQ_EVENT
