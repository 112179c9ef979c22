"""Programs written against the official ``blazingmq`` API, run unchanged on either SDK.

Each scenario takes the SDK module (``blazingmq`` or ``pybmq.compat``), a broker URL and a tag
(keeps queue names apart between runs) and returns what a user could observe — event reprs,
exception types and messages, payloads, properties, thread facts — as JSON-able data. The
parity test (tests/interop/test_compat_parity.py) runs every scenario under both SDKs in
subprocesses and compares; tests/test_compat.py runs them on ``pybmq.compat`` in-process and checks
the documented values.

    python compat_scenarios.py MODULE SCENARIO BROKER_URL TAG    # prints one JSON line
"""

from __future__ import annotations

import importlib
import json
import re
import socket
import sys
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

WAIT = 20.0  # seconds: every wait is bounded; a scenario that times out reports it
_GUID = re.compile(r"\[[0-9A-F]{32}\]")


def masked(text: str) -> str:
    """A repr with its GUID replaced (GUIDs differ run to run)."""
    return _GUID.sub("[GUID]", text)


def outcome(fn: Callable[[], object]) -> list[str]:
    """``["ok"]`` or ``[exception type, message up to its second ': ']`` (the detail after the
    status name is the broker's or SDK's own prose, which the drop-in does not copy)."""
    try:
        fn()
    except Exception as exc:  # the point is to record what was raised
        return [type(exc).__name__, ": ".join(str(exc).split(": ")[:2])]
    return ["ok"]


