"""BER primitives as BDE's balber writes and reads them; the per-type code is generated.

The generated ``pybmq.generated.*_ber`` modules call only this module. Writing: primitives get a
definite length (short form below 128, else the minimal long form), constructed values use the
indefinite form (``80`` … ``00 00``) exactly as balber emits them. Reading: both length forms are
accepted, every length is checked against its enclosing element, nesting depth is bounded, and
every failure is a ``DecodeError`` carrying the byte offset and the schema path.
"""

from __future__ import annotations

import enum
from typing import Any, TypeVar

from pybmq.errors import DecodeError, EncodeError

MAX_DEPTH = 64  # deeper nesting than any BDE schema needs: refuse rather than recurse
EOC = b"\x00\x00"
INDEFINITE = b"\x80"

# Identifier byte bits (X.690 8.1.2).
CLASS_MASK = 0xC0
CONTEXT = 0x80
CONSTRUCTED = 0x20

E = TypeVar("E", bound=enum.IntEnum)


def identifier(tag_class: int, constructed: bool, number: int) -> bytes:
    """Identifier octets for a tag (used by the generator to precompute tag constants)."""
    first = tag_class | (CONSTRUCTED if constructed else 0)
    if number < 31:
        return bytes([first | number])
    groups = []
    while True:
        groups.append(number & 0x7F)
        number >>= 7
        if not number:
            break
    tail = [g | 0x80 for g in reversed(groups[1:])] + [groups[0]]
    return bytes([first | 0x1F, *tail])


# -- writing ---------------------------------------------------------------------------------------


def length_octets(n: int) -> bytes:
    if n < 0x80:
        return bytes([n])
    body = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(body)]) + body


