"""The differential catalogue: scenarios a client can play against any broker, each returning
what a user can observe (open and post outcomes as status categories, which payloads arrive where
and in what order, whether something arrives at all) as plain JSON-able values.

``test_differential.py`` runs every scenario against the simulator and the real broker and
compares the two; ``broker-outcomes.json`` is the real broker's answers, recorded with
``python -m tests.differential.record`` so the simulator is held to them even where no broker runs.
Texts of refusals are left out on purpose: they are prose, not behaviour.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from pybmq.client.aio import AsyncSession
from pybmq.client.aio_queue import AsyncQueue
from pybmq.client.options import Credential, QueueOptions, SessionOptions, Subscription
from pybmq.errors import AuthenticationError, BrokerError, PybmqError

Outcome = Any
Scenario = Callable[[str], Awaitable[Outcome]]

PRIORITY = "bmq://bmq.test.mem.priority/diff"
FANOUT = "bmq://bmq.test.mem.fanout/diff"
BROADCAST = "bmq://bmq.test.mem.broadcast/diff"
SETTLE = 0.5  # how long "nothing more arrives" is watched for
WAIT = 10.0

SCENARIOS: dict[str, Scenario] = {}
# Scenario -> how its broker is set up, as ``pybmq.testing.broker_config.BrokerSettings`` fields:
# ``basic_users`` (name -> password; then only they get in), ``queue_messages``/``queue_bytes``
# (each queue's quota), ``heartbeat_interval_ms``/``heartbeat_intervals``. The simulator's names:
OPTIONS: dict[str, dict[str, Any]] = {}
SIM_SETTINGS = {
    "queue_messages": "queue_limit_messages",
    "queue_bytes": "queue_limit_bytes",
    "heartbeat_interval_ms": "heartbeat_interval_ms",
    "heartbeat_intervals": "max_missed_heartbeats",
}


# Scenario -> its own broker set-up, for what OPTIONS cannot say (scenarios_tls: a TLS listener):
# given the kind ("sim" or "real"), an async context manager yielding the URL scenarios get.
BROKERS: dict[str, Callable[[str], AbstractAsyncContextManager[str]]] = {}


def scenario(fn: Scenario) -> Scenario:
    SCENARIOS[fn.__name__] = fn
    return fn


def with_broker(**options: Any) -> Callable[[Scenario], Scenario]:
    def register(fn: Scenario) -> Scenario:
        OPTIONS[fn.__name__] = options
        return scenario(fn)

    return register


@asynccontextmanager
async def broker_for(name: str, kind: str) -> AsyncIterator[str]:
    """The URL of a fresh broker of ``kind`` ("sim" or "real") set up for scenario ``name``."""
    if name in BROKERS:
        async with BROKERS[name](kind) as url:
            yield url
        return
    options = OPTIONS.get(name, {})
    if kind == "real":
        from pybmq.testing.real_broker import RealBroker, broker_executable

        executable = broker_executable()
        assert executable is not None
        with RealBroker(executable, **options) as real:
            yield real.url
        return
    from pybmq.sim.auth import AuthConfig
    from pybmq.sim.config import BrokerConfig
    from pybmq.sim.server import BrokerSimulator

    config = BrokerConfig()
    users = options.get("basic_users")
    if users:
        config.auth = AuthConfig(basic=dict(users), anonymous=False)
    for ours, theirs in SIM_SETTINGS.items():
        if ours in options:
            setattr(config, theirs, options[ours])
    async with BrokerSimulator(config) as sim:
        yield sim.url


def refusal(exc: BaseException) -> str:
    """An error as what a program can branch on: the broker's category, or the error type."""
    if isinstance(exc, BrokerError):
        return exc.category
    if isinstance(exc, AuthenticationError) and exc.category:
        return f"{type(exc).__name__} {exc.category} {exc.code}"
    return type(exc).__name__


async def open_outcome(session: AsyncSession, uri: str, **flags: Any) -> str:
    try:
        await session.open_queue(uri, **flags)
    except PybmqError as exc:
        return refusal(exc)
    return "ok"


async def drain(queue: AsyncQueue, confirm: bool = True, settle: float = SETTLE) -> list[str]:
    """Every payload that arrives until nothing has for ``settle`` seconds."""
    got: list[str] = []
    while True:
        try:
            message = await asyncio.wait_for(queue.get(), settle)
        except asyncio.TimeoutError:
            return got
        got.append(message.payload.decode())
        if confirm:
            await message.confirm()