class Recorder:
    """Callbacks that record everything in arrival order, with the thread each ran on."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self.threads: set[int] = set()
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.messages: list[Any] = []
        self.acks: list[Any] = []

    def _add(self, item: str) -> None:
        with self.changed:
            self.items.append(item)
            self.threads.add(threading.get_ident())
            self.changed.notify_all()

    def on_event(self, event: Any) -> None:
        self._add(repr(event))

    def on_message(self, message: Any, handle: Any) -> None:
        self.messages.append((message, handle))
        self._add(f"message {message.data[:20]!r}")

    def on_ack(self, ack: Any) -> None:
        self.acks.append(ack)
        self._add(f"ack {ack.status.name}")

    def wait_for(self, predicate: Callable[[list[str]], bool]) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: predicate(self.items), WAIT)

    def wait_count(self, prefix: str, n: int) -> bool:
        return self.wait_for(lambda items: sum(1 for i in items if i.startswith(prefix)) >= n)

    def callback_threads(self) -> dict[str, bool]:
        return {
            "one_thread": len(self.threads) == 1,
            "not_caller": threading.get_ident() not in self.threads,
        }


def _queue(tag: str, name: str, domain: str = "bmq.test.mem.priority") -> str:
    return f"bmq://{domain}/compat-{tag}-{name}"


# --------------------------------------------------------------------------- scenarios


def producer_consumer(bmq: ModuleType, broker: str, tag: str) -> dict[str, Any]:
    """The documented pattern: a consumer with on_message confirming through its MessageHandle,
    a producer posting with properties, type overrides and on_ack."""
    uri = _queue(tag, "pc")
    consumer, producer = Recorder(), Recorder()
    out: dict[str, Any] = {}
    with bmq.Session(consumer.on_event, on_message=consumer.on_message, broker=broker) as c_session:
        c_session.open_queue(uri, read=True)
        with bmq.Session(producer.on_event, broker=broker) as p_session:
            p_session.open_queue(uri, write=True)
            for i in range(5):
                p_session.post(
                    uri,
                    f"message {i}".encode(),
                    properties={
                        "n": i,
                        "name": f"m{i}",
                        "flag": i % 2 == 0,
                        "blob": b"\x00\xff",
                        "c": b"A",
                        "s": -i,
                    },
                    property_type_overrides={
                        "s": bmq.PropertyType.SHORT,
                        "c": bmq.PropertyType.CHAR,
                        "n": bmq.PropertyType.INT32,
                    },
                    on_ack=producer.on_ack,
                )
            out["acks_arrived"] = producer.wait_count("ack", 5)
            out["messages_arrived"] = consumer.wait_count("message", 5)
            for _, handle in consumer.messages:
                handle.confirm()
            p_session.close_queue(uri)
        c_session.close_queue(uri)
    out["producer_callbacks"] = producer.items
    out["consumer_callbacks"] = consumer.items
    out["ack_reprs"] = [masked(repr(a)) for a in producer.acks]
    out["ack_status"] = [a.status is bmq.AckStatus.SUCCESS for a in producer.acks]
    out["guids_match"] = {a.guid for a in producer.acks} == {m.guid for m, _ in consumer.messages}
    out["messages"] = [
        {
            "repr": masked(repr(m)),
            "handle": masked(repr(h)),
            "data": m.data.decode(),
            "queue_uri": m.queue_uri == uri,
            "properties": {
                k: (v.hex() if isinstance(v, bytes) else v) for k, v in sorted(m.properties.items())
            },
            "types": {k: t.name for k, t in sorted(m.property_types.items())},
        }
        for m, h in consumer.messages
    ]
    out["producer_threads"] = producer.callback_threads()
    out["consumer_threads"] = consumer.callback_threads()
    return out


def misuse(bmq: ModuleType, broker: str, tag: str) -> dict[str, Any]:
    """The errors raised for the usual mistakes."""
    uri, reader = _queue(tag, "w"), _queue(tag, "r")
    rec = Recorder()
    session = bmq.Session(rec.on_event, on_message=rec.on_message, broker=broker)
    PT = bmq.PropertyType
    cases: dict[str, Callable[[], object]] = {
        "post_not_open": lambda: session.post(uri, b"x"),
        "options_not_open": lambda: session.get_queue_options(uri),
        "close_not_open": lambda: session.close_queue(uri),
        "configure_not_open": lambda: session.configure_queue(uri, bmq.QueueOptions()),
        "bad_uri": lambda: session.open_queue("not a uri", write=True),
        "no_queue_name": lambda: session.open_queue("bmq://only.domain", write=True),
        "unknown_domain": lambda: session.open_queue("bmq://bmq.no.such.domain/q", write=True),
        "neither_read_nor_write": lambda: session.open_queue(uri),
        "open_writer": lambda: session.open_queue(uri, write=True),
        "open_twice": lambda: session.open_queue(uri, write=True),
        "open_reader": lambda: session.open_queue(reader, read=True),
        "post_to_reader": lambda: session.post(reader, b"x"),
        "float_property": lambda: session.post(uri, b"x", properties={"a": 1.5}),
        "override_missing": lambda: session.post(
            uri, b"x", properties={"a": 1}, property_type_overrides={"b": PT.INT32}
        ),
        "override_only": lambda: session.post(uri, b"x", property_type_overrides={"a": PT.INT32}),
        "override_wrong_type": lambda: session.post(
            uri, b"x", properties={"a": "s"}, property_type_overrides={"a": PT.INT32}
        ),
        "short_out_of_range": lambda: session.post(
            uri, b"x", properties={"a": 100000}, property_type_overrides={"a": PT.SHORT}
        ),
        "int64_out_of_range": lambda: session.post(uri, b"x", properties={"a": 2**63}),
        "char_from_int": lambda: session.post(
            uri, b"x", properties={"a": 65}, property_type_overrides={"a": PT.CHAR}
        ),
        "char_two_bytes": lambda: session.post(
            uri, b"x", properties={"a": b"AB"}, property_type_overrides={"a": PT.CHAR}
        ),
        "bool_from_int": lambda: session.post(
            uri, b"x", properties={"a": 1}, property_type_overrides={"a": PT.BOOL}
        ),
        "binary_from_str": lambda: session.post(
            uri, b"x", properties={"a": "s"}, property_type_overrides={"a": PT.BINARY}
        ),
        "string_from_bytes": lambda: session.post(
            uri, b"x", properties={"a": b"s"}, property_type_overrides={"a": PT.STRING}
        ),
        "str_payload": lambda: session.post(uri, "text"),
        "bytearray_payload": lambda: session.post(uri, bytearray(b"x")),
        "empty_payload": lambda: session.post(uri, b""),
        "bytes_uri": lambda: session.post(uri.encode(), b"x"),
        "configure_writer": lambda: session.configure_queue(
            uri, bmq.QueueOptions(max_unconfirmed_messages=5)
        ),
        "configure_priority_str": lambda: session.configure_queue(
            reader, bmq.QueueOptions(consumer_priority="x")
        ),
        "configure_priority_huge": lambda: session.configure_queue(
            reader, bmq.QueueOptions(consumer_priority=2**40)
        ),
        "configure_negative": lambda: session.configure_queue(
            reader, bmq.QueueOptions(max_unconfirmed_messages=-1)
        ),
        "open_timeout_zero": lambda: session.open_queue(_queue(tag, "t"), write=True, timeout=0),
        "suspend_without_monitor": lambda: session.open_queue(
            _queue(tag, "s"), write=True, options=bmq.QueueOptions(suspends_on_bad_host_health=True)
        ),
        "confirm_not_a_message": lambda: session.confirm(5),
        "message_constructor": lambda: bmq.Message(),
        "ack_constructor": lambda: bmq.Ack(),
        "handle_constructor": lambda: bmq.MessageHandle(),
        "close_writer": lambda: session.close_queue(uri),
        "close_twice": lambda: session.close_queue(uri),
        "post_after_close": lambda: session.post(uri, b"x"),
        "stop": session.stop,
        "stop_again": session.stop,
        "open_after_stop": lambda: session.open_queue(uri, write=True),
        "post_after_stop": lambda: session.post(uri, b"x"),
    }
    return {name: outcome(fn) for name, fn in cases.items()} | {"events": rec.items}


def construction_errors(bmq: ModuleType, broker: str, tag: str) -> dict[str, Any]:
    """What the Session constructor refuses, before or while connecting."""
    on_event = Recorder().on_event
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        closed = f"tcp://127.0.0.1:{probe.getsockname()[1]}"
    cases: dict[str, Callable[[], object]] = {
        "timeout_zero": lambda: bmq.Session(on_event, broker=broker, timeout=0),
        "negative_connect_timeout": lambda: bmq.Session(
            on_event, broker=broker, timeout=bmq.Timeouts(connect_timeout=-1)
        ),
        "negative_stats_interval": lambda: bmq.Session(
            on_event, broker=broker, stats_dump_interval=-1
        ),
        "bad_monitor": lambda: bmq.Session(on_event, broker=broker, host_health_monitor="x"),
        "no_event_callback": lambda: bmq.Session(None, broker=broker),
        "no_compression": lambda: bmq.Session(
            on_event, broker=broker, message_compression_algorithm=None
        ),
        "bad_broker_uri": lambda: bmq.Session(on_event, broker="http://nowhere"),
        "unreachable": lambda: bmq.Session(
            on_event, broker=closed, timeout=bmq.Timeouts(connect_timeout=1.0)
        ),
    }
    return {name: outcome(fn) for name, fn in cases.items()}


def values(bmq: ModuleType, broker: str, tag: str) -> dict[str, Any]:
    """Value types: repr, equality, defaults; session events' repr and equality."""
    se = bmq.session_events
    return {
        "queue_options": [repr(bmq.QueueOptions()), repr(bmq.QueueOptions(1, 2, 3, True))],
        "queue_options_eq": [
            bmq.QueueOptions(1) == bmq.QueueOptions(1),
            bmq.QueueOptions(1) == bmq.QueueOptions(2),
            bmq.QueueOptions() == None,  # noqa: E711
        ],
        "defaults": [
            bmq.QueueOptions.DEFAULT_MAX_UNCONFIRMED_MESSAGES,
            bmq.QueueOptions.DEFAULT_MAX_UNCONFIRMED_BYTES,
            bmq.QueueOptions.DEFAULT_CONSUMER_PRIORITY,
            bmq.QueueOptions.DEFAULT_SUSPENDS_ON_BAD_HOST_HEALTH,
        ],
        "timeouts": [
            repr(bmq.Timeouts()),
            repr(bmq.Timeouts(1.0, close_queue_timeout=2)),
            bmq.Timeouts(3) == bmq.Timeouts(3),
        ],
        "session_options": [
            repr(bmq.SessionOptions()),
            repr(bmq.SessionOptions(num_processing_threads=2, stats_dump_interval=30.0)),
            bmq.SessionOptions(blob_buffer_size=4) == bmq.SessionOptions(blob_buffer_size=4),
        ],
        "monitor": repr(bmq.BasicHealthMonitor()),
        "enums": [
            repr(bmq.AckStatus.SUCCESS),
            repr(bmq.PropertyType.INT32),
            repr(bmq.CompressionAlgorithmType.ZLIB),
        ],
        "enum_members": [
            [m.name for m in bmq.AckStatus],
            [m.name for m in bmq.PropertyType],
            [m.name for m in bmq.CompressionAlgorithmType],
        ],
        "events": [
            repr(se.Connected(None)),
            repr(se.Error("bad thing")),
            repr(se.QueueSuspended("bmq://d/q")),
            repr(se.QueueReopenFailed("bmq://d/q", "why")),
            str(se.ConnectionLost(None)),
        ],
        "events_eq": [
            se.Connected(None) == se.Connected(None),
            se.Connected(None) == se.Disconnected(None),
            se.Error("a") == se.Error("b"),
            se.QueueResumed("bmq://d/q") == se.QueueResumed("bmq://d/q"),
            se.QueueResumed("bmq://d/q") == se.QueueResumed("bmq://d/other"),
            se.QueueResumed("bmq://d/q") != se.QueueSuspended("bmq://d/q"),
            se.Connected(None) == "<Connected>",
        ],
        "event_classes": sorted(
            n
            for n in dir(se)
            if isinstance(getattr(se, n), type) and issubclass(getattr(se, n), se.SessionEvent)
        ),
        "exceptions": [
            issubclass(bmq.exceptions.BrokerTimeoutError, bmq.Error),
            bmq.exceptions.Error is bmq.Error,
        ],
        "all": sorted(bmq.__all__),
    }


