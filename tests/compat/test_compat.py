"""``pybmq.compat`` in-process against ``pybmq sim``: the official SDK's documented behaviour.

The scenarios of compat_scenarios.py (official API only) run here on pybmq.compat with the values
the official documentation and the official SDK itself give (tests/interop/test_compat_parity.py
compares the two SDKs run by run). The rest covers what only pybmq does: refusing blocking calls
from callbacks instead of deadlocking, reconnection events (ConnectionLost → Reconnected →
QueueReopened → StateRestored) across a simulator restart, slow-consumer
watermarks, request timeouts, the BMQ_BROKER_URI override and what the options map to.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterator
from typing import Any

import pybmq.compat as blazingmq
import pytest
from pybmq.compat import exceptions, session_events
from pybmq.sim.server import BrokerHooks, ThreadedBrokerSimulator
from pybmq.sim.session import ClientSession

from tests.helpers.compat_scenarios import SCENARIOS, Recorder

pytestmark = pytest.mark.timeout(60)
WAIT = 10.0


def scenario(name: str, url: str) -> dict[str, Any]:
    from tests.helpers.compat_scenarios import run

    return run("pybmq.compat", name, url, "inproc")


def test_import_forms() -> None:
    import pybmq.compat.exceptions as exc_module
    import pybmq.compat.session_events as events_module

    assert blazingmq.exceptions is exceptions is exc_module
    assert blazingmq.session_events is session_events is events_module
    assert blazingmq.Error is exceptions.Error
    assert issubclass(exceptions.BrokerTimeoutError, blazingmq.Error)
    from pybmq.compat.testing import HostHealth

    assert HostHealth is blazingmq.BasicHealthMonitor


def test_producer_consumer_as_documented(bmq_broker_url: str) -> None:
    out = scenario("producer_consumer", bmq_broker_url)
    assert out["acks_arrived"] and out["messages_arrived"]
    assert out["consumer_callbacks"] == [
        "<Connected>",
        *[f"message b'message {i}'" for i in range(5)],
        "<Disconnected>",
    ]
    assert out["producer_callbacks"] == ["<Connected>", *["ack SUCCESS"] * 5, "<Disconnected>"]
    queue = "bmq://bmq.test.mem.priority/compat-TAG-pc"
    assert out["ack_reprs"] == [f"<Ack[GUID] SUCCESS for {queue}>"] * 5
    assert out["guids_match"]
    first = out["messages"][0]
    assert first["repr"] == f"<Message[GUID] for {queue}>"
    assert first["handle"] == f"<MessageHandle[GUID] for {queue}>"
    assert first["properties"] == {
        "blob": "00ff",
        "c": "41",
        "flag": True,
        "n": 0,
        "name": "m0",
        "s": 0,
    }
    assert first["types"] == {
        "blob": "BINARY",
        "c": "CHAR",
        "flag": "BOOL",
        "n": "INT32",
        "name": "STRING",
        "s": "SHORT",
    }
    assert [m["properties"]["s"] for m in out["messages"]] == [0, -1, -2, -3, -4]
    # Every callback of a session on one thread, never the caller's.
    assert (
        out["consumer_threads"]
        == out["producer_threads"]
        == {"one_thread": True, "not_caller": True}
    )


def test_misuse_raises_the_official_errors(bmq_broker_url: str) -> None:
    out = scenario("misuse", bmq_broker_url)
    w = "bmq://bmq.test.mem.priority/compat-TAG-w"
    expected = {
        "post_not_open": ["Error", "Queue not opened"],
        "options_not_open": ["Error", "Queue not opened"],
        "bad_uri": ["Error", "Failed to open not a uri queue: INVALID_URI"],
        "unknown_domain": ["Error", "Failed to open bmq://bmq.no.such.domain/q queue: UNKNOWN"],
        "neither_read_nor_write": ["Error", f"Failed to open {w} queue: INVALID_FLAGS"],
        "open_writer": ["ok"],
        "open_twice": ["Error", f"Failed to open {w} queue: ALREADY_OPENED"],
        "post_to_reader": ["Error", "Failed to construct message: QUEUE_READONLY"],
        "float_property": ["Error", "Property values of type 'float' are not supported"],
        "override_missing": ["Error", "Received override for non-existent property 'b'"],
        "override_wrong_type": [
            "TypeError",
            "'a' value is of the incorrect type, 'str' provided, 'int' expected.",
        ],
        "short_out_of_range": [
            "ValueError",
            "Property a value must be between [-32768, 32767], inclusive",
        ],
        "char_two_bytes": [
            "TypeError",
            "'a' value does not have exactly 1 byte, 2 bytes provided.",
        ],
        "string_from_bytes": ["ok"],
        "str_payload": [
            "TypeError",
            "Argument 'payload' has incorrect type (expected bytes, got str)",
        ],
        "empty_payload": ["Error", "Failed to construct message: PAYLOAD_EMPTY"],
        "configure_writer": ["ok"],
        "configure_priority_huge": ["OverflowError", "value too large to convert to int"],
        "open_timeout_zero": ["ValueError", "timeout must be greater than 0.0, was 0"],
        "message_constructor": ["Error", "The Message class does not have a public constructor."],
        "close_twice": ["Error", "Queue not opened"],
        "stop_again": ["ok"],
        "post_after_stop": ["Error", "Method called after session was stopped"],
    }
    assert {k: out[k] for k in expected} == expected
    assert out["events"] == ["<Connected>", "<Disconnected>"]


def test_an_empty_payload_is_refused_at_the_call_and_nothing_is_sent(
    bmq_broker_url: str,
) -> None:
    """As the official SDK's next release (it never sets zero-length message data): the post
    raises PAYLOAD_EMPTY whatever comes with it, a read-only queue says so first, no ACK or
    message follows, and the next post goes through."""
    out = scenario("empty_payloads", bmq_broker_url)
    empty = ["Error", "Failed to construct message: PAYLOAD_EMPTY"]
    assert [out["bare"], out["with_properties"], out["with_on_ack"]] == [empty] * 3
    assert out["read_only_first"] == ["Error", "Failed to construct message: QUEUE_READONLY"]
    assert out["then_a_post"] == ["ok"]
    callbacks = out["callbacks"]
    assert (callbacks[0], callbacks[-1]) == ("<Connected>", "<Disconnected>")
    assert sorted(callbacks[1:-1]) == ["ack SUCCESS", "message b'after'"]  # either order
    assert out["payloads"] == ["after"]


def test_constructor_validation(bmq_broker_url: str) -> None:
    out = scenario("construction_errors", bmq_broker_url)
    assert out == {
        "timeout_zero": ["ValueError", "timeout must be greater than 0.0, was 0"],
        "negative_connect_timeout": ["ValueError", "timeout must be greater than 0.0, was -1"],
        "negative_stats_interval": [
            "ValueError",
            "stats_dump_interval must be nonnegative, was -1",
        ],
        "bad_monitor": [
            "TypeError",
            "host_health_monitor must be None or an instance of blazingmq.BasicHealthMonitor",
        ],
        "no_event_callback": ["TypeError", "Argument 'on_session_event' must not be None"],
        "no_compression": [
            "TypeError",
            "Argument 'message_compression_algorithm' must not be None",
        ],
        "bad_broker_uri": ["Error", "Failed to start session: INVALID_ARGUMENT"],
        "unreachable": ["BrokerTimeoutError", "Failed to start session: TIMEOUT"],
    }


def test_value_types(bmq_broker_url: str) -> None:
    out = scenario("values", bmq_broker_url)
    assert out["queue_options"] == [
        "QueueOptions()",
        "QueueOptions(max_unconfirmed_messages=1, max_unconfirmed_bytes=2, consumer_priority=3, suspends_on_bad_host_health=True)",
    ]
    assert out["queue_options_eq"] == [True, False, False]
    assert out["defaults"] == [1000, 33554432, 0, False]
    assert out["timeouts"] == [
        "Timeouts()",
        "Timeouts(connect_timeout=1.0, close_queue_timeout=2)",
        True,
    ]
    assert out["events"] == [
        "<Connected>",
        "<Error: bad thing>",
        "<QueueSuspended: bmq://d/q>",
        "<QueueReopenFailed: bmq://d/q why>",
        "<ConnectionLost>",
    ]
    assert out["events_eq"] == [True, False, False, True, False, True, False]
    assert out["enums"] == [
        "<AckStatus.SUCCESS>",
        "<PropertyType.INT32>",
        "<CompressionAlgorithmType.ZLIB>",
    ]
    assert len(out["event_classes"]) == 20  # SessionEvent, QueueEvent and 18 concrete events


def test_queue_options_round_trip(bmq_broker_url: str) -> None:
    out = scenario("queue_options", bmq_broker_url)
    full = "QueueOptions(max_unconfirmed_messages={}, max_unconfirmed_bytes={}, consumer_priority={}, suspends_on_bad_host_health=False)"
    assert out["reader_opened"] == full.format(7, 33554432, 0)
    assert out["writer_opened"] == full.format(0, 0, -2147483648)
    assert out["reader_configured"] == full.format(7, 33554432, 3)
    assert out["reader_reconfigured"] == full.format(2, 1024, 3)
    assert out["writer_configured"] == full.format(0, 0, -2147483648)
    assert out["equal"] is True
    assert out["reopened"] == full.format(1000, 33554432, 0)


def test_zlib_compression(bmq_broker_url: str) -> None:
    out = scenario("compression", bmq_broker_url)
    assert out == {
        "arrived": True,
        "received": [[0, True], [1, True], [2, True]],
        "acks": ["SUCCESS"] * 3,
    }


def test_post_and_confirm_from_callbacks(bmq_broker_url: str) -> None:
    out = scenario("callbacks", bmq_broker_url)
    assert out["arrived"] and out["results"] == ["ok", "ok", "ok"]
    assert out["threads"] == {"one_thread": True, "not_caller": True}


def test_host_health_monitor(bmq_broker_url: str) -> None:
    out = scenario("host_health", bmq_broker_url)
    queue = "bmq://bmq.test.mem.priority/compat-TAG-hh"
    assert out["post_suspended"] == ["Error", "Failed to construct message: QUEUE_SUSPENDED"]
    assert out["post_insensitive"] == out["post_resumed"] == ["ok"]
    # The message posted while suspended is held back until after the queue resumed.
    assert out["sequence"] == [
        "<Connected>",
        "<HostUnhealthy>",
        f"<QueueSuspended: {queue}>",
        f"<QueueResumed: {queue}>",
        "<HostHealthRestored>",
        "message b'while suspended'",
        "message b'y'",
        "<Disconnected>",
    ]


class NackNamedQueues(BrokerHooks):
    def outgoing(self, session: ClientSession, data: bytes) -> bytes:
        return b"" if b"-hang-" in data else data  # a broker that never answers about these

    def ack_status(self, session: ClientSession, queue_uri: str, guid: bytes, status: int) -> int:
        return int(queue_uri.rsplit("-", 1)[1]) if "-nack-" in queue_uri else status


def test_nacks_reach_on_ack_without_guid() -> None:
    with ThreadedBrokerSimulator(hooks=NackNamedQueues()) as sim:
        out = scenario("nacks", sim.url)
    assert out["statuses"] == ["LIMIT_BYTES", "LIMIT_MESSAGES", "NOT_READY", "STORAGE_FAILURE"]
    assert out["acks"][0] == "<Ack LIMIT_BYTES for bmq://bmq.test.mem.priority/compat-TAG-nack-2>"
    assert out["have_guid"] == [False] * 4


def test_timed_out_open_leaves_the_uri_unusable_as_upstream() -> None:
    with ThreadedBrokerSimulator(hooks=NackNamedQueues()) as sim:
        out = scenario("broker_timeout", sim.url)
    hung = "bmq://bmq.test.mem.priority/compat-TAG-hang-a"
    assert out == {
        "session_timeout": ["BrokerTimeoutError", f"Failed to open {hung} queue: TIMEOUT"],
        "call_timeout": [
            "BrokerTimeoutError",
            "Failed to open bmq://bmq.test.mem.priority/compat-TAG-hang-b queue: TIMEOUT",
        ],
        "post_after": ["Error", "Failed to construct message: QUEUE_INVALID"],
        "options_after": ["ok"],
        "configure_after": ["Error", f"Failed to configure {hung} queue: INVALID_QUEUE"],
        "open_again": ["Error", f"Failed to open {hung} queue: NOT_SUPPORTED"],
        "close_after": ["Error", f"Failed to close {hung} queue: INVALID_QUEUE"],
        "other_queue": ["ok"],
        "events": ["<Connected>", "<Disconnected>"],
    }


def test_documented_usage_patterns(bmq_broker_url: str) -> None:
    out = scenario("documented_patterns", bmq_broker_url)
    assert out == {
        "acked": [True, True, True],
        "acks": ["SUCCESS"] * 3,
        "received": ["guide 0", "guide 1", "guide 2"],
        "paused": "QueueOptions(max_unconfirmed_messages=0, max_unconfirmed_bytes=0, consumer_priority=0, suspends_on_bad_host_health=False)",
    }


def test_context_manager_stops_the_session(bmq_broker_url: str, recorder: Recorder) -> None:
    uri = "bmq://bmq.test.mem.priority/compat-with"
    with blazingmq.Session(recorder.on_event, broker=bmq_broker_url) as session:
        session.open_queue(uri, write=True)
    assert recorder.items == ["<Connected>", "<Disconnected>"]
    with pytest.raises(blazingmq.Error, match="Method called after session was stopped"):
        session.post(uri, b"late")


# --------------------------------------------------------------------------- pybmq's own rules


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def session(bmq_broker_url: str, recorder: Recorder) -> Iterator[blazingmq.Session]:
    with blazingmq.Session(
        recorder.on_event, on_message=recorder.on_message, broker=bmq_broker_url
    ) as s:
        yield s


def test_blocking_calls_from_a_callback_raise_instead_of_deadlocking(bmq_broker_url: str) -> None:
    uri = "bmq://bmq.test.mem.priority/compat-reentry"
    outcomes: list[str] = []
    done = threading.Event()

    def on_ack(ack: blazingmq.Ack) -> None:
        for call in (
            lambda: s.open_queue("bmq://bmq.test.mem.priority/other", write=True),
            lambda: s.configure_queue(uri, blazingmq.QueueOptions()),
            lambda: s.close_queue(uri),
            s.stop,
        ):
            try:
                call()
                outcomes.append("ok")
            except blazingmq.Error as exc:
                outcomes.append(
                    "cannot be called from a BlazingMQ callback" in str(exc) and "refused"
                )
        outcomes.append(repr(s.get_queue_options(uri)))  # non-blocking: allowed
        done.set()

    with blazingmq.Session(lambda e: None, broker=bmq_broker_url) as s:
        s.open_queue(uri, write=True)
        s.post(uri, b"x", on_ack=on_ack)
        assert done.wait(WAIT)
        assert outcomes[:4] == ["refused"] * 4
        assert outcomes[4].startswith("QueueOptions(max_unconfirmed_messages=0")
        s.post(uri, b"still working")  # the session is unharmed
        s.close_queue(uri)


def test_connection_lost_then_stop_while_the_broker_is_down(recorder: Recorder) -> None:
    sim = ThreadedBrokerSimulator()
    sim.start()
    session = blazingmq.Session(recorder.on_event, broker=sim.url)
    outcomes: list[str] = []
    try:
        session.open_queue("bmq://bmq.test.mem.priority/compat-lost", write=True)
        sim.stop()
        assert recorder.wait_count("<ConnectionLost", 1)
        # Held while reconnecting (as the official SDK does), resolved when the session stops.
        session.post(
            "bmq://bmq.test.mem.priority/compat-lost",
            b"x",
            on_ack=lambda a: outcomes.append(str(a.status)),
        )
    finally:
        session.stop()
        sim.stop()
    assert recorder.items == ["<Connected>", "<ConnectionLost>", "<Disconnected>"]


def test_official_style_program_sees_reconnect_events_in_order(recorder: Recorder) -> None:
    """ConnectionLost → Reconnected → QueueReopened (each queue) → StateRestored, then it works."""
    uri = "bmq://bmq.test.mem.priority/compat-reconnect"
    sim = ThreadedBrokerSimulator()
    sim.start()

    def on_message(message: blazingmq.Message, handle: blazingmq.MessageHandle) -> None:
        recorder.on_message(message, handle)
        handle.confirm()

    try:
        with blazingmq.Session(recorder.on_event, on_message=on_message, broker=sim.url) as session:
            session.open_queue(uri, read=True, write=True)
            session.post(uri, b"before")
            assert recorder.wait_count("message b'before'", 1)
            sim.restart()
            assert recorder.wait_count("<StateRestored", 1)
            session.post(uri, b"after")
            assert recorder.wait_count("message b'after'", 1)
            session.close_queue(uri)
    finally:
        sim.stop()
    assert [i for i in recorder.items if i.startswith("<")] == [
        "<Connected>",
        "<ConnectionLost>",
        "<Reconnected>",
        f"<QueueReopened: {uri}>",
        "<StateRestored>",
        "<Disconnected>",
    ]


def test_slow_consumer_watermarks(bmq_broker_url: str, recorder: Recorder) -> None:
    uri = "bmq://bmq.test.mem.priority/compat-slow"
    release = threading.Event()

    def on_message(message: blazingmq.Message, handle: blazingmq.MessageHandle) -> None:
        release.wait(WAIT)  # the application is slow: messages pile up behind this one
        recorder.on_message(message, handle)
        handle.confirm()

    with blazingmq.Session(
        recorder.on_event,
        on_message=on_message,
        broker=bmq_broker_url,
        event_queue_watermarks=(1, 3),
    ) as session:
        session.open_queue(uri, read=True, write=True)
        for i in range(5):
            session.post(uri, f"m{i}".encode())
        assert session.core.callbacks.wait_for_backlog(5, WAIT)
        release.set()
        assert recorder.wait_count("<SlowConsumerNormal", 1)
    items = recorder.items
    assert items.index("<SlowConsumerHighWaterMark>") < items.index("<SlowConsumerNormal>")
    assert [i for i in items if i.startswith("message")] == [f"message b'm{i}'" for i in range(5)]


class SilentAfterOpen(BrokerHooks):
    """Answers nothing once ``silent`` is set (the broker is hung)."""

    silent = False

    def outgoing(self, session: ClientSession, data: bytes) -> bytes:
        return b"" if self.silent else data


def test_request_timeout_raises_broker_timeout_error(recorder: Recorder) -> None:
    hooks = SilentAfterOpen()
    with ThreadedBrokerSimulator(hooks=hooks) as sim:
        session = blazingmq.Session(
            recorder.on_event,
            broker=sim.url,
            timeout=blazingmq.Timeouts(open_queue_timeout=0.3, disconnect_timeout=0.5),
        )
        try:
            hooks.silent = True
            with pytest.raises(exceptions.BrokerTimeoutError, match="queue: TIMEOUT"):
                session.open_queue("bmq://bmq.test.mem.priority/compat-hung", write=True)
            # Per-call timeouts win over the session's.
            with pytest.raises(exceptions.BrokerTimeoutError):
                session.open_queue(
                    "bmq://bmq.test.mem.priority/compat-hung2", write=True, timeout=0.2
                )
        finally:
            session.stop()


def test_environment_chooses_the_broker(
    bmq_broker_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BMQ_BROKER_URI", bmq_broker_url)
    with blazingmq.Session(lambda e: None, broker="tcp://127.0.0.1:9") as session:
        session.open_queue("bmq://bmq.test.mem.priority/compat-env", write=True)


def test_options_and_what_they_map_to(bmq_broker_url: str) -> None:
    options = blazingmq.SessionOptions(
        message_compression_algorithm=blazingmq.CompressionAlgorithmType.ZLIB,
        timeouts=blazingmq.Timeouts(open_queue_timeout=12.0, disconnect_timeout=7.0),
        num_processing_threads=4,
        blob_buffer_size=8192,
        channel_high_watermark=16 * 1024 * 1024,
        event_queue_watermarks=(10, 100),
        stats_dump_interval=30.0,
    )
    with blazingmq.Session.with_options(lambda e: None, None, bmq_broker_url, options) as session:
        inner = session.core.inner
        assert inner is not None
        assert inner.engine.options.compression_threshold == 1024
        assert inner.engine.options.stop_timeout == 7.0
        assert (
            inner.write_high_water == 12 * 1024 * 1024
        )  # channel watermark minus the control reserve
        assert session.core.callbacks.watermarks == (10, 100)
    with pytest.raises(TypeError, match="num_processing_threads"):
        blazingmq.Session(lambda e: None, broker=bmq_broker_url, num_processing_threads="2")  # type: ignore[arg-type]


def test_failing_callback_is_printed_and_dispatch_goes_on(
    bmq_broker_url: str, recorder: Recorder, capsys: pytest.CaptureFixture[str]
) -> None:
    uri = "bmq://bmq.test.mem.priority/compat-raise"

    def bad(ack: blazingmq.Ack) -> None:
        raise RuntimeError("user bug")

    with blazingmq.Session(recorder.on_event, broker=bmq_broker_url) as session:
        session.open_queue(uri, write=True)
        session.post(uri, b"1", on_ack=bad)
        session.post(uri, b"2", on_ack=recorder.on_ack)
        assert recorder.wait_count("ack", 1)
    assert "RuntimeError: user bug" in capsys.readouterr().err


def test_log_session_event_levels(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="pybmq.compat.session_events")
    for event in (
        session_events.Connected(None),
        session_events.ConnectionLost(None),
        session_events.Error("x"),
    ):
        session_events.log_session_event(event)
    assert [r.levelno for r in caplog.records] == [logging.INFO, logging.WARNING, logging.ERROR]


def test_confirm_after_close_and_stop(session: blazingmq.Session, recorder: Recorder) -> None:
    uri = "bmq://bmq.test.mem.priority/compat-late-confirm"
    session.open_queue(uri, read=True, write=True)
    session.post(uri, b"x")
    assert recorder.wait_count("message", 1)
    message, handle = recorder.messages[0]
    handle.confirm()
    session.close_queue(uri)
    with pytest.raises(blazingmq.Error, match="Queue not opened"):
        handle.confirm()
    session.stop()
    with pytest.raises(blazingmq.Error, match="after session was stopped"):
        session.confirm(message)
    with pytest.raises(blazingmq.Error, match="after session was stopped"):
        session.get_queue_options(uri)


def test_scenarios_cover_the_parity_suite() -> None:
    assert set(SCENARIOS) == {
        "producer_consumer",
        "misuse",
        "construction_errors",
        "values",
        "queue_options",
        "compression",
        "callbacks",
        "host_health",
        "nacks",
        "broker_timeout",
        "documented_patterns",
        "empty_payloads",
    }


@pytest.mark.parametrize(
    ("algorithm", "expected"),
    [
        (blazingmq.CompressionAlgorithmType.ZLIB, [1, 0]),
        (blazingmq.CompressionAlgorithmType.NONE, [0, 0]),
    ],
)
def test_compression_reaches_the_wire(
    bmq_sim: ThreadedBrokerSimulator, recorder: Recorder, algorithm: Any, expected: list[int]
) -> None:
    """ZLIB compresses payloads of 1 KiB or more (upstream's rule); the broker stores them as sent."""
    uri = f"bmq://bmq.test.mem.priority/compat-wire-{algorithm.name}"
    with blazingmq.Session(
        recorder.on_event, broker=bmq_sim.url, message_compression_algorithm=algorithm
    ) as s:
        s.open_queue(uri, write=True)
        s.post(uri, b"a" * 5000, on_ack=recorder.on_ack)
        s.post(uri, b"short", on_ack=recorder.on_ack)
        assert recorder.wait_count("ack", 2)
    stored = bmq_sim.call(lambda b: [m.compression for m in b.queue(uri).streams["__default"].pending])  # type: ignore[union-attr]
    assert stored == expected


async def _loop_turns() -> None:
    for _ in range(3):
        await asyncio.sleep(0)


def _broker_reading(sim: ThreadedBrokerSimulator, reading: bool) -> None:
    """Pause or resume the simulator's reads on every connection (a stalled broker)."""

    def flip(_broker: object) -> None:
        for transport in sim._sim._transports.values():
            transport.resume_reading() if reading else transport.pause_reading()

    sim.call(flip)


def test_post_over_the_channel_high_watermark_is_refused(recorder: Recorder) -> None:
    """Like the C++ SDK: BW_LIMIT at once, not an unbounded buffer; posts work again once drained."""
    uri = "bmq://bmq.test.mem.priority/compat-bw"
    payload = b"p" * 32 * 1024
    with (
        ThreadedBrokerSimulator() as sim,
        blazingmq.Session(
            recorder.on_event, broker=sim.url, channel_high_watermark=1  # the smallest: 64 KiB
        ) as session,
    ):
        session.open_queue(uri, write=True)
        _broker_reading(sim, False)
        refused = None
        accepted = 0
        for _ in range(4000):  # bounded: at most ~128 MB; the kernel's buffers take a few MB
            try:
                session.post(uri, payload, on_ack=recorder.on_ack)
                accepted += 1
                continue
            except blazingmq.Error as exc:
                refused = str(exc)
            session.core.run(_loop_turns())  # let the I/O thread write what it was handed
            if session.core.plane.unsent_bytes == 0 and not session.core.inner.writable:  # type: ignore[union-attr]
                break  # refused because the socket itself is full: the stalled-broker case
        else:
            pytest.fail("the socket never filled up")
        refused = (accepted, refused)
        assert refused is not None and refused[0] > 0
        assert refused[1] == f"Failed to post message to {uri} queue: BW_LIMIT"
        _broker_reading(sim, True)
        assert recorder.wait_count("ack", refused[0])  # everything accepted was delivered
        session.post(uri, b"after", on_ack=recorder.on_ack)
        assert recorder.wait_count("ack", refused[0] + 1)
    assert {a.status for a in recorder.acks} == {blazingmq.AckStatus.SUCCESS}


def test_posts_from_many_threads(bmq_broker_url: str, recorder: Recorder) -> None:
    """post() may be called from any number of threads at once: nothing lost, nothing doubled."""
    uri = "bmq://bmq.test.mem.priority/compat-threads"
    threads, per_thread = 4, 250
    with blazingmq.Session(
        recorder.on_event, on_message=recorder.on_message, broker=bmq_broker_url
    ) as s:
        s.open_queue(
            uri,
            read=True,
            write=True,
            options=blazingmq.QueueOptions(max_unconfirmed_messages=2000),
        )

        def produce(worker: int) -> None:
            for i in range(per_thread):
                s.post(uri, f"{worker}:{i}".encode(), on_ack=recorder.on_ack)

        workers = [threading.Thread(target=produce, args=(w,)) for w in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(WAIT)
        total = threads * per_thread
        assert recorder.wait_count("ack", total) and recorder.wait_count("message", total)
        for _, handle in recorder.messages:
            handle.confirm()
    payloads = [m.data for m, _ in recorder.messages]
    assert len(set(payloads)) == len(payloads) == total
    assert {a.status for a in recorder.acks} == {blazingmq.AckStatus.SUCCESS}
    # Each producer thread's messages arrive in the order it posted them.
    for w in range(threads):
        mine = [int(p.split(b":")[1]) for p in payloads if p.startswith(f"{w}:".encode())]
        assert mine == list(range(per_thread))


def test_undecodable_message_is_reported_and_delivery_goes_on(
    session: blazingmq.Session, recorder: Recorder
) -> None:
    """A PUSH whose properties do not decode becomes an Error event and is delivered without
    properties (so it can be confirmed); later messages still come."""
    from pybmq.client.events import Message as WireMessage
    from pybmq.wire.properties import MessageProperties

    uri = "bmq://bmq.test.mem.priority/compat-corrupt"
    session.open_queue(uri, read=True, write=True)
    inner = session.core.queues[uri].inner
    assert inner is not None
    broken = MessageProperties.decode(b"\x0f\x00\x00\x02\xff\xff\xff\xff", extended=True)

    async def inject() -> None:
        inner.deliver(WireMessage(inner.queue_id, bytes(16), b"corrupt", broken))

    session.core.run(inject())
    session.post(uri, b"fine")
    assert recorder.wait_count("message", 2)
    assert recorder.wait_count("<Error: undecodable message", 1)
    assert [i for i in recorder.items if i.startswith("message")] == [
        "message b'corrupt'",
        "message b'fine'",
    ]
    poison, handle = recorder.messages[0]
    assert poison.properties == {}
    handle.confirm()
    recorder.messages[1][1].confirm()