async def post_all(writer: AsyncQueue, payloads: list[str], **properties: Any) -> list[str]:
    acks = await asyncio.gather(
        *(writer.post(p.encode(), properties=properties or None) for p in payloads)
    )
    return sorted({ack.status.name for ack in acks})


# -- opens ----------------------------------------------------------------------------------------


@scenario
async def open_unknown_domain(url: str) -> Outcome:
    async with AsyncSession(url) as session:
        return {
            "read": await open_outcome(session, "bmq://bmq.no.such.domain/q", read=True),
            "write": await open_outcome(session, "bmq://bmq.no.such.domain/w", write=True),
        }


@scenario
async def open_unconfigured_domain_of_a_known_mode(url: str) -> Outcome:
    async with AsyncSession(url) as session:
        return await open_outcome(session, "bmq://bmq.test.other.priority/q", read=True)


@scenario
async def open_fanout_apps(url: str) -> Outcome:
    async with AsyncSession(url) as session:
        return {
            app: await open_outcome(session, f"{FANOUT}-apps-{app}?id={app}", read=True)
            for app in ("foo", "bar", "baz", "nosuchapp")
        }


@scenario
async def open_appid_on_a_priority_queue(url: str) -> Outcome:
    async with AsyncSession(url) as session:
        return await open_outcome(session, f"{PRIORITY}-appid?id=foo", read=True)


@scenario
async def open_same_queue_from_two_sessions(url: str) -> Outcome:
    async with AsyncSession(url) as one, AsyncSession(url) as two:
        return [
            await open_outcome(one, f"{PRIORITY}-twice", read=True, write=True),
            await open_outcome(two, f"{PRIORITY}-twice", read=True, write=True),
        ]


@scenario
async def open_write_only_and_read_only(url: str) -> Outcome:
    async with AsyncSession(url) as session:
        return {
            "write": await open_outcome(session, f"{PRIORITY}-w", write=True),
            "read": await open_outcome(session, f"{PRIORITY}-r", read=True),
            "write_no_ack": await open_outcome(session, f"{PRIORITY}-wna", write=True, ack=False),
            "broadcast_write": await open_outcome(session, f"{BROADCAST}-w", write=True),
        }


# -- routing --------------------------------------------------------------------------------------


@scenario
async def priority_highest_consumer_takes_all(url: str) -> Outcome:
    uri = f"{PRIORITY}-prio"
    async with AsyncSession(url) as a, AsyncSession(url) as b, AsyncSession(url) as p:
        high = await a.open_queue(uri, read=True, consumer_priority=5)
        low = await b.open_queue(uri, read=True, consumer_priority=1)
        writer = await p.open_queue(uri, write=True)
        acks = await post_all(writer, [f"m{i}" for i in range(10)])
        return {"acks": acks, "high": await drain(high), "low": await drain(low)}


@scenario
async def fanout_each_app_gets_every_message(url: str) -> Outcome:
    uri = f"{FANOUT}-each"
    async with AsyncSession(url) as c, AsyncSession(url) as p:
        readers = {app: await c.open_queue(f"{uri}?id={app}", read=True) for app in ("foo", "bar")}
        writer = await p.open_queue(uri, write=True)
        acks = await post_all(writer, [f"f{i}" for i in range(5)])
        return {"acks": acks, **{app: await drain(q) for app, q in readers.items()}}


@scenario
async def broadcast_reaches_only_present_consumers(url: str) -> Outcome:
    uri = f"{BROADCAST}-present"
    async with AsyncSession(url) as c, AsyncSession(url) as p:
        writer = await p.open_queue(uri, write=True)
        before = await post_all(writer, ["early"])
        first = await c.open_queue(uri, read=True)
        await asyncio.sleep(0.2)
        after = await post_all(writer, ["late-0", "late-1"])
        return {"acks": before + after, "got": await drain(first)}


@scenario
async def flow_control_max_unconfirmed(url: str) -> Outcome:
    uri = f"{PRIORITY}-flow"
    async with AsyncSession(url) as c, AsyncSession(url) as p:
        reader = await c.open_queue(uri, read=True, max_unconfirmed_messages=3)
        writer = await p.open_queue(uri, write=True)
        await post_all(writer, [f"q{i}" for i in range(8)])
        first = await drain(reader, confirm=False)
        return {"without_confirming": first}