def queue_options(bmq: ModuleType, broker: str, tag: str) -> dict[str, Any]:
    """open_queue defaults, configure_queue with partial options, get_queue_options round trips;
    Session.with_options."""
    reader, writer = _queue(tag, "qo-r"), _queue(tag, "qo-w")
    rec = Recorder()
    options = bmq.SessionOptions(
        timeouts=bmq.Timeouts(open_queue_timeout=30.0), num_processing_threads=1
    )
    out: dict[str, Any] = {}
    with bmq.Session.with_options(rec.on_event, rec.on_message, broker, options) as session:
        session.open_queue(reader, read=True, options=bmq.QueueOptions(max_unconfirmed_messages=7))
        session.open_queue(writer, write=True)
        out["reader_opened"] = repr(session.get_queue_options(reader))
        out["writer_opened"] = repr(session.get_queue_options(writer))
        session.configure_queue(reader, bmq.QueueOptions(consumer_priority=3))
        out["reader_configured"] = repr(session.get_queue_options(reader))
        session.configure_queue(
            reader,
            bmq.QueueOptions(max_unconfirmed_bytes=1024, max_unconfirmed_messages=2),
            timeout=10.0,
        )
        out["reader_reconfigured"] = repr(session.get_queue_options(reader))
        session.configure_queue(writer, bmq.QueueOptions(max_unconfirmed_messages=5))
        out["writer_configured"] = repr(session.get_queue_options(writer))
        out["equal"] = session.get_queue_options(reader) == bmq.QueueOptions(2, 1024, 3, False)
        session.close_queue(reader)
        session.open_queue(reader, read=True)  # a closed URI can be opened again, with defaults
        out["reopened"] = repr(session.get_queue_options(reader))
    out["events"] = rec.items
    return out


