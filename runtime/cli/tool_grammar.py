"""The command grammar of ``pybmq tool``: bmqtool's interactive lines, read into typed commands.

A line is a verb and ``key=value`` pairs: ``open uri="bmq://d/q" flags="read,ack"
maxUnconfirmedMessages=10 subscriptions=[{"expression": "x > 0"}]``. A value is JSON (a quoted
string, a number, ``true``/``false``, a list or an object, which may hold spaces); a bare word
is taken as a string. Each verb has its fields, types and defaults (bmqtool's ``bmqtoolcmd.xsd``);
an unknown verb or key, a value of the wrong type or a missing mandatory field is a
:class:`CommandError` that names it, never a traceback.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "GRAMMAR",
    "MAX_LINE",
    "MAX_PAYLOADS",
    "PROPERTY_TYPES",
    "VERBS_TO_QUIT",
    "Command",
    "CommandError",
    "parse_command",
    "properties_field",
    "split_line",
]

# The longest command line read (bmqtool has none; a line past this is refused, not buffered).
MAX_LINE = 1 << 20
# Payloads of one post or batch-post command, at most.
MAX_PAYLOADS = 10_000

VERBS_TO_QUIT = frozenset({"bye", "quit", "q"})


class CommandError(ValueError):
    """A command line that cannot be read: unknown verb or key, bad value, missing field."""


@dataclass(frozen=True)
class Command:
    """One command line, read: its verb and its fields (defaults filled in)."""

    verb: str
    fields: dict[str, Any] = field(default_factory=dict)
    given: frozenset[str] = frozenset()  # the keys the line named (messageProperties=[] counts)

    def __getitem__(self, name: str) -> Any:
        return self.fields[name]


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise CommandError(f"expected true or false, got {json.dumps(value)}")


def _integer(value: Any) -> int:
    # bmqtool's JSON decoder takes 1000.0 for an int (the suites send postInterval that way).
    if isinstance(value, bool):
        raise CommandError(f"expected an integer, got {json.dumps(value)}")
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"-?\d+", value):
        return int(value)
    raise CommandError(f"expected an integer, got {json.dumps(value)}")


def _string(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return json.dumps(value)
    raise CommandError(f"expected a string, got {json.dumps(value)}")


def _strings(value: Any) -> list[str]:
    values = value if isinstance(value, list) else [value]
    if len(values) > MAX_PAYLOADS:
        raise CommandError(f"at most {MAX_PAYLOADS} payloads in one command")
    return [_string(v) for v in values]


_SUBSCRIPTION_KEYS: dict[str, Callable[[Any], Any]] = {
    "correlationId": _integer,
    "expression": _string,
    "maxUnconfirmedMessages": _integer,
    "maxUnconfirmedBytes": _integer,
    "consumerPriority": _integer,
}
_PROPERTY_KEYS: dict[str, Callable[[Any], Any]] = {
    "name": _string,
    "value": _string,
    "type": _string,
}
PROPERTY_TYPES = ("E_STRING", "E_INT")


def _records(
    keys: Mapping[str, Callable[[Any], Any]], what: str
) -> Callable[[Any], list[dict[str, Any]]]:
    def read(value: Any) -> list[dict[str, Any]]:
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise CommandError(f"expected a list of {what} objects, got {json.dumps(value)}")
        records = []
        for item in value:
            unknown = set(item) - set(keys)
            if unknown:
                raise CommandError(f"unknown {what} field {sorted(unknown)[0]!r}")
            records.append({k: keys[k](v) for k, v in item.items()})
        return records

    return read


def properties_field(value: Any) -> list[dict[str, Any]]:
    """A ``messageProperties`` value: name, value and type (E_STRING or E_INT) of each."""
    records = _records(_PROPERTY_KEYS, "message property")(value)
    for record in records:
        if "name" not in record or "value" not in record:
            raise CommandError("a message property needs a name and a value")
        record.setdefault("type", "E_STRING")
        if record["type"] not in PROPERTY_TYPES:
            raise CommandError(f"message property type must be E_STRING or E_INT: {record}")
        if record["type"] == "E_INT" and not re.fullmatch(r"\s*[-+]?\d+\s*", record["value"]):
            raise CommandError(f"message property {record['name']!r}: not an int")
    return records


_subscriptions = _records(_SUBSCRIPTION_KEYS, "subscription")
_NONE = object()  # a mandatory field: no default

# verb -> field -> (reader, default); bmqtool's bmqtoolcmd.xsd, the fields the suites use.
_QUEUE_OPTIONS: dict[str, tuple[Callable[[Any], Any], Any]] = {
    "async": (_boolean, False),
    "maxUnconfirmedMessages": (_integer, 1024),
    "maxUnconfirmedBytes": (_integer, 33554432),
    "consumerPriority": (_integer, 0),
    "subscriptions": (_subscriptions, []),
}
GRAMMAR: dict[str, dict[str, tuple[Callable[[Any], Any], Any]]] = {
    "start": {"async": (_boolean, False)},
    "stop": {"async": (_boolean, False)},
    "open": {"uri": (_string, _NONE), "flags": (_string, _NONE), **_QUEUE_OPTIONS},
    "configure": {"uri": (_string, _NONE), **_QUEUE_OPTIONS},
    "close": {"uri": (_string, _NONE), "async": (_boolean, False)},
    "post": {
        "uri": (_string, _NONE),
        "payload": (_strings, _NONE),
        "async": (_boolean, False),
        "compressionAlgorithmType": (_string, "none"),
        "messageProperties": (properties_field, []),
    },
    "list": {"uri": (_string, None)},
    "confirm": {"uri": (_string, _NONE), "guid": (_string, _NONE)},
    "batch-post": {
        "uri": (_string, _NONE),
        "payload": (_strings, []),
        "msgSize": (_integer, 1024),
        "eventSize": (_integer, 1),
        "eventsCount": (_integer, 0),
        "postInterval": (_integer, 1000),
        "postRate": (_integer, 1),
        "autoIncremented": (_string, ""),
    },
}

_DECODER = json.JSONDecoder()
_KEY = re.compile(r'\s*(?:"([^"]*)"|([A-Za-z_][\w-]*))\s*=\s*')
_BARE = re.compile(r"[^\s]*")


def split_line(line: str) -> tuple[str, dict[str, Any], list[str]]:
    """``verb key=value ...`` -> (verb, values, keys in order); values decoded from JSON."""
    if len(line) > MAX_LINE:
        raise CommandError(f"a command line has at most {MAX_LINE} characters")
    text = line.strip()
    verb, _, rest = text.partition(" ")
    values: dict[str, Any] = {}
    keys: list[str] = []
    pos = 0
    rest = rest.strip()
    while pos < len(rest):
        match = _KEY.match(rest, pos)
        if match is None:
            raise CommandError(f"expected key=value at {rest[pos:pos + 40]!r}")
        key = match[1] if match[1] is not None else match[2]
        pos = match.end()
        if pos < len(rest) and rest[pos] in '"[{-0123456789tfn':
            try:
                value, pos = _DECODER.raw_decode(rest, pos)
            except json.JSONDecodeError as exc:
                if rest[pos] in '"[{':
                    raise CommandError(f"{key}: not valid JSON ({exc.msg})") from None
                bare = _BARE.match(rest, pos)
                assert bare is not None
                value, pos = bare[0], bare.end()
        else:
            bare = _BARE.match(rest, pos)
            assert bare is not None
            value, pos = bare[0], bare.end()
        if pos < len(rest) and not rest[pos].isspace():
            raise CommandError(f"{key}: unexpected text after its value at {rest[pos:pos + 40]!r}")
        values[key] = value
        keys.append(key)
        while pos < len(rest) and rest[pos].isspace():
            pos += 1
    return verb, values, keys


def parse_command(line: str) -> Command:
    """One command line as a :class:`Command`; CommandError when it cannot be read."""
    verb, values, keys = split_line(line)
    grammar = GRAMMAR.get(verb)
    if grammar is None:
        raise CommandError(f"Unknown command: {verb}")
    for key in values:
        if key not in grammar:
            raise CommandError(f"{verb}: unknown field {key!r} (known: {', '.join(grammar)})")
    fields: dict[str, Any] = {}  # in the grammar's order, as bmqtool echoes a command
    for key, (read, default) in grammar.items():
        if key in values:
            try:
                fields[key] = read(values[key])
            except CommandError as exc:
                raise CommandError(f"{verb}: {key}: {exc}") from None
        elif default is _NONE:
            raise CommandError(f"'{key}' is mandatory")
        else:
            fields[key] = list(default) if isinstance(default, list) else default
    return Command(verb, fields, frozenset(keys))