@scenario
async def subscriptions_split_by_expression(url: str) -> Outcome:
    uri = f"{PRIORITY}-subs"
    async with AsyncSession(url) as c1, AsyncSession(url) as c2, AsyncSession(url) as p:
        even = await c1.open_queue(
            uri, read=True, options=QueueOptions(subscriptions=(Subscription("n % 2 == 0"),))
        )
        odd = await c2.open_queue(
            uri, read=True, options=QueueOptions(subscriptions=(Subscription("n % 2 == 1"),))
        )
        writer = await p.open_queue(uri, write=True)
        acks = await asyncio.gather(
            *(writer.post(b"s%d" % i, properties={"n": i}) for i in range(8))
        )
        return {
            "acks": sorted({a.status.name for a in acks}),
            "even": await drain(even),
            "odd": await drain(odd),
        }


# -- redelivery -----------------------------------------------------------------------------------


@scenario
async def redelivery_after_a_consumer_session_dies(url: str) -> Outcome:
    uri = f"{PRIORITY}-dies"
    async with AsyncSession(url) as p, AsyncSession(url) as second:
        writer = await p.open_queue(uri, write=True)
        first = AsyncSession(url)
        await first.start()
        reader = await first.open_queue(uri, read=True)
        await post_all(writer, [f"r{i}" for i in range(4)])
        taken = await drain(reader, confirm=False)
        await first.stop()  # unconfirmed messages go back to the queue
        again = await second.open_queue(uri, read=True)
        return {"first": taken, "second": await drain(again)}


@scenario
async def close_with_unconfirmed_messages(url: str) -> Outcome:
    uri = f"{PRIORITY}-close"
    async with AsyncSession(url) as c, AsyncSession(url) as other, AsyncSession(url) as p:
        writer = await p.open_queue(uri, write=True)
        reader = await c.open_queue(uri, read=True)
        await post_all(writer, ["c0", "c1", "c2"])
        taken = await drain(reader, confirm=False)
        await reader.close()
        after = await other.open_queue(uri, read=True)
        return {"taken": taken, "after_close": await drain(after)}


@scenario
async def confirm_then_nothing_is_redelivered(url: str) -> Outcome:
    uri = f"{PRIORITY}-confirmed"
    async with AsyncSession(url) as p:
        writer = await p.open_queue(uri, write=True)
        await post_all(writer, ["k0", "k1"])
        async with AsyncSession(url) as c:
            reader = await c.open_queue(uri, read=True)
            first = await drain(reader)
        async with AsyncSession(url) as c:
            reader = await c.open_queue(uri, read=True)
            return {"first": first, "second": await drain(reader)}


# -- admin commands -------------------------------------------------------------------------------


def _admin(url: str, *words: str) -> tuple[int, Any]:
    from tests.helpers.cli import run_pybmq

    done = run_pybmq("admin", "--json", *words, "--broker", url)
    try:
        document = json.loads(done.stdout)
    except ValueError:
        return done.returncode, None
    return done.returncode, document.get("result")


def _answer(result: Any) -> str:
    if not isinstance(result, dict):
        return "text"
    if "error" in result:
        return "error"
    return "ok"


@scenario
async def admin_commands(url: str) -> Outcome:
    commands = [
        ("HELP",),
        ("DOMAINS", "DOMAIN", "bmq.test.mem.priority", "INFOS"),
        ("DOMAINS", "DOMAIN", "bmq.no.such.domain", "INFOS"),
        ("NO", "SUCH", "COMMAND"),
    ]
    out = {}
    for words in commands:
        code, result = await asyncio.to_thread(_admin, url, *words)
        out[" ".join(words)] = [code, _answer(result)]
    return out


@scenario
async def admin_purge_empties_the_queue(url: str) -> Outcome:
    uri = f"{PRIORITY}-purge"
    async with AsyncSession(url) as p:
        writer = await p.open_queue(uri, write=True)
        await post_all(writer, [f"x{i}" for i in range(5)])
        words = ("DOMAINS", "DOMAIN", "bmq.test.mem.priority", "QUEUE", "diff-purge", "PURGE", "*")
        code, result = await asyncio.to_thread(_admin, url, *words)
        async with AsyncSession(url) as c:
            reader = await c.open_queue(uri, read=True)
            return {"purge": [code, _answer(result)], "after": await drain(reader)}