def int_content(value: int) -> bytes:
    """Minimal two's-complement octets (an unsigned value with its top bit set gets a 00 prefix)."""
    return value.to_bytes((value + (value < 0)).bit_length() // 8 + 1, "big", signed=True)


def put_int(out: bytearray, ident: bytes, value: object, lo: int, hi: int, path: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise EncodeError(f"{path}: expected an integer, got {type(value).__name__}")
    if not lo <= value <= hi:
        raise EncodeError(f"{path}: {value} is outside [{lo}, {hi}]")
    content = int_content(value)
    out += ident
    out.append(len(content))
    out += content


def put_bool(out: bytearray, ident: bytes, value: object, path: str) -> None:
    if not isinstance(value, bool):
        raise EncodeError(f"{path}: expected a bool, got {type(value).__name__}")
    out += ident
    out += b"\x01\x01" if value else b"\x01\x00"


def put_str(out: bytearray, ident: bytes, value: object, path: str) -> None:
    if not isinstance(value, str):
        raise EncodeError(f"{path}: expected a str, got {type(value).__name__}")
    try:
        content = value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise EncodeError(f"{path}: string is not encodable as UTF-8 ({exc.reason})") from exc
    out += ident
    out += length_octets(len(content))
    out += content


def put_bytes(out: bytearray, ident: bytes, value: object, path: str) -> None:
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise EncodeError(f"{path}: expected bytes, got {type(value).__name__}")
    content = bytes(value)
    out += ident
    out += length_octets(len(content))
    out += content


def put_enum(out: bytearray, ident: bytes, value: object, enum_cls: type[E], path: str) -> None:
    put_int(out, ident, enum_value(value, enum_cls, path), -(2**31), 2**31 - 1, path)


def enum_value(value: object, enum_cls: type[E], path: str) -> E:
    """``value`` as a member of ``enum_cls`` (a plain int naming a member is accepted)."""
    if isinstance(value, enum_cls):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return enum_cls(value)
        except ValueError:
            pass
    raise EncodeError(f"{path}: {value!r} is not a {enum_cls.__name__}")


def check_list(value: object, path: str) -> list[Any]:
    # list[Any]: the generated encoders pass each item to the encoder of its declared type.
    if not isinstance(value, list):
        raise EncodeError(f"{path}: expected a list, got {type(value).__name__}")
    return value


# -- reading ---------------------------------------------------------------------------------------


class BerReader:
    """A cursor over one BER value; the generated decoders drive it.

    ``end`` arguments are the absolute end of the enclosing definite-length element, or None when
    the enclosing element uses the indefinite form (then its end is its ``00 00``).
    """

    __slots__ = ("data", "depth", "pos", "size")

    def __init__(self, data: bytes | bytearray | memoryview) -> None:
        self.data = bytes(data)
        self.pos = 0
        self.size = len(self.data)
        self.depth = 0

    def fail(self, message: str, path: str, offset: int | None = None) -> DecodeError:
        return DecodeError(message, offset=self.pos if offset is None else offset, path=path)

    def fail_at(self, message: str, path: str, name: str, offset: int) -> DecodeError:
        return DecodeError(message, offset=offset, path=f"{path}.{name}")

    def header(self, end: int | None, path: str) -> tuple[int, int, int | None]:
        """Read identifier and length: (class|constructed bits, tag number, length or None)."""
        data = self.data
        pos = self.pos
        limit = self.size if end is None else end
        if pos >= limit:
            raise self.fail("truncated: expected an element", path)
        first = data[pos]
        pos += 1
        number = first & 0x1F
        if number == 0x1F:
            number = 0
            for _ in range(4):
                if pos >= limit:
                    raise self.fail("truncated inside a tag number", path, pos)
                byte = data[pos]
                pos += 1
                number = (number << 7) | (byte & 0x7F)
                if not byte & 0x80:
                    break
            else:
                raise self.fail("tag number longer than 4 octets", path, pos)
        if pos >= limit:
            raise self.fail("truncated: missing length octets", path, pos)
        octet = data[pos]
        pos += 1
        length: int | None
        if octet < 0x80:
            length = octet
        elif octet == 0x80:
            if not first & CONSTRUCTED:
                raise self.fail("indefinite length on a primitive element", path, pos - 1)
            length = None
        else:
            count = octet & 0x7F
            if count > 4 or pos + count > limit:
                raise self.fail(f"bad long-form length ({count} octets)", path, pos - 1)
            length = int.from_bytes(data[pos : pos + count], "big")
            pos += count
        if length is not None and pos + length > limit:
            raise self.fail(f"length {length} runs past the end of its container", path, pos)
        self.pos = pos
        return first & 0xE0, number, length

    def more(self, end: int | None, path: str) -> bool:
        """True if another child element follows; consumes the ``00 00`` that ends an indefinite."""
        pos = self.pos
        if end is None:
            if pos + 2 > self.size:
                raise self.fail("truncated: missing end-of-contents octets", path)
            if self.data[pos] == 0:
                if self.data[pos + 1] != 0:
                    raise self.fail("malformed end-of-contents octets", path)
                self.pos = pos + 2
                return False
            return True
        if pos < end:
            return True
        if pos > end:
            raise self.fail("element overran its container", path)
        return False

    def child_end(self, length: int | None) -> int | None:
        return None if length is None else self.pos + length

    def close(self, end: int | None, path: str) -> None:
        """After decoding a constructed child: a definite one must end exactly at ``end``."""
        if end is not None and self.pos != end:
            raise self.fail("constructed element length does not match its content", path)

    def enter(self, path: str) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.fail(f"nesting deeper than {MAX_DEPTH} levels", path)

    def leave(self) -> None:
        self.depth -= 1

    def expect(self, cc: int, want: int, path: str, name: str) -> None:
        """Check the class+form bits of the element just read."""
        if cc != want:
            form = "constructed" if want & CONSTRUCTED else "primitive"
            message = f"expected a {form} element, got identifier bits {cc:#04x}"
            raise self.fail_at(message, path, name, self.pos)

    def skip(self, cc: int, length: int | None, path: str) -> None:
        """Skip the element whose header was just read (an unknown tag: forward compatibility)."""
        if length is not None:
            self.pos += length
            return
        self.enter(path)
        while self.more(None, path):
            child_cc, _, child_length = self.header(None, path)
            self.skip(child_cc, child_length, path)
        self.leave()

    def primitive(self, length: int | None) -> bytes:
        assert length is not None  # header() refuses indefinite primitives
        start = self.pos
        self.pos = start + length
        return self.data[start : self.pos]

    def read_int(self, length: int | None, lo: int, hi: int, path: str, name: str) -> int:
        start = self.pos
        raw = self.primitive(length)
        if not raw or len(raw) > 9:
            raise self.fail_at(f"integer of {len(raw)} octets", path, name, start)
        value = int.from_bytes(raw, "big", signed=True)
        if not lo <= value <= hi:
            raise self.fail_at(f"integer {value} outside [{lo}, {hi}]", path, name, start)
        return value

    def read_bool(self, length: int | None, path: str, name: str) -> bool:
        start = self.pos
        raw = self.primitive(length)
        if len(raw) != 1:
            raise self.fail_at(f"boolean of {len(raw)} octets", path, name, start)
        return raw != b"\x00"

    def read_str(self, length: int | None, path: str, name: str) -> str:
        start = self.pos
        raw = self.primitive(length)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            message = f"string is not valid UTF-8 ({exc.reason})"
            raise self.fail_at(message, path, name, start) from None

    def read_bytes(self, length: int | None, path: str, name: str) -> bytes:
        return self.primitive(length)

    def read_enum(self, length: int | None, enum_cls: type[E], path: str, name: str) -> E:
        start = self.pos
        value = self.read_int(length, -(2**31), 2**31 - 1, path, name)
        try:
            return enum_cls(value)
        except ValueError:
            message = f"{value} is not a {enum_cls.__name__} id"
            raise self.fail_at(message, path, name, start) from None

    def top(self, path: str) -> int | None:
        """Read the outermost header: balber tags the top-level value as a universal SEQUENCE."""
        cc, number, length = self.header(None, path)
        if cc != CONSTRUCTED or number != 16:
            raise self.fail("top-level value is not a constructed universal SEQUENCE", path, 0)
        return self.child_end(length)

    def finish(self, path: str) -> None:
        if self.pos != self.size:
            raise self.fail(f"{self.size - self.pos} trailing bytes after the value", path)
