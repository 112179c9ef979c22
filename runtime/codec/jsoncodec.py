"""JSON primitives as BDE's baljsn writes and reads them; the per-type code is generated.

baljsn (with the default options BlazingMQ uses) writes compact JSON, escapes ``"``, ``\\``, ``/``
and control characters (``\\b \\f \\n \\r \\t``, others as ``\\u00xx``), keeps other characters as
UTF-8, writes integers (64-bit too) as numbers, booleans as ``true``/``false``, enumerations by
name and binary data as base64 strings. See docs/codecs.md for where each rule comes from.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import enum
import json
import math
from typing import Any, TypeVar

from pybmq.errors import DecodeError, EncodeError

__all__ = [
    "MAX_DEPTH",
    "MISSING",
    "E",
    "arr",
    "bool_",
    "bytes_",
    "dec_bool",
    "dec_bytes",
    "dec_enum",
    "dec_float",
    "dec_int",
    "dec_str",
    "enum_",
    "finish",
    "float_",
    "int_",
    "list_",
    "obj",
    "parse",
    "str_",
]

MAX_DEPTH = 64
MISSING = object()  # a member not present in the JSON object

E = TypeVar("E", bound=enum.IntEnum)

_dump_str = json.JSONEncoder(ensure_ascii=False).encode


# -- writing ---------------------------------------------------------------------------------------


def int_(value: object, lo: int, hi: int, path: str) -> str:
    if not isinstance(value, int) or isinstance(value, bool):
        raise EncodeError(f"{path}: expected an integer, got {type(value).__name__}")
    if not lo <= value <= hi:
        raise EncodeError(f"{path}: {value} is outside [{lo}, {hi}]")
    return str(int(value))


def bool_(value: object, path: str) -> str:
    if not isinstance(value, bool):
        raise EncodeError(f"{path}: expected a bool, got {type(value).__name__}")
    return "true" if value else "false"


def str_(value: object, path: str) -> str:
    if not isinstance(value, str):
        raise EncodeError(f"{path}: expected a str, got {type(value).__name__}")
    return _dump_str(value).replace("/", "\\/")


def float_(value: object, path: str) -> str:
    """A double as the shortest text that reads back to the same value (NaN/inf refused)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise EncodeError(f"{path}: expected a float, got {type(value).__name__}")
    number = float(value)
    if not math.isfinite(number):
        raise EncodeError(f"{path}: {number} has no JSON number form")
    return repr(number)


def bytes_(value: object, path: str) -> str:
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise EncodeError(f"{path}: expected bytes, got {type(value).__name__}")
    return '"' + base64.b64encode(bytes(value)).decode("ascii") + '"'


def enum_(value: object, enum_cls: type[E], path: str) -> str:
    if not isinstance(value, enum_cls):
        if isinstance(value, int) and not isinstance(value, bool):
            with contextlib.suppress(ValueError):
                value = enum_cls(value)
        if not isinstance(value, enum_cls):
            raise EncodeError(f"{path}: {value!r} is not a {enum_cls.__name__}")
    return '"' + value.name + '"'


def list_(value: object, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise EncodeError(f"{path}: expected a list, got {type(value).__name__}")
    return value


def finish(text: str, path: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise EncodeError(f"{path}: a string is not encodable as UTF-8 ({exc.reason})") from exc


# -- reading ---------------------------------------------------------------------------------------


def parse(data: bytes | bytearray | memoryview | str, path: str) -> object:
    """Parse JSON text; every failure (syntax, encoding, nesting) becomes a DecodeError."""
    if isinstance(data, memoryview):
        data = bytes(data)
    if isinstance(data, (bytes, bytearray)):
        try:
            data = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DecodeError(f"JSON text is not UTF-8 ({exc.reason})", offset=exc.start) from None
    if not isinstance(data, str):
        raise DecodeError(f"expected JSON text, got {type(data).__name__}")
    try:
        return json.loads(data)
    except json.JSONDecodeError as exc:
        raise DecodeError(f"malformed JSON: {exc.msg}", offset=exc.pos, path=path) from None
    except ValueError as exc:  # e.g. an integer literal longer than Python accepts
        raise DecodeError(f"malformed JSON: {exc}", path=path) from None
    except RecursionError:
        raise DecodeError("JSON nested too deeply", path=path) from None


def obj(value: object, path: str, depth: int) -> dict[str, object]:
    if depth > MAX_DEPTH:
        raise DecodeError(f"nesting deeper than {MAX_DEPTH} levels", path=path)
    if not isinstance(value, dict):
        raise DecodeError(f"expected a JSON object, got {_kind(value)}", path=path)
    return value


def arr(value: object, path: str, name: str) -> list[object]:
    if not isinstance(value, list):
        raise DecodeError(f"expected a JSON array, got {_kind(value)}", path=f"{path}.{name}")
    return value


def dec_int(value: object, lo: int, hi: int, path: str, name: str) -> int:
    # baljsn also accepts a number written as a string; so do we.
    if isinstance(value, str):
        try:
            value = int(value.strip(), 10)
        except ValueError:
            raise DecodeError(
                f"expected an integer, got string {value!r}", path=f"{path}.{name}"
            ) from None
    if not isinstance(value, int) or isinstance(value, bool):
        raise DecodeError(f"expected an integer, got {_kind(value)}", path=f"{path}.{name}")
    if not lo <= value <= hi:
        raise DecodeError(f"integer {value} outside [{lo}, {hi}]", path=f"{path}.{name}")
    return value


def dec_bool(value: object, path: str, name: str) -> bool:
    if not isinstance(value, bool):
        raise DecodeError(f"expected true or false, got {_kind(value)}", path=f"{path}.{name}")
    return value


def dec_str(value: object, path: str, name: str) -> str:
    if not isinstance(value, str):
        raise DecodeError(f"expected a string, got {_kind(value)}", path=f"{path}.{name}")
    return value


def dec_float(value: object, path: str, name: str) -> float:
    # Any JSON number; like baljsn, also a number written as a string ("1.5", "nan", "-inf").
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            raise DecodeError(
                f"expected a number, got string {value!r}", path=f"{path}.{name}"
            ) from None
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise DecodeError(f"expected a number, got {_kind(value)}", path=f"{path}.{name}")
    try:
        return float(value)
    except OverflowError:
        raise DecodeError(f"number {value} does not fit a double", path=f"{path}.{name}") from None


def dec_bytes(value: object, path: str, name: str) -> bytes:
    if not isinstance(value, str):
        raise DecodeError(f"expected a base64 string, got {_kind(value)}", path=f"{path}.{name}")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise DecodeError("invalid base64 data", path=f"{path}.{name}") from None


def dec_enum(value: object, enum_cls: type[E], path: str, name: str) -> E:
    if not isinstance(value, str):
        raise DecodeError(
            f"expected a {enum_cls.__name__} name, got {_kind(value)}", path=f"{path}.{name}"
        )
    member = enum_cls.__members__.get(value)
    if member is None:
        raise DecodeError(f"{value!r} is not a {enum_cls.__name__}", path=f"{path}.{name}")
    return member


def _kind(value: object) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), "a number"
    )