# -- malformed input ------------------------------------------------------------------------------


async def _closed_within(url: str, data: bytes, wait: float = 3.0) -> str:
    """Send ``data`` on a fresh connection: "closed" if the broker hangs up within ``wait``."""
    host, port = url.removeprefix("tcp://").rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(data)
        await writer.drain()
        try:
            while await asyncio.wait_for(reader.read(65536), wait):
                pass
        except asyncio.TimeoutError:
            return "open"
        return "closed"
    finally:
        writer.close()


@scenario
async def garbage_before_negotiation(url: str) -> Outcome:
    # A header claiming 64 bytes of an event type that does not exist, then the 56 bytes.
    return await _closed_within(url, bytes.fromhex("00000040 7f020000") + b"\xa5" * 56)


@scenario
async def empty_payload(url: str) -> Outcome:
    async with AsyncSession(url) as p:
        writer = await p.open_queue(f"{PRIORITY}-empty", write=True)
        try:
            ack = await writer.post(b"")
        except PybmqError as exc:
            return refusal(exc)
        return ack.status.name


# -- authentication and quotas --------------------------------------------------------------------


async def _session_outcome(url: str, mechanism: str | None, material: bytes = b"") -> str:
    options = SessionOptions(request_timeout=10)
    if mechanism is not None:
        credential = Credential(mechanism, material)
        options = SessionOptions(request_timeout=10, credential_provider=lambda: credential)
    session = AsyncSession(url, options=options)
    try:
        await session.start()
    except PybmqError as exc:
        return refusal(exc)
    try:
        await session.open_queue(f"{PRIORITY}-auth", write=True)
    finally:
        await session.stop()
    return "ok"


@with_broker(basic_users={"alice": "S3cret"})
async def basic_authentication_outcomes(url: str) -> Outcome:
    return {
        "right": await _session_outcome(url, "BASIC", b"alice:S3cret"),
        "wrong": await _session_outcome(url, "BASIC", b"alice:wrong"),
        "unknown_user": await _session_outcome(url, "BASIC", b"mallory:S3cret"),
        "unknown_mechanism": await _session_outcome(url, "KERBEROS", b"x"),
        "missing": await _session_outcome(url, None),
    }


@with_broker(queue_messages=5)
async def queue_message_quota(url: str) -> Outcome:
    async with AsyncSession(url) as p:
        writer = await p.open_queue(f"{PRIORITY}-quota", write=True)
        statuses = []
        for i in range(7):
            statuses.append((await writer.post(b"q%d" % i)).status.name)
        return statuses


@with_broker(queue_bytes=1000)
async def queue_byte_quota(url: str) -> Outcome:
    async with AsyncSession(url) as p:
        writer = await p.open_queue(f"{PRIORITY}-bytes", write=True)
        statuses = []
        for _ in range(6):
            statuses.append((await writer.post(b"b" * 300)).status.name)
        return statuses


# -- heartbeats -----------------------------------------------------------------------------------


def _hello() -> bytes:
    """A ClientIdentity negotiation (JSON), as a minimal client sends it."""
    from pybmq.client.records import SDK_VERSION
    from pybmq.generated import bmqp_ctrlmsg as ctrl
    from pybmq.generated.wire_codec import PROTOCOL_VERSION
    from pybmq.wire.control import encode_control

    identity = ctrl.ClientIdentity(
        protocol_version=PROTOCOL_VERSION,
        sdk_version=SDK_VERSION,
        client_type=ctrl.ClientType.E_TCPCLIENT,
        process_name="raw",
        pid=1,
        session_id=1,
        host_name="localhost",
        features="PROTOCOL_ENCODING:JSON;MPS:MESSAGE_PROPERTIES_EX",
        cluster_name="",
        cluster_node_id=-1,
        sdk_language=ctrl.ClientLanguage.E_UNKNOWN,
        guid_info=ctrl.GuidInfo(client_id="0123456789AB", nano_seconds_from_epoch=1),
    )
    return encode_control(ctrl.NegotiationMessage(client_identity=identity))


