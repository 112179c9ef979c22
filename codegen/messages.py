"""The ``messages`` section of the layout spec: what the PUT and PUSH readers and builders are
rendered from (``templates/wire_messages.py.j2``), beside the structs they start with.

A message kind is its header struct plus a few facts the struct cannot say: which header fields
every peer sends (the rest, the schema id, only a long enough header holds), what its record
takes from the header, the field holding a checksum, the flag that allows no application data,
and which common shapes the reader takes inline. Everything numeric (sizes, words, shifts, masks,
the unpack formats) is computed here from the structs, so the template writes no number of its
own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pybmq.errors import SchemaError

__all__ = ["FAST_PATHS", "FRAMING_FIELDS", "Bits", "MessageKind", "load_messages"]

# What a reader may take inline besides the full header with no options (see the spec).
FAST_PATHS = ("short_header", "one_sub_queue_option")
# The framing's own fields, after the header's, in every message record.
FRAMING_FIELDS = (
    ("properties_area", "bytes"),
    ("payload", "bytes"),
    ("options", "bytes"),
    ("header_words", "int"),
    ("sub_queue_infos", "tuple[SubQueueInfo, ...]"),
    ("msg_group_id", "str | None"),
)


@dataclass
class Bits:
    """Where a header field sits: its unit (``word`` names the unpacked unit), shift and mask."""

    word: str
    shift: int
    mask: int
    top: bool  # the field is the unit's top bits: ``word >> shift`` is enough


@dataclass
class MessageKind:
    """One data event's message (see the module docstring)."""

    name: str  # the EventType: PUT, PUSH
    header: Any  # layout.Struct
    flags_enum: str
    word_size: int
    required_size: int  # bytes of the fields every header holds
    fields: list[str]
    checksum: str | None = None
    implicit_payload: str | None = None
    fast_paths: set[str] = field(default_factory=set)

    @property
    def lower(self) -> str:
        return self.name.lower()

    @property
    def record(self) -> str:
        """The generated record's name: ``PutFields``, ``PushFields``."""
        return f"{self.name.capitalize()}Fields"

    @property
    def header_size(self) -> int:
        return int(self.header.size)

    @property
    def header_words(self) -> int:
        return self.header_size // self.word_size

    @property
    def required_words(self) -> int:
        return self.required_size // self.word_size

    @property
    def record_fields(self) -> list[tuple[str, str]]:
        types = {f.name: ("bytes" if f.is_bytes else "int") for f in self.header.fields}
        return [(name, types[name]) for name in self.fields] + list(FRAMING_FIELDS)

    def _units(self, start: int = 0) -> list[tuple[str, str]]:
        """(unpacked name, format) of the header's units from byte ``start``: a unit holding one
        field is named after it, one split into bit-fields ``w<i>``; reserved units skipped."""
        out = []
        offset = 0
        for i, unit in enumerate(self.header.units):
            if offset >= start:
                first = unit.fields[0].name
                if unit.whole and first.startswith("reserved"):
                    out.append(("", f"{unit.size}x"))
                elif unit.whole:
                    out.append((first, unit.fmt))
                else:
                    out.append((f"w{i}", unit.fmt))
            offset += unit.size
        return out

    @property
    def full_names(self) -> list[str]:
        """The names one unpack of the whole header and the word after it gives."""
        return [name for name, _ in self._units() if name] + ["word"]

    @property
    def full_format(self) -> str:
        return ">" + "".join(fmt for _, fmt in self._units()) + "I"

    @property
    def full_size(self) -> int:
        return self.header_size + self.word_size

    @property
    def body_names(self) -> list[str]:
        """The required fields after the two words of sizes (what the checked path unpacks)."""
        return [name for name, _ in self._units(2 * self.word_size) if name][: self._required_count]

    @property
    def body_format(self) -> str:
        units = self._units(2 * self.word_size)
        return ">" + "".join(fmt for _, fmt in units[: self._required_count])

    @property
    def _required_count(self) -> int:
        offset = 0
        count = 0
        for unit in self.header.units[2:]:
            if 2 * self.word_size + offset >= self.required_size:
                break
            offset += unit.size
            count += 1
        return count

    @property
    def optional(self) -> list[tuple[str, int, str, int]]:
        """(name, offset, format, the header size that holds it) of the non-reserved fields a
        long enough header adds."""
        out = []
        offset = 0
        word = self.word_size
        for unit in self.header.units:
            first = unit.fields[0].name
            if offset >= self.required_size and not first.startswith("reserved"):
                holds = -(-(offset + unit.size) // word) * word  # up to the word's end
                out.append((first, offset, unit.fmt, holds))
            offset += unit.size
        return out

    def bits(self, name: str) -> Bits:
        """Where the bit-field ``name`` of one of the first two (size) words sits."""
        for i, unit in enumerate(self.header.units[:2]):
            for f in unit.fields:
                if f.name == name:
                    top = f.shift + f.width == unit.size * 8
                    return Bits(f"w{i}", f.shift, (1 << f.width) - 1, top)
        raise SchemaError(f"messages.{self.name}: {name} is not in the first two words")


def load_messages(
    raw: dict[str, Any], structs: dict[str, Any], enums: dict[str, dict[str, int]], word: int
) -> list[MessageKind]:
    """The ``messages`` section, checked against the structs and enums."""
    kinds = []
    for name, entry in raw.items():
        if name not in enums["EventType"]:
            raise SchemaError(f"messages: {name} is not an EventType")
        header = structs.get(entry.get("header", ""))
        if header is None:
            raise SchemaError(f"messages.{name}: unknown header {entry.get('header')!r}")
        fields = {f.name: f for f in header.fields}
        required_to = entry.get("required_to")
        if required_to not in fields:
            raise SchemaError(f"messages.{name}: required_to {required_to!r} is not a field")
        offset = 0
        required = None
        for unit in header.units:
            offset += unit.size
            if any(f.name == required_to for f in unit.fields):
                required = offset
        assert required is not None
        for needed in ("flags", "message_words", "options_words", "compression", "header_words"):
            if needed not in fields:
                raise SchemaError(f"messages.{name}: the header has no {needed} field")
        flags_enum = fields["flags"].enum
        if flags_enum not in enums or "MESSAGE_PROPERTIES" not in enums[flags_enum]:
            raise SchemaError(f"messages.{name}: its flags enum needs a MESSAGE_PROPERTIES flag")
        record = list(entry.get("fields", []))
        if any(f not in fields for f in record):
            raise SchemaError(f"messages.{name}.fields: unknown fields {record}")
        checksum = entry.get("checksum")
        if checksum is not None and checksum not in fields:
            raise SchemaError(f"messages.{name}.checksum: {checksum!r} is not a field")
        implicit = entry.get("implicit_payload")
        if implicit is not None and implicit not in enums[flags_enum]:
            raise SchemaError(f"messages.{name}.implicit_payload: {implicit!r} is not a flag")
        fast = set(entry.get("fast_paths", []))
        if fast - set(FAST_PATHS):
            raise SchemaError(
                f"messages.{name}.fast_paths: unknown {sorted(fast - set(FAST_PATHS))}"
            )
        kinds.append(
            MessageKind(name, header, flags_enum, word, required, record, checksum, implicit, fast)
        )
    return kinds