def compression(bmq: ModuleType, broker: str, tag: str) -> dict[str, Any]:
    """ZLIB sessions: large and small payloads, with properties, arrive unchanged."""
    uri = _queue(tag, "zlib")
    rec = Recorder()
    payloads = [bytes(range(256)) * 40, b"small", b"z" * 5000]
    with bmq.Session(
        rec.on_event,
        on_message=rec.on_message,
        broker=broker,
        message_compression_algorithm=bmq.CompressionAlgorithmType.ZLIB,
    ) as session:
        session.open_queue(uri, read=True, write=True)
        for i, payload in enumerate(payloads):
            session.post(uri, payload, properties={"i": i}, on_ack=rec.on_ack)
        arrived = rec.wait_count("message", 3) and rec.wait_count("ack", 3)
        for _, handle in rec.messages:
            handle.confirm()
        received = sorted(
            (m.properties["i"], m.data == payloads[m.properties["i"]]) for m, _ in rec.messages
        )
    return {"arrived": arrived, "received": received, "acks": [a.status.name for a in rec.acks]}


def callbacks(bmq: ModuleType, broker: str, tag: str) -> dict[str, Any]:
    """Posting from on_ack and confirming from on_message are allowed (they never block)."""
    uri = _queue(tag, "cb")
    rec = Recorder()
    results: list[str] = []

    def on_ack(ack: Any) -> None:
        if not rec.acks:
            results.append(outcome(lambda: session.post(uri, b"second", on_ack=on_ack))[0])
        rec.on_ack(ack)  # recorded last: the main thread may stop the session once it sees it

    def on_message(message: Any, handle: Any) -> None:
        results.append(outcome(lambda: session.confirm(message))[0])
        rec.on_message(message, handle)

    with bmq.Session(rec.on_event, on_message=on_message, broker=broker) as session:
        session.open_queue(uri, read=True, write=True)
        session.post(uri, b"first", on_ack=on_ack)
        arrived = rec.wait_count("ack", 2) and rec.wait_count("message", 2)
    return {
        "arrived": arrived,
        "results": results,
        "threads": rec.callback_threads(),
        "events": rec.items[:1] + rec.items[-1:],
    }


