"""The start of a client session on the simulated broker: the AUTHENTICATION exchange (the
decisions are ``pybmq.sim.auth``'s) and the negotiation, answered with the broker's identity and
heartbeat settings. Functions of the ``ClientSession`` they serve.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

from pybmq._version import __version__
from pybmq.errors import ProtocolError
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.generated.wire_codec import PROTOCOL_VERSION
from pybmq.printable import is_printable_ascii
from pybmq.sim.auth import shown
from pybmq.sim.config import BROKER_VERSION, BrokerConfig
from pybmq.sim.states import SessionInput
from pybmq.wire.control import (
    decode_authentication,
    decode_control_as,
    encode_authentication,
    encode_control,
    has_feature,
)
from pybmq.wire.framing import Event

if TYPE_CHECKING:
    from pybmq.sim.session import ClientSession

__all__ = ["authenticate", "broker_response", "negotiate", "unprintable_fields"]

log = logging.getLogger("pybmq.sim")


def authenticate(session: ClientSession, event: Event, now: float) -> None:
    """Answer an AUTHENTICATION event; a refused credential closes the session."""
    assert session.auth is not None
    message, encoding = decode_authentication(event)
    request = message.authentication_request
    if request is None:
        raise ProtocolError(
            f"a client may only send an authenticationRequest, got {message.selection}",
            offset=event.offset,
            path="AuthenticationMessage",
        )
    host = session.peer.rpartition(":")[0] or session.peer
    response, accepted = session.auth.answer(request, now, session.broker.auth_throttle, host)
    session.send(encode_authentication(response, encoding))
    if not accepted:
        session.close(f"authentication refused (mechanism {shown(request.mechanism)!r})")


def negotiate(session: ClientSession, event: Event) -> None:
    """Answer the ClientIdentity: the session opens, or is refused and closed."""
    broker = session.broker
    if session.auth is not None and not session.auth.may_negotiate():
        session.close("negotiation without authentication (anonymous access is off)")
        return
    message, encoding = decode_control_as(event, ctrl.NegotiationMessage)
    identity = message.client_identity if message.selection == "client_identity" else None
    if identity is None:
        raise ProtocolError(
            f"negotiation must carry a clientIdentity, got {message.selection}",
            offset=event.offset,
            path="NegotiationMessage",
        )
    session.client_identity = identity
    unprintable = unprintable_fields(identity)
    if unprintable:
        # The broker flags it (a495f02b1: "in preparation for enforcing it") and goes on.
        session.improper(f"non-printable characters in the identity's {', '.join(unprintable)}")
    session.extended_properties = broker.config.extended_properties and has_feature(
        identity.features, "MPS", "MESSAGE_PROPERTIES_EX"
    )
    problem = None
    if identity.protocol_version != PROTOCOL_VERSION:
        problem = (
            "E_NOT_SUPPORTED",
            f"unsupported protocol version {identity.protocol_version}",
        )
    elif identity.client_type not in (ctrl.ClientType.E_TCPCLIENT, ctrl.ClientType.E_TCPADMIN):
        problem = ("E_NOT_SUPPORTED", f"unsupported client type {identity.client_type.name}")
    elif (refusal := broker.hooks.refuse_negotiation(session)) is not None:
        problem = ("E_REFUSED", refusal)
    category, text = problem or ("E_SUCCESS", "")
    response = broker_response(broker.config, session.session_id, category, text)
    session.send(encode_control(response, encoding))
    if problem:
        session.close(f"negotiation refused: {text}")
        return
    session.advance(SessionInput.NEGOTIATED)
    log.info(
        "session %d (%s): negotiated, features %r",
        session.session_id,
        session.peer,
        identity.features,
    )


def unprintable_fields(identity: ctrl.ClientIdentity) -> list[str]:
    """The identity's string fields that are not printable ASCII (by name)."""
    fields = {
        "processName": identity.process_name,
        "hostName": identity.host_name,
        "features": identity.features,
        "clusterName": identity.cluster_name,
        "userAgent": identity.user_agent,
        "guidInfo.clientId": identity.guid_info.client_id,
    }
    return [name for name, text in fields.items() if not is_printable_ascii(text)]


def broker_response(
    config: BrokerConfig, session_id: int, category: str, text: str
) -> ctrl.NegotiationMessage:
    """The answer to a ClientIdentity: ``category`` (a StatusCategory name) and why, the
    broker's identity and the heartbeat settings the client is to use."""
    return ctrl.NegotiationMessage(
        broker_response=ctrl.BrokerResponse(
            result=ctrl.Status(
                category=ctrl.StatusCategory[category],
                code=0 if category == "E_SUCCESS" else -1,
                message=text,
            ),
            protocol_version=PROTOCOL_VERSION,
            broker_version=BROKER_VERSION,
            is_deprecated_sdk=False,
            broker_identity=ctrl.ClientIdentity(
                protocol_version=PROTOCOL_VERSION,
                sdk_version=BROKER_VERSION,
                client_type=ctrl.ClientType.E_TCPBROKER,
                process_name=f"pybmq-sim/{__version__}",
                pid=os.getpid(),
                session_id=session_id,
                host_name="localhost",
                features=config.features(),
                cluster_name="pybmq-sim",
                cluster_node_id=-1,
                sdk_language=ctrl.ClientLanguage.E_CPP,
                guid_info=ctrl.GuidInfo(client_id="", nano_seconds_from_epoch=0),
            ),
            heartbeat_interval_ms=config.heartbeat_interval_ms,
            max_missed_heartbeats=config.max_missed_heartbeats,
        )
    )
