"""Message properties: typed name -> value pairs carried before a PUT/PUSH payload.

Wire form (bmqp_protocol.h MessagePropertiesHeader/MessagePropertyHeader, bmqp_messageproperties):
a header, then one property header per property, then name+value pairs, then word padding. Two
formats differ only in what each property header's 26-bit value field holds:
- old format: the value's length;
- extended format (MPS:MESSAGE_PROPERTIES_EX, announced by a non-zero schema id in the PUT/PUSH
  header): the offset of the property's name from the end of the property headers, lengths
  being the differences between consecutive offsets.
Limits are upstream's: at most 255 properties, names of 1..4095 bytes, fixed-size values of the
right size, the whole area under 64 MiB.

``MessageProperties`` is a mapping name -> value that also knows each value's wire type. A decoded
instance parses lazily (on first access) and re-encodes to its original bytes while unmodified;
an encoded area is cached, so reusing one properties object for many messages costs one encode.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Mapping

from pybmq.errors import EncodeError, ProtocolError, UsageError
from pybmq.generated.wire_codec import (
    MAX_NUM_PROPERTIES,
    MAX_PROPERTIES_AREA_LENGTH,
    MAX_PROPERTY_NAME_LENGTH,
    MAX_PROPERTY_VALUE_LENGTH,
    MESSAGE_PROPERTY_HEADER,
    MESSAGE_PROPERTY_HEADER_NAME_LENGTH_MASK,
    MESSAGE_PROPERTY_HEADER_TYPE_MASK,
    MESSAGE_PROPERTY_HEADER_TYPE_SHIFT,
    MESSAGE_PROPERTY_HEADER_VALUE_LOWER_MASK,
    MESSAGE_PROPERTY_HEADER_VALUE_UPPER_AT,
    MESSAGE_PROPERTY_HEADER_VALUE_UPPER_MASK,
    PROPERTY_VALUE_STRUCTS,
    PropertyType,
)
from pybmq.generated.wire_messages import (
    PADDING_MAX,
    PROPERTIES_HEADER_MAX_SIZE,
    PROPERTIES_HEADER_SIZE,
    PROPERTY_HEADER_MAX_SIZE,
    PROPERTY_HEADER_SIZE,
    declared_area,
    properties_area_size,
    properties_header,
    read_properties_header,
)

__all__ = [
    "TYPE_NAMES",
    "MessageProperties",
    "PropertyType",
    "PropertyValue",
    "decode_properties",
    "encode_properties",
    "lazy_properties",
    "properties_area_size",
]

PropertyValue = bool | int | str | bytes

# Plain ints on the decode path: IntEnum attribute access costs several times an int compare.
_BOOL, _STRING, _BINARY = int(PropertyType.BOOL), int(PropertyType.STRING), int(PropertyType.BINARY)
_FIXED: dict[int, struct.Struct] = {int(t): s for t, s in PROPERTY_VALUE_STRUCTS.items()}
# The range of each signed integer type, from its size on the wire.
_RANGES: dict[int, tuple[int, int]] = {
    t: (-(2 ** (8 * s.size - 1)), 2 ** (8 * s.size - 1))
    for t, s in PROPERTY_VALUE_STRUCTS.items()
    if t is not PropertyType.BOOL
}
# Each type's member by its wire value: a dict look-up, not an enum call per property read.
_TYPES: dict[int, PropertyType] = {int(t): t for t in PropertyType}
TYPE_NAMES: dict[int, str] = {value: t.name for value, t in _TYPES.items()}
_ENCODING = "utf-8"
_ERRORS = "surrogateescape"  # names and strings are bytes upstream: keep any byte lossless


def _infer_type(value: object) -> int:
    if isinstance(value, bool):
        return PropertyType.BOOL
    if isinstance(value, int):
        lo, hi = _RANGES[PropertyType.INT32]
        return PropertyType.INT32 if lo <= value < hi else PropertyType.INT64
    if isinstance(value, str):
        return PropertyType.STRING
    if isinstance(value, (bytes, bytearray, memoryview)):
        return PropertyType.BINARY
    raise EncodeError(f"no property type for a {type(value).__name__}: {value!r}")


def _check_value(name: str, ptype: int, value: object) -> PropertyValue:
    if ptype == PropertyType.BOOL:
        if not isinstance(value, bool):
            raise EncodeError(f"property {name!r}: BOOL needs a bool, got {value!r}")
        return value
    if ptype in _RANGES:
        lo, hi = _RANGES[ptype]
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value < hi:
            raise EncodeError(
                f"property {name!r}: {PropertyType(ptype).name} needs an int in [{lo}, {hi}), "
                f"got {value!r}"
            )
        return value
    if ptype == PropertyType.STRING:
        if not isinstance(value, str):
            raise EncodeError(f"property {name!r}: STRING needs a str, got {value!r}")
        _wire_text(value, f"property {name!r}")
        return value
    if ptype == PropertyType.BINARY:
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise EncodeError(f"property {name!r}: BINARY needs bytes, got {value!r}")
        return bytes(value)
    raise EncodeError(f"property {name!r}: unknown property type {ptype!r}")


def _wire_text(text: str, what: str) -> bytes:
    """``text`` as it goes on the wire (UTF-8; bytes that came undecodable from the wire
    round-trip as surrogate escapes), or EncodeError: a lone surrogate that is not such an
    escape has no bytes to stand for."""
    try:
        return text.encode(_ENCODING, _ERRORS)
    except UnicodeEncodeError as exc:
        raise EncodeError(
            f"{what}: not encodable as UTF-8 ({exc.reason} at character {exc.start}: "
            f"{text[exc.start : exc.start + 1]!r})"
        ) from None


def _value_bytes(ptype: int, value: PropertyValue) -> bytes:
    fixed = _FIXED.get(ptype)
    if fixed is not None:
        return fixed.pack(value)
    if ptype == PropertyType.STRING:
        assert isinstance(value, str)
        return value.encode(_ENCODING, _ERRORS)
    assert isinstance(value, bytes)
    return value


class MessageProperties(Mapping[str, PropertyValue]):
    """Typed message properties (insertion ordered, as they go on the wire)."""

    __slots__ = ("_cache", "_items", "_raw")

    def __init__(
        self, items: Mapping[str, PropertyValue | tuple[int, PropertyValue]] | None = None
    ) -> None:
        self._items: dict[str, tuple[int, PropertyValue]] | None = {}
        # The wire form it was decoded from while unmodified: (area, extended, offset for errors).
        self._raw: tuple[bytes, bool, int] | None = None
        # Encoded forms by (extended, header sizes); made on the first encode (a received
        # message that is only read never needs one).
        self._cache: dict[tuple[bool, int, int], bytes] | None = None
        for name, value in (items or {}).items():
            if isinstance(value, tuple):
                self.set(name, value[1], value[0])
            else:
                self.set(name, value)

    # -- decoding --------------------------------------------------------------------------------

    @classmethod
    def decode(
        cls, area: bytes | bytearray | memoryview, *, extended: bool, offset: int = 0
    ) -> MessageProperties:
        """Wrap a wire-form properties area; it is parsed on first access (``offset`` for errors),
        so a message whose properties are never read costs one small object (a client's hot
        path: see ``lazy_properties``)."""
        return lazy_properties(area if type(area) is bytes else bytes(area), extended, offset)

    def _loaded(self) -> dict[str, tuple[int, PropertyValue]]:
        items = self._items
        if items is None:
            assert self._raw is not None
            area, extended, offset = self._raw
            # Only the area its header declares (``decode_properties`` checks it).
            declared = declared_area(area)
            if declared is not area:
                area = declared
                self._raw = (area, extended, offset)
            items = self._items = decode_properties(area, extended=extended, offset=offset)
        return items

    # -- mapping ---------------------------------------------------------------------------------

    def __getitem__(self, name: str) -> PropertyValue:
        return self._loaded()[name][1]

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaded())

    def __len__(self) -> int:
        return len(self._loaded())

    def __repr__(self) -> str:
        inner = ", ".join(
            f"{n!r}: {PropertyType(t).name}({v!r})" for n, (t, v) in self._loaded().items()
        )
        return f"MessageProperties({{{inner}}})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MessageProperties):
            return self._loaded() == {n: (t, v) for n, t, v in other.typed_items()}
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def get_typed(self, name: str) -> tuple[PropertyType, PropertyValue]:
        ptype, value = self._loaded()[name]
        return _TYPES[ptype], value

    def type_of(self, name: str) -> PropertyType:
        return _TYPES[self._loaded()[name][0]]

    def typed_items(self) -> list[tuple[str, PropertyType, PropertyValue]]:
        types = _TYPES
        return [(n, types[t], v) for n, (t, v) in self._loaded().items()]

    # -- mutation --------------------------------------------------------------------------------

    def set(self, name: str, value: PropertyValue, ptype: int | None = None) -> None:
        """Set ``name``; the type is inferred when not given (int -> INT32, else INT64)."""
        if not isinstance(name, str) or not name or not (name[0].isascii() and name[0].isalnum()):
            # bmqp_messageproperties.h isValidPropertyName: names starting otherwise are the
            # broker's (system properties), never set by clients.
            raise EncodeError(
                f"property name must be a str starting with an ASCII letter or digit, got {name!r}"
            )
        if len(_wire_text(name, "property name")) > MAX_PROPERTY_NAME_LENGTH:
            raise EncodeError(f"property name longer than {MAX_PROPERTY_NAME_LENGTH} bytes")
        if ptype is None:
            ptype = _infer_type(value)
        checked = _check_value(name, ptype, value)
        items = self._loaded()
        if name not in items and len(items) >= MAX_NUM_PROPERTIES:
            raise EncodeError(f"at most {MAX_NUM_PROPERTIES} properties per message")
        items[name] = (int(ptype), checked)
        self._raw = None
        self._cache = None

    def set_bool(self, name: str, value: bool) -> None:
        self.set(name, value, PropertyType.BOOL)

    def set_char(self, name: str, value: int) -> None:
        self.set(name, value, PropertyType.CHAR)

    def set_short(self, name: str, value: int) -> None:
        self.set(name, value, PropertyType.SHORT)

    def set_int32(self, name: str, value: int) -> None:
        self.set(name, value, PropertyType.INT32)

    def set_int64(self, name: str, value: int) -> None:
        self.set(name, value, PropertyType.INT64)

    def set_string(self, name: str, value: str) -> None:
        self.set(name, value, PropertyType.STRING)

    def set_binary(self, name: str, value: bytes) -> None:
        self.set(name, value, PropertyType.BINARY)

    def remove(self, name: str) -> None:
        del self._loaded()[name]
        self._raw = None
        self._cache = None

    # -- encoding --------------------------------------------------------------------------------

    def encode(
        self,
        extended: bool = True,
        *,
        header_size: int = PROPERTIES_HEADER_SIZE,
        property_header_size: int = PROPERTY_HEADER_SIZE,
    ) -> bytes:
        """The wire-form area (padding included); b"" when there are no properties."""
        if self._raw is not None and extended == self._raw[1]:
            # Unmodified since decoding: upstream also sends the received bytes back unchanged.
            self._loaded()  # but never forward bytes that do not parse
            assert self._raw is not None
            return self._raw[0]
        key = (extended, header_size, property_header_size)
        cache = self._cache
        if cache is None:
            cache = self._cache = {}
        cached = cache.get(key)
        if cached is None:
            cached = cache[key] = encode_properties(
                self._loaded(),
                extended=extended,
                header_size=header_size,
                property_header_size=property_header_size,
            )
        return cached


class _Received(MessageProperties):
    """Properties as they came on the wire, parsed on first access: what ``decode`` and
    ``lazy_properties`` make (a subclass only for its constructor, the cheapest there is)."""

    __slots__ = ()

    def __init__(self, area: bytes, extended: bool, offset: int = 0) -> None:
        self._raw = (area, extended, offset)
        self._items = None
        self._cache = None


# ``MessageProperties.decode`` without its checks of the argument types (``area`` is bytes):
# a received message's properties, parsed on first access (a client's hot path).
lazy_properties = _Received


def encode_properties(
    items: Mapping[str, tuple[int, PropertyValue]],
    *,
    extended: bool,
    header_size: int = PROPERTIES_HEADER_SIZE,
    property_header_size: int = PROPERTY_HEADER_SIZE,
) -> bytes:
    if not items:
        return b""
    if len(items) > MAX_NUM_PROPERTIES:
        raise EncodeError(f"at most {MAX_NUM_PROPERTIES} properties per message")
    for size, low, high in (
        (header_size, PROPERTIES_HEADER_SIZE, PROPERTIES_HEADER_MAX_SIZE),
        (property_header_size, PROPERTY_HEADER_SIZE, PROPERTY_HEADER_MAX_SIZE),
    ):
        if size % 2 or not low <= size <= high:  # counted in 2-byte units
            raise UsageError(f"header sizes must be even and within {low}..{high}, got {size}")
    heads: list[bytes] = []
    data: list[bytes] = []
    hpad = bytes(property_header_size - PROPERTY_HEADER_SIZE)
    offset = 0
    for name, (ptype, value) in items.items():
        name_bytes = name.encode(_ENCODING, _ERRORS)
        value_bytes = _value_bytes(ptype, value)
        if len(value_bytes) > MAX_PROPERTY_VALUE_LENGTH:
            raise EncodeError(f"property {name!r}: value longer than {MAX_PROPERTY_VALUE_LENGTH}")
        field = offset if extended else len(value_bytes)
        heads.append(
            MESSAGE_PROPERTY_HEADER.pack(
                (ptype << MESSAGE_PROPERTY_HEADER_TYPE_SHIFT)
                | (field >> MESSAGE_PROPERTY_HEADER_VALUE_UPPER_AT),
                field & MESSAGE_PROPERTY_HEADER_VALUE_LOWER_MASK,
                len(name_bytes),
            )
            + hpad
        )
        data.append(name_bytes)
        data.append(value_bytes)
        offset += len(name_bytes) + len(value_bytes)
    total = header_size + len(items) * property_header_size + offset
    if total > MAX_PROPERTIES_AREA_LENGTH:
        raise EncodeError(f"properties take {total} bytes, over {MAX_PROPERTIES_AREA_LENGTH}")
    header, pad = properties_header(
        header_size, property_header_size, total - header_size, len(items)
    )
    return b"".join((header, *heads, *data, pad))


def decode_properties(
    area: bytes | bytearray | memoryview, *, extended: bool, offset: int = 0
) -> dict[str, tuple[int, PropertyValue]]:
    """Parse a wire-form properties area (as upstream validates it); ``offset`` is for errors."""
    if not isinstance(area, bytes):
        area = bytes(area)

    def fail(msg: str, at: int, path: str) -> ProtocolError:
        return ProtocolError(msg, offset=offset + at, path=path)

    header_size, mph_size, area_size, count = read_properties_header(area, offset)
    pad = area[area_size - 1]
    if not 1 <= pad <= PADDING_MAX:
        raise fail(f"invalid padding byte {pad}", area_size - 1, "MessageProperties.padding")
    total = area_size - pad
    data_start = header_size + count * mph_size
    if data_start > total:
        raise fail(
            "property headers overrun the properties area", header_size, "MessagePropertyHeader"
        )
    items: dict[str, tuple[int, PropertyValue]] = {}
    unpack = MESSAGE_PROPERTY_HEADER.unpack_from
    fixed_structs = _FIXED
    cursor = data_start
    at = header_size
    last = count - 1
    type_shift, type_mask = MESSAGE_PROPERTY_HEADER_TYPE_SHIFT, MESSAGE_PROPERTY_HEADER_TYPE_MASK
    upper_mask, upper_at = (
        MESSAGE_PROPERTY_HEADER_VALUE_UPPER_MASK,
        MESSAGE_PROPERTY_HEADER_VALUE_UPPER_AT,
    )
    for i in range(count):
        hi, lo, nlen = unpack(area, at)
        ptype = (hi >> type_shift) & type_mask
        if not _BOOL <= ptype <= _BINARY:
            raise fail(f"invalid property type {ptype}", at, "MessagePropertyHeader.propertyType")
        nlen &= MESSAGE_PROPERTY_HEADER_NAME_LENGTH_MASK
        vstart = cursor + nlen
        if extended:
            # The field is the offset of this property's name; lengths follow from the next one.
            if data_start + (((hi & upper_mask) << upper_at) | lo) != cursor:
                raise fail("inconsistent property offsets", at, "MessagePropertyHeader")
            if i < last:
                nhi, nlo, _ = unpack(area, at + mph_size)
                vend = data_start + (((nhi & upper_mask) << upper_at) | nlo)
            else:
                vend = total
            if vend < vstart:
                raise fail("inconsistent property offsets", at, "MessagePropertyHeader")
        else:
            vend = vstart + (((hi & upper_mask) << upper_at) | lo)
        if vend > total:
            raise fail("property overruns the properties area", at, "MessagePropertyHeader")
        name = area[cursor:vstart].decode(_ENCODING, _ERRORS)
        if name in items:
            raise fail(f"duplicate property name {name!r}", cursor, "MessageProperty.name")
        fixed = fixed_structs.get(ptype)
        if fixed is not None:
            if vend - vstart != fixed.size:
                raise fail(
                    f"property {name!r}: {PropertyType(ptype).name} value of {vend - vstart} bytes",
                    at,
                    "MessagePropertyHeader.propertyValueLength",
                )
            value: PropertyValue = fixed.unpack_from(area, vstart)[0]
        elif ptype == _STRING:
            value = area[vstart:vend].decode(_ENCODING, _ERRORS)
        else:
            value = area[vstart:vend]
        items[name] = (ptype, value)
        cursor = vend
        at += mph_size
    if cursor != total:
        raise fail(
            f"properties end at {cursor} but the area holds {total} bytes",
            data_start,
            "MessageProperties",
        )
    return items