def host_health(bmq: ModuleType, broker: str, tag: str) -> dict[str, Any]:
    """A BasicHealthMonitor suspends sensitive queues: posts fail, messages wait until resumed."""
    uri, other = _queue(tag, "hh"), _queue(tag, "hh-plain")
    monitor = bmq.BasicHealthMonitor()
    rec, producer = Recorder(), Recorder()
    out: dict[str, Any] = {}
    sensitive = bmq.QueueOptions(suspends_on_bad_host_health=True)
    with (
        bmq.Session(
            rec.on_event, on_message=rec.on_message, broker=broker, host_health_monitor=monitor
        ) as session,
        bmq.Session(producer.on_event, broker=broker) as p_session,
    ):
        session.open_queue(uri, read=True, write=True, options=sensitive)
        session.open_queue(other, write=True)
        p_session.open_queue(uri, write=True)
        out["options"] = repr(session.get_queue_options(uri))
        monitor.set_unhealthy()
        out["suspended_seen"] = rec.wait_count("<QueueSuspended", 1)
        out["post_suspended"] = outcome(lambda: session.post(uri, b"x"))
        out["post_insensitive"] = outcome(lambda: session.post(other, b"x"))
        p_session.post(uri, b"while suspended", on_ack=producer.on_ack)
        out["acked"] = producer.wait_count("ack", 1)
        monitor.set_healthy()
        out["message_after_resume"] = rec.wait_count("message", 1)
        for _, handle in rec.messages:
            handle.confirm()
        out["post_resumed"] = outcome(lambda: session.post(uri, b"y"))
    out["sequence"] = rec.items
    return out


def nacks(bmq: ModuleType, broker: str, tag: str) -> dict[str, Any]:
    """A broker refusal (the test broker NACKs queues named ``...-nack-<code>``) reaches on_ack."""
    rec = Recorder()
    uris = [_queue(tag, f"nack-{code}") for code in (1, 2, 6, 7)]
    with bmq.Session(rec.on_event, broker=broker) as session:
        for uri in uris:
            session.open_queue(uri, write=True)
            session.post(uri, b"refused", on_ack=rec.on_ack)
        arrived = rec.wait_count("ack", len(uris))
    return {
        "arrived": arrived,
        "acks": sorted(masked(repr(a)) for a in rec.acks),
        "statuses": sorted(a.status.name for a in rec.acks),
        "have_guid": [a.guid is not None for a in rec.acks],
    }


def broker_timeout(bmq: ModuleType, broker: str, tag: str) -> dict[str, Any]:
    """The test broker never answers opening a queue named ``...-hang-...``: BrokerTimeoutError
    after the call's (or the session's) timeout; the session goes on working."""
    rec = Recorder()
    out: dict[str, Any] = {}
    with bmq.Session(
        rec.on_event, broker=broker, timeout=bmq.Timeouts(open_queue_timeout=0.5)
    ) as session:
        out["session_timeout"] = outcome(
            lambda: session.open_queue(_queue(tag, "hang-a"), write=True)
        )
        out["call_timeout"] = outcome(
            lambda: session.open_queue(_queue(tag, "hang-b"), write=True, timeout=0.3)
        )
        hung = _queue(tag, "hang-a")
        out["post_after"] = outcome(lambda: session.post(hung, b"x"))
        out["options_after"] = outcome(lambda: session.get_queue_options(hung))
        out["configure_after"] = outcome(lambda: session.configure_queue(hung, bmq.QueueOptions()))
        out["open_again"] = outcome(lambda: session.open_queue(hung, write=True, timeout=0.3))
        out["close_after"] = outcome(lambda: session.close_queue(hung, timeout=0.3))
        out["other_queue"] = outcome(lambda: session.open_queue(_queue(tag, "fine"), write=True))
    out["events"] = rec.items
    return out


