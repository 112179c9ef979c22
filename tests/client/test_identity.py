"""What pybmq says about itself in the negotiation: every string of the ClientIdentity is
printable ASCII within its bound, whatever the process and host are called (upstream's broker
flags anything else, a495f02b1), read from the bytes the engine sends; a hostile name still
negotiates with the simulator and the real broker, and the simulator flags a raw client that
sends one, as the broker does."""

from __future__ import annotations

import asyncio
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pybmq.client.aio import AsyncSession
from pybmq.client.engine import ClientEngine
from pybmq.client.handshake import IDENTITY_LIMITS
from pybmq.client.options import SessionOptions
from pybmq.errors import UsageError
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.printable import is_printable_ascii, printable_ascii
from pybmq.sim.server import BrokerSimulator
from pybmq.wire.control import decode_control_as, encode_control
from pybmq.wire.framing import EventReader

from tests.helpers.brokers import BROKER_KINDS, broker_url

pytestmark = pytest.mark.timeout(60)

HOSTILE_NAMES = [
    "\x1b]0;pwned\x07evil",  # a terminal title and a bell
    "line\nbreak\r\x00nul",
    "\u202eexe.txt",  # a right-to-left override
    "スクリプト.py",  # a name in another alphabet
    "caf\u00e9-\udcff",  # a lone surrogate (bytes that were not UTF-8)
    "x" * 100_000,
    "\x7f\x80\x9f",
]


def sent_identity(options: SessionOptions) -> ctrl.ClientIdentity:
    engine = ClientEngine(options)
    engine.start(0.0)
    engine.connection_made(0.0)
    (event,) = EventReader().feed(engine.data_to_send())
    message, _ = decode_control_as(event, ctrl.NegotiationMessage)
    assert message.client_identity is not None
    return message.client_identity


def strings_of(identity: ctrl.ClientIdentity) -> dict[str, str]:
    return {
        "process_name": identity.process_name,
        "host_name": identity.host_name,
        "features": identity.features,
        "user_agent": identity.user_agent,
        "cluster_name": identity.cluster_name,
        "client_id": identity.guid_info.client_id,
    }


@pytest.mark.parametrize("name", HOSTILE_NAMES, ids=range(len(HOSTILE_NAMES)))
def test_hostile_process_and_host_names_are_sent_as_printable_ascii(name: str) -> None:
    identity = sent_identity(SessionOptions(process_name=name, host_name=name))
    for field_name, text in strings_of(identity).items():
        assert is_printable_ascii(text), (field_name, text)
    assert len(identity.process_name) == min(len(name), IDENTITY_LIMITS["process_name"])
    assert len(identity.host_name) == min(len(name), IDENTITY_LIMITS["host_name"])
    assert identity.process_name == printable_ascii(name, IDENTITY_LIMITS["process_name"])


@given(st.text(), st.text())
def test_any_name_is_sent_printable_and_bounded(process: str, host: str) -> None:
    identity = sent_identity(SessionOptions(process_name=process, host_name=host))
    for field_name, text in strings_of(identity).items():
        assert is_printable_ascii(text), (field_name, text)
        assert len(text) <= IDENTITY_LIMITS.get(field_name, 64)


def test_printable_names_go_unchanged() -> None:
    identity = sent_identity(
        SessionOptions(process_name="my job.py", host_name="host-1.example.com")
    )
    assert (identity.process_name, identity.host_name) == ("my job.py", "host-1.example.com")


def test_the_default_process_name_is_the_scripts_file_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "argv", ["/opt/jobs/\u00fcbung\x1b.py", "--flag"])
    identity = sent_identity(SessionOptions())
    assert identity.process_name == "?bung?.py"
    monkeypatch.setattr(sys, "argv", ["/"])
    assert SessionOptions().process_name == "python"


def test_a_user_agent_prefix_must_be_printable_ascii() -> None:
    for bad in ("caf\u00e9", "tab\there", "x" * 129):
        with pytest.raises(UsageError, match="printable ASCII"):
            SessionOptions(user_agent_prefix=bad)
    identity = sent_identity(SessionOptions(user_agent_prefix="billing-svc/2.1"))
    assert identity.user_agent.startswith("billing-svc/2.1 pybmq:")


@pytest.fixture(params=BROKER_KINDS)
async def broker(request: pytest.FixtureRequest) -> object:
    async with broker_url(request) as url:
        yield url


async def test_a_session_with_hostile_names_negotiates_and_works(broker: str) -> None:
    options = SessionOptions(process_name=HOSTILE_NAMES[0], host_name=HOSTILE_NAMES[3])
    async with AsyncSession(broker, options=options) as session:
        queue = await session.open_queue(
            "bmq://bmq.test.mem.priority/identity", read=True, write=True
        )
        assert (await queue.post(b"named oddly")).ok
        message = await asyncio.wait_for(queue.get(), 10)
        assert message.payload == b"named oddly"
        await message.confirm()


async def test_the_simulator_flags_an_unprintable_identity_as_the_broker_does() -> None:
    identity = sent_identity(SessionOptions())
    identity.host_name = "bad\x1bhost"
    identity.user_agent = "caf\u00e9"
    hello = encode_control(ctrl.NegotiationMessage(client_identity=identity), "JSON")
    async with BrokerSimulator() as sim:
        reader, writer = await asyncio.open_connection(sim.host, sim.port)
        writer.write(hello)
        answer = EventReader().feed(await asyncio.wait_for(reader.read(65536), 10))
        writer.close()
        response, _ = decode_control_as(answer[0], ctrl.NegotiationMessage)
        assert response.broker_response is not None
        assert response.broker_response.result.category is ctrl.StatusCategory.E_SUCCESS
        improper = sim.broker.stats.improper
    assert any("hostName, userAgent" in line for line in improper), improper