async def _read_event(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """(event type, whole event) of the next event."""
    header = await reader.readexactly(8)
    length = int.from_bytes(header[:4], "big") & 0x7FFFFFFF
    return header[4] & 0x3F, header + await reader.readexactly(length - 8)


async def _raw_control(url: str, requests: list[Any]) -> list[str]:
    """Negotiate on a raw connection, send each ControlMessage, and report each answer: "ok",
    the failure's category, or "closed" if the broker hung up."""
    from pybmq.generated import bmqp_ctrlmsg as ctrl
    from pybmq.wire.control import decode_control_as, encode_control

    host, port = url.removeprefix("tcp://").rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    out: list[str] = []
    try:
        writer.write(_hello())
        await writer.drain()
        await asyncio.wait_for(_read_event(reader), 5)
        for r_id, request in enumerate(requests, 1):
            request.r_id = r_id
            writer.write(encode_control(request))
            await writer.drain()
            while True:
                try:
                    kind, event = await asyncio.wait_for(_read_event(reader), 5)
                except (asyncio.IncompleteReadError, ConnectionError):
                    out.append("closed")
                    return out
                if kind == 1:  # CONTROL
                    answer, _ = decode_control_as(event, ctrl.ControlMessage)
                    out.append(answer.status.category.name if answer.status else "ok")
                    break
    finally:
        writer.close()
    return out


async def _silent_after_negotiation(url: str, wait: float) -> str:
    """Negotiate on a raw connection, then never answer: "dropped" if the broker hangs up
    within ``wait`` seconds."""
    host, port = url.removeprefix("tcp://").rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(_hello())
        await writer.drain()
        answered = await asyncio.wait_for(reader.read(65536), 5)
        if not answered:
            return "refused"
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        while (left := deadline - loop.time()) > 0:
            try:
                if not await asyncio.wait_for(reader.read(65536), left):
                    return "dropped"
            except asyncio.TimeoutError:
                break
        return "kept"
    finally:
        writer.close()


@with_broker(heartbeat_interval_ms=200, heartbeat_intervals=3)
async def heartbeats_silent_client_is_dropped_answering_one_kept(url: str) -> Outcome:
    async with AsyncSession(url) as session:
        writer = await session.open_queue(f"{PRIORITY}-hb", write=True)
        silent = await _silent_after_negotiation(url, wait=5.0)
        # The pybmq session was idle as long, answering heartbeats: it still posts.
        alive = (await writer.post(b"still here")).status.name
    return {"silent": silent, "answering": alive}


# -- closing --------------------------------------------------------------------------------------


async def _close_outcome(queue: AsyncQueue) -> str:
    try:
        await queue.close()
    except PybmqError as exc:
        return refusal(exc)
    return "ok"


@scenario
async def close_one_app_of_a_shared_queue_id(url: str) -> Outcome:
    """pybmq gives one qId to every appId (and the writer) of a queue in a session, and closes
    each with isFinal only for the last of them: the others of the qId live on."""
    uri = f"{FANOUT}-shared"
    async with AsyncSession(url) as session:
        foo = await session.open_queue(f"{uri}?id=foo", read=True)
        bar = await session.open_queue(f"{uri}?id=bar", read=True)
        writer = await session.open_queue(uri, write=True)
        before = (await writer.post(b"before")).status.name
        closed_foo = await _close_outcome(foo)
        after = (await writer.post(b"after")).status.name
        return {
            "post_before": before,
            "close_foo": closed_foo,
            "post_after": after,
            "close_bar": await _close_outcome(bar),
            "close_writer": await _close_outcome(writer),
        }


@with_broker(queue_messages=5)
async def fanout_queue_message_quota(url: str) -> Outcome:
    """Whether a fan-out queue's quota counts a message once, or once per app."""
    uri = f"{FANOUT}-quota"
    async with AsyncSession(url) as c, AsyncSession(url) as p:
        await c.open_queue(f"{uri}?id=foo", read=True, max_unconfirmed_messages=0)
        writer = await p.open_queue(uri, write=True)
        statuses = []
        for i in range(8):
            statuses.append((await writer.post(b"fq%d" % i)).status.name)
        return statuses


# -- raw opens: what the client would never send -------------------------------------------------


def _open(uri: str, q_id: int, flags: int, **counts: int) -> Any:
    from pybmq.generated import bmqp_ctrlmsg as ctrl

    params = ctrl.QueueHandleParameters(uri=uri, q_id=q_id, flags=flags, **counts)
    return ctrl.ControlMessage(open_queue=ctrl.OpenQueue(handle_parameters=params))


@scenario
async def raw_opens_with_bad_uris_and_flags(url: str) -> Outcome:
    read, write, ack = 2, 4, 8  # QueueFlags bits
    good = "bmq://bmq.test.mem.priority/raw"
    cases = {
        "not_a_uri": _open("not a uri", 1, write, write_count=1),
        "no_queue_name": _open("bmq://bmq.test.mem.priority", 2, write, write_count=1),
        "unknown_domain": _open("bmq://bmq.no.such/raw", 3, write, write_count=1),
        "no_flags": _open(good, 4, 0),
        "unknown_flag_bit": _open(good, 5, write | 64, write_count=1),
        "admin_flag": _open(good, 8, 1 | write, write_count=1, admin_count=1),
        "counts_disagree": _open(good, 6, read, read_count=0),
        "good_read_write_ack": _open(good, 7, read | write | ack, read_count=1, write_count=1),
        "queue_name_of_64": _open(good[:-3] + "q" * 64, 9, write, write_count=1),
        "queue_name_of_65": _open(good[:-3] + "q" * 65, 10, write, write_count=1),
    }
    answers = await _raw_control(url, list(cases.values()))
    return dict(zip(cases, answers + ["-"] * (len(cases) - len(answers)), strict=True))


@scenario
async def raw_open_of_an_open_queue_id_again(url: str) -> Outcome:
    """The same queue under the same qId twice (pybmq and the official SDK never do this)."""
    read, write, ack = 2, 4, 8
    good = "bmq://bmq.test.mem.priority/raw-again"
    return await _raw_control(
        url,
        [
            _open(good, 7, read | write | ack, read_count=1, write_count=1),
            _open(good, 7, write | ack, write_count=1),
        ],
    )


# -- oversized input ------------------------------------------------------------------------------


def _put_event(size: int) -> bytes:
    """One PUT (queue id 1, correlation id 1, ACK requested) of ``size`` bytes of data, past the
    protocol's limit if asked: the builder's limits are lifted for this one call."""
    from unittest import mock

    from pybmq.wire import put

    big = size + 4096
    with (
        mock.patch.object(put, "PUT_MAX_PAYLOAD_SIZE_SOFT", big),
        mock.patch.object(put.PutEventBuilder, "_max_single_event", big + 4096),
    ):
        builder = put.PutEventBuilder()
        builder.add(1, b"o" * size, correlation_id=1, ack_requested=True)
        (event,) = builder.finish()
    return event


async def _raw_put(url: str, size: int) -> str:
    """Open a queue for writing on a raw connection and post ``size`` bytes: the ACK's status
    code, or "closed" if the broker hangs up."""
    from pybmq.wire.batches import iter_ack

    read_write_ack = 4 | 8
    host, port = url.removeprefix("tcp://").rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(_hello())
        await asyncio.wait_for(_read_event(reader), 5)
        opened = _open(f"{PRIORITY}-oversized", 1, read_write_ack, write_count=1)
        opened.r_id = 1
        from pybmq.wire.control import encode_control

        writer.write(encode_control(opened))
        while (await asyncio.wait_for(_read_event(reader), 5))[0] != 1:
            pass
        writer.write(_put_event(size))
        await writer.drain()
        while True:
            kind, event = await asyncio.wait_for(_read_event(reader), 10)
            if kind == 5:  # ACK
                return f"ack status {next(iter_ack(event)).status}"
    except (asyncio.IncompleteReadError, ConnectionError):
        return "closed"
    except asyncio.TimeoutError:
        return "no answer"
    finally:
        writer.close()


@scenario
async def raw_put_at_and_over_the_size_limit(url: str) -> Outcome:
    limit = 64 * 1024 * 1024
    return {"at_limit": await _raw_put(url, limit), "over_limit": await _raw_put(url, limit + 4)}


@scenario
async def raw_put_over_the_event_size_limit(url: str) -> Outcome:
    return await _raw_put(url, 67 * 1024 * 1024)  # an event past PUT_EVENT_MAX_SIZE_SOFT