def documented_patterns(bmq: ModuleType, broker: str, tag: str) -> dict[str, Any]:
    """The usage patterns of the official guide: a producer waiting on a threading.Event bound
    with functools.partial; a consumer handing messages to the main thread through a queue.Queue
    and confirming there with Session.confirm; pausing delivery with QueueOptions(0, 0, 0) before
    closing; ``log_session_event`` as the event callback."""
    import functools
    import queue as queue_module

    uri = _queue(tag, "guide")
    out: dict[str, Any] = {}
    inbox: queue_module.Queue[Any] = queue_module.Queue()
    with bmq.Session(
        bmq.session_events.log_session_event,
        on_message=lambda message, handle: inbox.put(message),
        broker=broker,
    ) as consumer:
        consumer.open_queue(uri, read=True, options=bmq.QueueOptions(max_unconfirmed_messages=10))
        with bmq.Session(bmq.session_events.log_session_event, broker=broker) as producer:
            producer.open_queue(uri, write=True)
            acks: list[str] = []
            for i in range(3):
                acked = threading.Event()

                def on_ack(event: threading.Event, ack: Any) -> None:
                    acks.append(ack.status.name)
                    event.set()

                producer.post(uri, f"guide {i}".encode(), on_ack=functools.partial(on_ack, acked))
                out.setdefault("acked", []).append(acked.wait(WAIT))
            producer.close_queue(uri)
        out["acks"] = acks
        received = []
        for _ in range(3):
            message = inbox.get(timeout=WAIT)
            received.append(message.data.decode())
            consumer.confirm(message)
        out["received"] = received
        consumer.configure_queue(uri, bmq.QueueOptions(0, 0, 0))
        out["paused"] = repr(consumer.get_queue_options(uri))
        consumer.close_queue(uri)
    return out


def empty_payloads(bmq: ModuleType, broker: str, tag: str) -> dict[str, Any]:
    """A zero-length payload is refused at the call (PAYLOAD_EMPTY: the official SDK's next
    release never sets zero-length message data), with or without properties and on_ack;
    nothing reaches the broker, no ACK comes, and the session and queue go on working."""
    uri = _queue(tag, "empty")
    reader_uri = _queue(tag, "empty-r")
    rec = Recorder()
    out: dict[str, Any] = {}
    with bmq.Session(rec.on_event, on_message=rec.on_message, broker=broker) as session:
        session.open_queue(uri, read=True, write=True)
        session.open_queue(reader_uri, read=True)
        out["bare"] = outcome(lambda: session.post(uri, b""))
        out["with_properties"] = outcome(lambda: session.post(uri, b"", properties={"n": 1}))
        out["with_on_ack"] = outcome(lambda: session.post(uri, b"", on_ack=rec.on_ack))
        out["read_only_first"] = outcome(lambda: session.post(reader_uri, b""))
        out["then_a_post"] = outcome(lambda: session.post(uri, b"after", on_ack=rec.on_ack))
        out["ack_arrived"] = rec.wait_count("ack", 1)
        out["message_arrived"] = rec.wait_count("message", 1)
        for _, handle in rec.messages:
            handle.confirm()
    out["callbacks"] = rec.items
    out["payloads"] = [m.data.decode() for m, _ in rec.messages]
    return out


SCENARIOS: dict[str, Callable[[ModuleType, str, str], dict[str, Any]]] = {
    f.__name__: f
    for f in (
        producer_consumer,
        misuse,
        construction_errors,
        values,
        queue_options,
        compression,
        callbacks,
        host_health,
        nacks,
        broker_timeout,
        documented_patterns,
        empty_payloads,
    )
}


def run(module: str, scenario: str, broker: str, tag: str) -> dict[str, Any]:
    """Run one scenario; the run's tag is replaced by ``TAG`` in the result."""
    result = SCENARIOS[scenario](importlib.import_module(module), broker, tag)
    return json.loads(json.dumps(result).replace(tag, "TAG"))  # type: ignore[no-any-return]


if __name__ == "__main__":
    module_name, scenario_name, broker_url, run_tag = sys.argv[1:5]
    result = run(module_name, scenario_name, broker_url, run_tag)
    sys.stdout.write("@@" + json.dumps(result, sort_keys=True) + "\n")
    sys.stdout.flush()
