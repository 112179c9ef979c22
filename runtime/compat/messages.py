"""``Message``, ``MessageHandle`` and ``Ack`` as the official SDK shows them, and the property
conversions between its (value dict, type dict) form and pybmq's typed ``MessageProperties``."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, NoReturn

from pybmq.client.events import AckStatus as RuntimeAckStatus
from pybmq.compat.checks import ACK_STATUS
from pybmq.compat.exceptions import Error
from pybmq.compat.values import AckStatus, PropertyType
from pybmq.wire.properties import MessageProperties
from pybmq.wire.properties import PropertyType as WireType

if TYPE_CHECKING:
    from pybmq.client.aio_queue import ReceivedMessage

__all__ = [
    "Ack",
    "Message",
    "MessageHandle",
    "PropertyTypeDict",
    "PropertyValueDict",
    "PropertyValueType",
    "compat_ack",
    "from_wire_properties",
    "new_handle",
    "new_message",
    "received_of",
    "to_wire_properties",
]

PropertyValueType = int | bytes | str
PropertyValueDict = Mapping[str, PropertyValueType]
"""Message properties as the official SDK types them: name → int, bytes or str."""
PropertyTypeDict = Mapping[str, PropertyType]
"""Name → ``PropertyType``: the wire type of a property, overriding the one inferred."""

_TO_WIRE = {member: WireType[member.name] for member in PropertyType}
_FROM_WIRE = {int(wire): member for member, wire in _TO_WIRE.items()}
_INT_RANGES = {
    PropertyType.SHORT: 16,
    PropertyType.INT32: 32,
    PropertyType.INT64: 64,
}


def _no_constructor(cls: type) -> NoReturn:
    raise Error(f"The {cls.__name__} class does not have a public constructor.")


# What pybmq passes first to the constructors below (the official classes have no public one:
# called without it, they raise as the official SDK's do).
_BUILD = object()


def _hex(guid: bytes) -> str:
    return guid.hex().upper()


class Message:
    """A message delivered to ``on_message``: ``data``, ``guid``, ``queue_uri``, ``properties``
    (name → value) and ``property_types`` (name → PropertyType)."""

    data: bytes
    guid: bytes
    queue_uri: str
    properties: dict[str, PropertyValueType]
    property_types: dict[str, PropertyType]
    _received: ReceivedMessage  # what a confirm names

    def __init__(self, *args: Any) -> None:
        if not args or args[0] is not _BUILD:
            _no_constructor(Message)
        _, data, guid, queue_uri, properties, property_types, received = args
        self.data = data
        self.guid = guid
        self.queue_uri = queue_uri
        self.properties = properties
        self.property_types = property_types
        self._received = received

    @property
    def received(self) -> ReceivedMessage:
        """The pybmq message this one was built from (what a confirm names)."""
        return self._received

    @property
    def total_size(self) -> int:
        """pybmq's addition (upstream C++ ``Message::totalSize``): the application data's size
        as it came on the wire, properties and payload, as compressed when it was."""
        return self._received.total_size

    def __repr__(self) -> str:
        return f"<Message[{_hex(self.guid)}] for {self.queue_uri}>"


class MessageHandle:
    """Comes with each ``Message`` in ``on_message``; ``confirm()`` confirms that message."""

    _message: Message
    _session: Any

    def __init__(self, *args: Any) -> None:
        if not args or args[0] is not _BUILD:
            _no_constructor(MessageHandle)
        _, self._message, self._session = args

    def confirm(self) -> None:
        """Tell the broker this message is processed (same as ``Session.confirm(message)``)."""
        self._session.confirm(self._message)

    def __repr__(self) -> str:
        return f"<MessageHandle[{_hex(self._message.guid)}] for {self._message.queue_uri}>"


class Ack:
    """The broker's answer to a post made with ``on_ack``: ``guid``, ``status``, ``queue_uri``."""

    guid: bytes | None
    status: AckStatus
    queue_uri: str

    def __init__(self, *args: Any) -> None:
        if not args or args[0] is not _BUILD:
            _no_constructor(Ack)
        _, self.guid, self.status, self.queue_uri = args

    def __repr__(self) -> str:
        guid = "" if self.guid is None else f"[{_hex(self.guid)}]"
        return f"<Ack{guid} {self.status.name} for {self.queue_uri}>"


# The constructors pybmq uses (the official classes have no public one).
new_message = partial(Message, _BUILD)
new_handle = partial(MessageHandle, _BUILD)

_SUCCESS = RuntimeAckStatus.SUCCESS
_ACK_SUCCESS = AckStatus.SUCCESS


