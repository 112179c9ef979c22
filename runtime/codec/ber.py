"""BER primitives as BDE's balber writes and reads them; the per-type code is generated.

The generated ``pybmq.generated.*_ber`` modules call only this module. Writing: primitives get a
definite length (short form below 128, else the minimal long form), constructed values use the
indefinite form (``80`` … ``00 00``) exactly as balber emits them. Reading: both length forms are
accepted, every length is checked against its enclosing element, nesting depth is bounded, and
every failure is a ``DecodeError`` carrying the byte offset and the schema path.
"""

from __future__ import annotations

import enum
import math
from typing import Any, TypeVar

from pybmq.errors import DecodeError, EncodeError, UsageError

__all__ = [
    "CLASS_MASK",
    "CONSTRUCTED",
    "CONTEXT",
    "EOC",
    "INDEFINITE",
    "MAX_DEPTH",
    "BerReader",
    "E",
    "check_list",
    "enum_value",
    "identifier",
    "int_content",
    "length_octets",
    "put_bool",
    "put_bytes",
    "put_enum",
    "put_int",
    "put_real",
    "put_str",
    "real_content",
]

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


def real_content(value: float) -> bytes:
    """X.690 8.5 REAL content as balber writes it (``BerUtil_FloatingPointImpUtil``).

    Binary, base 2, scale 0, the mantissa shifted until odd; exponent and mantissa each in the
    fewest two's-complement octets (so a mantissa whose top bit is set gets a 00 prefix, which
    balber's signed read relies on). 0.0 and -0.0 are empty content; 0x40 +inf, 0x41 -inf,
    0x42 NaN.
    """
    if value == 0.0:
        return b""
    if math.isnan(value):
        return b"\x42"
    if math.isinf(value):
        return b"\x40" if value > 0 else b"\x41"
    fraction, exponent = math.frexp(abs(value))
    mantissa = int(fraction * (1 << 53))
    exponent -= 53
    while not mantissa & 1:
        mantissa >>= 1
        exponent += 1
    exp_octets = int_content(exponent)
    if len(exp_octets) > 3:  # cannot happen for a double; keep the general form anyway
        head = bytes([0x83, len(exp_octets)])
    else:
        head = bytes([0x80 | (len(exp_octets) - 1)])
    first = head[0] | (0x40 if value < 0 else 0)
    return bytes([first]) + head[1:] + exp_octets + int_content(mantissa)


def put_real(out: bytearray, ident: bytes, value: object, path: str) -> None:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise EncodeError(f"{path}: expected a float, got {type(value).__name__}")
    content = real_content(float(value))
    out += ident
    out.append(len(content))
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
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise UsageError(f"BER input must be bytes-like, not {type(data).__name__}")
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

    def next(self, end: int | None, path: str) -> tuple[int, int, int | None] | None:
        """The next child's header, or None at the end of its container (consuming its ``00 00``).

        Same result as ``more`` then ``header``, with a fast path for the common one-octet tag
        and one-octet length.
        """
        data = self.data
        pos = self.pos
        if end is None:
            if pos + 2 > self.size:
                raise self.fail("truncated: missing end-of-contents octets", path)
            first = data[pos]
            if first == 0:
                if data[pos + 1] != 0:
                    raise self.fail("malformed end-of-contents octets", path)
                self.pos = pos + 2
                return None
            limit = self.size
        else:
            if pos >= end:
                if pos > end:
                    raise self.fail("element overran its container", path)
                return None
            limit = end
            first = data[pos]
        if first & 0x1F != 0x1F and pos + 1 < limit:
            octet = data[pos + 1]
            if octet < 0x80 and pos + 2 + octet <= limit:
                self.pos = pos + 2
                return first & 0xE0, first & 0x1F, octet
            if octet == 0x80 and first & CONSTRUCTED:
                self.pos = pos + 2
                return first & 0xE0, first & 0x1F, None
        return self.header(end, path)  # the general (and error-reporting) path

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
        if length is None or not 0 < length <= 9:
            raise self.fail_at(f"integer of {length} octets", path, name, start)
        self.pos = start + length
        value = int.from_bytes(self.data[start : self.pos], "big", signed=True)
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

    def read_real(self, length: int | None, path: str, name: str) -> float:
        """A REAL in any X.690 form: binary (base 2, 8 or 16, any scale), decimal, special."""
        start = self.pos
        raw = self.primitive(length)
        try:
            return _real_value(raw)
        except (ValueError, OverflowError) as exc:
            raise self.fail_at(f"invalid REAL: {exc}", path, name, start) from None

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


_SPECIAL_REALS = {0x40: math.inf, 0x41: -math.inf, 0x42: math.nan, 0x43: -0.0}


def _real_value(raw: bytes) -> float:
    if not raw:
        return 0.0
    first = raw[0]
    if first & 0x80:  # binary encoding
        if (first >> 4) & 3 == 3:
            raise ValueError("reserved base")
        base_bits = {0: 1, 1: 3, 2: 4}[(first >> 4) & 3]
        scale = (first >> 2) & 3
        form = first & 3
        if form == 3:
            if len(raw) < 2:
                raise ValueError("missing exponent length")
            exp_len, exp_start = raw[1], 2
        else:
            exp_len, exp_start = form + 1, 1
        if exp_len == 0 or len(raw) < exp_start + exp_len:
            raise ValueError("truncated exponent")
        exponent = int.from_bytes(raw[exp_start : exp_start + exp_len], "big", signed=True)
        mantissa = int.from_bytes(raw[exp_start + exp_len :], "big")
        value = math.ldexp(float(mantissa), exponent * base_bits + scale)
        return -value if first & 0x40 else value
    if first & 0x40:
        if len(raw) != 1 or first not in _SPECIAL_REALS:
            raise ValueError(f"unknown special value 0x{first:02x}")
        return _SPECIAL_REALS[first]
    # Decimal encoding (ISO 6093 NR1/NR2/NR3), which balber does not write but X.690 allows.
    text = raw[1:].decode("ascii").strip().replace(",", ".")
    return float(text)
