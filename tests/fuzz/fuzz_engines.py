"""atheris target for both protocol engines (not run in CI).

    pip install atheris && python tests/fuzz/fuzz_engines.py -max_total_time=600

The first input byte picks the side: the client engine (a started session with a queue open for
read and write, reconnect on or off) or the simulator's broker engine (negotiated, or not yet).
The rest is fed in chunks whose sizes come from the input too. A client may only raise
ProtocolError (and must then be STOPPED); the broker must never raise (it closes the session).
Each engine's reader must never hold more than its maximum event size.
"""

from __future__ import annotations

import sys

import atheris  # type: ignore[import-not-found]

with atheris.instrument_imports():
    from pybmq.client.engine import ClientEngine
    from pybmq.client.fsm import SessionState
    from pybmq.client.options import SessionOptions
    from pybmq.errors import ProtocolError
    from pybmq.generated import bmqp_ctrlmsg as ctrl
    from pybmq.generated.bmqp_ctrlmsg_json import encode_json
    from pybmq.generated.wire_codec import EncodingType
    from pybmq.sim.broker import Broker
    from pybmq.wire.control import encode_control_event


def _broker_response() -> bytes:
    identity = ctrl.ClientIdentity(
        protocol_version=1, sdk_version=1, client_type=ctrl.ClientType.E_TCPBROKER, process_name="f",
        pid=1, session_id=1, host_name="h", features="PROTOCOL_ENCODING:JSON;MPS:MESSAGE_PROPERTIES_EX",
        cluster_name="", cluster_node_id=-1, sdk_language=ctrl.ClientLanguage.E_CPP,
        guid_info=ctrl.GuidInfo(client_id="", nano_seconds_from_epoch=0),
    )  # fmt: skip
    response = ctrl.NegotiationMessage(
        broker_response=ctrl.BrokerResponse(
            result=ctrl.Status(category=ctrl.StatusCategory.E_SUCCESS, code=0, message=""),
            protocol_version=1,
            broker_version=1,
            is_deprecated_sdk=False,
            broker_identity=identity,
            heartbeat_interval_ms=3000,
            max_missed_heartbeats=10,
        )
    )
    return encode_control_event(encode_json(response), EncodingType.JSON)


BROKER_RESPONSE = _broker_response()


def _chunks(data: bytes, sizes: bytes) -> list[bytes]:
    out, pos = [], 0
    for size in sizes or b"\xff":
        if pos >= len(data):
            break
        out.append(data[pos : pos + size + 1])
        pos += size + 1
    if pos < len(data):
        out.append(data[pos:])
    return out


def fuzz_client(data: bytes, reconnect: bool) -> None:
    engine = ClientEngine(SessionOptions(reconnect=reconnect))
    engine.start(0.0)
    engine.connection_made(0.0)
    engine.data_to_send()
    engine.receive_data(BROKER_RESPONSE, 0.0)
    engine.open_queue("bmq://bmq.test.mem.priority/fuzz", 0.0, read=True, write=True)
    engine.data_to_send()
    for i, chunk in enumerate(_chunks(data[8:], data[:8])):
        try:
            engine.receive_data(chunk, float(i))
        except ProtocolError:
            assert engine.state is SessionState.STOPPED
            return
        assert engine.incoming_buffered <= engine.channel.reader.max_event_size
        engine.handle_timeout(float(i))
        engine.data_to_send()
        engine.next_events()


def fuzz_broker(data: bytes, negotiate: bool) -> None:
    broker = Broker()
    session = broker.connect("fuzz", 0.0)
    if negotiate:
        identity = ctrl.ClientIdentity(
            protocol_version=1, sdk_version=1, client_type=ctrl.ClientType.E_TCPCLIENT, process_name="f",
            pid=1, session_id=1, host_name="h", features="PROTOCOL_ENCODING:JSON", cluster_name="",
            cluster_node_id=-1, sdk_language=ctrl.ClientLanguage.E_CPP,
            guid_info=ctrl.GuidInfo(client_id="ABCDEF012345", nano_seconds_from_epoch=1),
        )  # fmt: skip
        message = ctrl.NegotiationMessage(client_identity=identity)
        session.receive_data(encode_control_event(encode_json(message), EncodingType.JSON), 0.0)
    for i, chunk in enumerate(_chunks(data[8:], data[:8])):
        session.receive_data(chunk, float(i))  # must not raise
        broker.on_timer(float(i))
        for dirty in broker.take_dirty():
            dirty.data_to_send()
        if session.closed:
            return


def one_input(data: bytes) -> None:
    if not data:
        return
    selector, rest = data[0] % 4, data[1:]
    if selector < 2:
        fuzz_client(rest, reconnect=bool(selector))
    else:
        fuzz_broker(rest, negotiate=selector == 3)


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