def received_of(message: Message) -> ReceivedMessage:
    """The pybmq message a compat ``Message`` was built from (what a confirm names)."""
    return message.received


def compat_ack(guid: bytes, status: RuntimeAckStatus, queue_uri: str) -> Ack:
    """The official SDK's ``Ack`` for an engine ack; only a successful one names its GUID."""
    if status is _SUCCESS:
        return Ack(_BUILD, guid, _ACK_SUCCESS, queue_uri)
    return Ack(_BUILD, None, ACK_STATUS.get(status, AckStatus.UNRECOGNIZED), queue_uri)


# ---------------------------------------------------------------------- properties


def _wrong_type(name: str, value: object, expected: str) -> TypeError:
    return TypeError(
        f"{name!r} value is of the incorrect type, "
        f"{type(value).__name__!r} provided, {expected!r} expected."
    )


def _check_int(name: str, value: object, bits: int) -> int:
    if not isinstance(value, int):
        raise _wrong_type(name, value, "int")
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if not low <= value <= high:
        raise ValueError(f"Property {name} value must be between [{low}, {high}], inclusive")
    return int(value)


def to_wire_properties(
    properties: PropertyValueDict | None, overrides: PropertyTypeDict | None
) -> MessageProperties | None:
    """The official SDK's rules: bool → BOOL, int → INT64, str → STRING, bytes → BINARY unless
    ``overrides`` names another type; an override for a property not given is an Error."""
    if not properties and not overrides:
        return None
    types: dict[str, PropertyType] = {}
    values: dict[str, object] = {}
    raw: Mapping[Any, object] = properties or {}
    for raw_name, value in raw.items():
        name = _name(raw_name)
        if isinstance(value, bool):
            types[name] = PropertyType.BOOL
        elif isinstance(value, int):
            types[name] = PropertyType.INT64
        elif isinstance(value, str):
            types[name] = PropertyType.STRING
        elif isinstance(value, bytes):
            types[name] = PropertyType.BINARY
        else:
            raise Error(f"Property values of type {type(value).__name__!r} are not supported")
        values[name] = value
    for raw_name, ptype in (overrides or {}).items():
        name = _name(raw_name)
        if name not in types:
            raise Error(f"Received override for non-existent property {raw_name!r}")
        types[name] = ptype
    wire = MessageProperties()
    for name, value in values.items():
        if not name:
            raise ValueError(f"Failed to set key {name!r}: property names must not be empty")
        wire.set(name, _checked(name, types[name], value), int(_TO_WIRE[types[name]]))
    return wire


def _name(name: object) -> str:
    if isinstance(name, bytes):
        return name.decode("utf-8", "surrogateescape")
    if isinstance(name, str):
        return name
    raise TypeError(f"not expecting type '{type(name)}'")


def _checked(name: str, ptype: PropertyType, value: object) -> bool | int | str | bytes:
    """The value in pybmq's form for ``ptype``, or the official SDK's TypeError/ValueError."""
    if ptype is PropertyType.BOOL:
        if not isinstance(value, bool):
            raise _wrong_type(name, value, "bool")
        return value
    if ptype is PropertyType.CHAR:
        if not isinstance(value, bytes):
            raise _wrong_type(name, value, "bytes")
        if len(value) != 1:
            raise TypeError(
                f"{name!r} value does not have exactly 1 byte, {len(value)} bytes provided."
            )
        return value[0] - 256 if value[0] > 127 else value[0]
    bits = _INT_RANGES.get(ptype)
    if bits is not None:
        return _check_int(name, value, bits)
    if ptype is PropertyType.STRING:
        if isinstance(value, bytes):
            return value.decode("utf-8", "surrogateescape")
        if not isinstance(value, str):
            raise _wrong_type(name, value, "str")
        return value
    if ptype is PropertyType.BINARY:
        if not isinstance(value, bytes):
            raise _wrong_type(name, value, "bytes")
        return value
    raise TypeError(f"{ptype!r} is not a PropertyType")


def from_wire_properties(
    wire: Mapping[str, object] | None,
) -> tuple[dict[str, PropertyValueType], dict[str, PropertyType]]:
    """Received properties in the official SDK's form (CHAR values as one byte)."""
    values: dict[str, PropertyValueType] = {}
    types: dict[str, PropertyType] = {}
    if not wire or not isinstance(wire, MessageProperties):
        return values, types
    for name, wire_type, value in wire.typed_items():
        ptype = _FROM_WIRE[int(wire_type)]
        if ptype is PropertyType.CHAR and isinstance(value, int):
            value = bytes([value & 0xFF])
        values[name] = value  # type: ignore[assignment]
        types[name] = ptype
    return values, types
