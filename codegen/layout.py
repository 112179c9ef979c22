"""Layout spec (schema/bmqp_layout.yaml) -> construct model + fast struct codec.

A pipeline in three steps, like the XSD generator: ``load_spec`` reads and validates the YAML into a
small model (structs made of units made of bit-fields), the jinja2 templates lay the two modules
out, and black formats them. Both modules come from the same model, so they cannot disagree about
a width or an order; a test proves they also agree about bytes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pybmq.codegen import extra_missing
from pybmq.codegen.artifact import Artifact
from pybmq.codegen.filters import snake
from pybmq.codegen.messages import MessageKind, load_messages
from pybmq.codegen.render import declare_public_names, environment, format_python
from pybmq.errors import SchemaError

__all__ = [
    "DEFAULT_PADDING",
    "EXPORTS",
    "SPEC_NAME",
    "TEMPLATES",
    "UNIT_KINDS",
    "VALUE_KINDS",
    "BitConst",
    "BitField",
    "Codec",
    "Enum",
    "Spec",
    "Struct",
    "Unit",
    "View",
    "generate_layout",
    "load_spec",
]

try:
    import yaml
except ModuleNotFoundError as exc:  # the codegen extra is not installed: say so
    raise extra_missing(exc)  # noqa: B904 - its context is exc

SPEC_NAME = "bmqp_layout.yaml"
DEFAULT_PADDING = {"word": 4, "min": 1, "max": 4, "fill": "count"}
TEMPLATES = Path(__file__).parent / "templates"

# unit kind -> (struct format character, width in bits, signed)
UNIT_KINDS: dict[str, tuple[str, int, bool]] = {
    "u8": ("B", 8, False),
    "u16": ("H", 16, False),
    "u32": ("I", 32, False),
    "i32": ("i", 32, True),
}


@dataclass
class BitField:
    name: str
    width: int
    shift: int
    enum: str | None
    signed: bool = False
    is_bytes: bool = False

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1


@dataclass
class Unit:
    kind: str
    size: int  # bytes
    fields: list[BitField]

    @property
    def fmt(self) -> str:
        if self.kind == "bytes":
            return f"{self.size}s"
        return UNIT_KINDS[self.kind][0]

    @property
    def is_bytes(self) -> bool:
        return self.kind == "bytes"

    @property
    def whole(self) -> bool:
        """One field fills the unit (no shifting or masking needed)."""
        return (
            len(self.fields) == 1
            and self.fields[0].shift == 0
            and (self.is_bytes or self.fields[0].width == self.size * 8)
        )


@dataclass
class Struct:
    name: str
    upstream: str
    doc: str
    units: list[Unit]

    @property
    def snake(self) -> str:
        return snake(self.name)

    @property
    def const(self) -> str:
        return self.snake.upper()

    @property
    def fmt(self) -> str:
        return ">" + "".join(u.fmt for u in self.units)

    @property
    def size(self) -> int:
        return sum(u.size for u in self.units)

    @property
    def unit_vars(self) -> str:
        """The names the template unpacks units into: ``u0, u1, ...`` (trailing comma for one)."""
        return ", ".join(f"u{i}" for i in range(len(self.units))) + (
            "," if len(self.units) == 1 else ""
        )

    @property
    def bit_layout(self) -> list[tuple[str, int, int]]:
        """(name, first bit, width) of every field, counting bits from the struct's start."""
        out = []
        base = 0
        for unit in self.units:
            for f in unit.fields:
                out.append((f.name, base + unit.size * 8 - f.shift - f.width, f.width))
            base += unit.size * 8
        return out

    @property
    def fields(self) -> list[BitField]:
        return [f for u in self.units for f in u.fields]

    def field(self, name: str) -> BitField:
        """The field ``name`` (SchemaError if the struct has none)."""
        for f in self.fields:
            if f.name == name:
                return f
        raise SchemaError(f"{self.name} has no field {name!r}")

    def offset_of(self, name: str) -> int:
        """Where the unit holding the field ``name`` starts, in bytes."""
        offset = 0
        for unit in self.units:
            if any(f.name == name for f in unit.fields):
                return offset
            offset += unit.size
        raise SchemaError(f"{self.name} has no field {name!r}")


@dataclass
class BitConst:
    """A SHIFT/MASK pair the hot path reads or writes a bit-field with: ``(word >> shift) &
    mask``. ``word`` is the field's unit, or for a group the 32-bit word holding its fields."""

    name: str  # STRUCT_FIELD
    shift: int
    width: int
    top: bool = False  # the field is the top bits of its word: ``word >> shift`` is enough
    only: str = ""  # "shift" or "mask" when the runtime uses only that one

    @property
    def emit_shift(self) -> bool:
        return bool(self.shift) and self.only != "mask"

    @property
    def emit_mask(self) -> bool:
        return not self.top and self.only != "shift"

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1


@dataclass
class View:
    """A Struct over part of a struct (whole units, reserved ones skipped) and words after it:
    one ``unpack_from`` for what the hot path reads together."""

    name: str
    doc: str
    struct: str
    offset: int  # bytes from the start of the struct
    fmt: str


# Fixed-size property values: kind -> struct format character (all big-endian on the wire).
VALUE_KINDS = {"bool": "?", "i8": "b", "i16": "h", "i32": "i", "i64": "q"}

# What a struct can export from the codec module (anything else is in STRUCTS/BIT_LAYOUTS only).
EXPORTS = ("record", "struct", "size", "unpack", "pack_into", "encode")


@dataclass
class Codec:
    """What the runtime uses of one struct (spec section ``codec``)."""

    exports: set[str] = field(default_factory=set)
    bits: list[BitConst] = field(default_factory=list)
    # A value split over several fields (MSB first): the whole value's mask, and for each part
    # where it sits in the value (X_PART_AT, when not 0) and its mask. ``shift`` is the "at".
    splits: list[BitConst] = field(default_factory=list)

    @property
    def functions(self) -> bool:
        """Whether any function is generated (they need the struct's Struct and record)."""
        return bool(self.exports & {"unpack", "pack_into", "encode"})


@dataclass
class Enum:
    name: str
    upstream: str
    flags: bool
    values: dict[str, int]


@dataclass
class Spec:
    constants: dict[str, int | str]
    enums: list[Enum]
    structs: list[Struct] = field(default_factory=list)
    padding: list[bytes] = field(default_factory=list)  # indexed by data length % word
    events: dict[str, str] = field(default_factory=dict)
    codecs: dict[str, Codec] = field(default_factory=dict)  # by struct name
    property_values: dict[str, str] = field(default_factory=dict)  # PropertyType -> format
    views: list[View] = field(default_factory=list)
    messages: list[MessageKind] = field(default_factory=list)  # PUT and PUSH framing

    def codec(self, struct: str) -> Codec:
        return self.codecs.get(struct) or Codec()

    def struct(self, name: str) -> Struct:
        """The struct ``name`` (SchemaError if the spec has none)."""
        for s in self.structs:
            if s.name == name:
                return s
        raise SchemaError(f"no struct {name!r} in the spec")

    def enum_value(self, enum: str, member: str) -> int:
        """The value of ``enum.member``."""
        return next(e for e in self.enums if e.name == enum).values[member]

    @property
    def encodes(self) -> bool:
        return any("encode" in c.exports for c in self.codecs.values())


def _unit(struct: str, raw: dict[str, Any]) -> Unit:
    kind = raw.get("unit")
    if kind == "bytes":
        size = int(raw["size"])
        return Unit("bytes", size, [BitField(raw["name"], size * 8, 0, None, is_bytes=True)])
    if kind not in UNIT_KINDS:
        raise SchemaError(f"{struct}: unknown unit {kind!r}")
    _, width, signed = UNIT_KINDS[kind]
    if "bits" not in raw:
        return Unit(kind, width // 8, [BitField(raw["name"], width, 0, raw.get("enum"), signed)])
    fields: list[BitField] = []
    shift = width
    for bit in raw["bits"]:
        shift -= int(bit["width"])
        fields.append(BitField(bit["name"], int(bit["width"]), shift, bit.get("enum")))
    if shift != 0:
        raise SchemaError(f"{struct}: bit-fields of a {kind} unit add up to {width - shift} bits")
    return Unit(kind, width // 8, fields)


def load_spec(path: Path) -> Spec:
    """Read and validate the layout spec."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise SchemaError(f"{path.name}: {exc}") from exc
    enums = [
        Enum(name, e["upstream"], bool(e.get("flags", False)), dict(e["values"]))
        for name, e in raw["enums"].items()
    ]
    spec = Spec(dict(raw["constants"]), enums)
    # Older specs (e.g. a baseline kept for schema checks) predate these sections: the protocol's
    # padding rule and no event descriptions are then assumed.
    spec.padding = _padding_table(raw.get("padding", DEFAULT_PADDING))
    spec.events = {str(k): str(v) for k, v in raw.get("events", {}).items()}
    event_types = next(e for e in enums if e.name == "EventType").values
    for name in spec.events:
        if name not in event_types:
            raise SchemaError(f"events: {name} is not an EventType")
    enum_names = {e.name for e in enums}
    for name, s in raw["structs"].items():
        units = [_unit(name, u) for u in s["units"]]
        struct = Struct(name, s["upstream"], " ".join(str(s.get("doc", "")).split()), units)
        names = [f.name for f in struct.fields]
        if len(names) != len(set(names)):
            raise SchemaError(f"{name}: duplicate field names {names}")
        for f in struct.fields:
            if f.enum and f.enum not in enum_names:
                raise SchemaError(f"{name}.{f.name}: unknown enum {f.enum}")
        spec.structs.append(struct)
    by_name = {s.name: s for s in spec.structs}
    spec.codecs = {name: _codec(by_name, name, c or {}) for name, c in raw.get("codec", {}).items()}
    spec.views = [_view(by_name, name, v) for name, v in raw.get("views", {}).items()]
    word = int(str(spec.constants.get("WORD_SIZE", DEFAULT_PADDING["word"])))
    enum_values = {e.name: e.values for e in enums}
    spec.messages = load_messages(raw.get("messages", {}), by_name, enum_values, word)
    property_types = next((e.values for e in enums if e.name == "PropertyType"), {})
    for ptype, kind in raw.get("property_values", {}).items():
        if ptype not in property_types or kind not in VALUE_KINDS:
            raise SchemaError(f"property_values: {ptype}: {kind} is not a PropertyType and kind")
        spec.property_values[ptype] = ">" + VALUE_KINDS[kind]
    return spec


def _codec(structs: dict[str, Struct], name: str, raw: dict[str, Any]) -> Codec:
    """One ``codec`` entry: exports, bit-fields (unit-relative) and groups (word-relative)."""
    if name not in structs:
        raise SchemaError(f"codec: unknown struct {name}")
    struct = structs[name]
    exports = set(raw.get("exports", []))
    if exports - set(EXPORTS):
        raise SchemaError(f"codec.{name}: unknown exports {sorted(exports - set(EXPORTS))}")
    codec = Codec(exports)
    if codec.functions and "record" not in exports:
        raise SchemaError(f"codec.{name}: its functions take or return the record: export it")
    fields = {f.name: (u, f) for u in struct.units for f in u.fields}
    for item in raw.get("bits", []):
        # a field name, or {name: shift} / {name: mask} when only that one is used
        fname, only = next(iter(item.items())) if isinstance(item, dict) else (item, "")
        if fname not in fields or fields[fname][0].whole or only not in ("", "shift", "mask"):
            raise SchemaError(f"codec.{name}.bits: {item} is not a bit-field")
        unit, f = fields[fname]
        top = f.shift + f.width == unit.size * 8
        const = f"{struct.const}_{fname.upper()}"
        codec.bits.append(BitConst(const, f.shift, f.width, top, only))
    layout = {n: (first, width) for n, first, width in struct.bit_layout}
    for group, members in raw.get("groups", {}).items():
        if not members or any(m not in layout for m in members):
            raise SchemaError(f"codec.{name}.groups.{group}: unknown fields {members}")
        first = layout[members[0]][0]
        width = sum(layout[m][1] for m in members)
        if [layout[m][0] for m in members] != [
            first + sum(layout[m][1] for m in members[:i]) for i in range(len(members))
        ] or first // 32 != (first + width - 1) // 32:
            raise SchemaError(f"codec.{name}.groups.{group}: not adjacent within one word")
        shift = 32 - (first % 32) - width
        codec.bits.append(
            BitConst(f"{struct.const}_{group.upper()}", shift, width, shift + width == 32)
        )
    masked = {b.name for b in codec.bits}
    for value, split in raw.get("splits", {}).items():
        # [parts], or {parts: [...], mask: true} when the runtime also bounds the whole value
        parts = split["parts"] if isinstance(split, dict) else split
        if not parts or any(p not in layout for p in parts):
            raise SchemaError(f"codec.{name}.splits.{value}: unknown fields {parts}")
        at = sum(layout[p][1] for p in parts)
        whole = f"{struct.const}_{value.upper()}"
        if isinstance(split, dict) and split.get("mask") and whole not in masked:
            codec.splits.append(BitConst(whole, 0, at))
        for i, part in enumerate(parts):
            at -= layout[part][1]
            const = f"{struct.const}_{part.upper()}"
            # No mask for the top part (the value's range bounds it) nor for a listed bit-field
            # (it has its mask already).
            width = 0 if i == 0 or const in masked else layout[part][1]
            codec.splits.append(BitConst(const, at, width))
    return codec


def _view(structs: dict[str, Struct], name: str, raw: dict[str, Any]) -> View:
    """One ``views`` entry: ``struct`` (if any) from field ``from`` to ``to`` (whole units),
    then ``then`` (unit kinds)."""
    struct = structs.get(raw.get("struct", ""))
    if struct is None and "struct" in raw:
        raise SchemaError(f"views.{name}: unknown struct {raw['struct']!r}")
    units = struct.units if struct else []
    heads = [u.fields[0].name for u in units]
    tails = [u.fields[-1].name for u in units]
    if "from" in raw and raw["from"] not in heads:
        raise SchemaError(f"views.{name}: no unit starts with {raw['from']!r}")
    if "to" in raw and raw["to"] not in tails:
        raise SchemaError(f"views.{name}: no unit ends with {raw['to']!r}")
    start = heads.index(raw["from"]) if "from" in raw else 0
    end = tails.index(raw["to"]) + 1 if "to" in raw else len(units)
    fmt = ">"
    for unit in units[start:end]:
        reserved = unit.fields[0].name.startswith("reserved") and len(unit.fields) == 1
        fmt += f"{unit.size}x" if reserved else unit.fmt
    for kind in raw.get("then", []):
        if kind not in UNIT_KINDS:
            raise SchemaError(f"views.{name}: unknown unit {kind!r}")
        fmt += UNIT_KINDS[kind][0]
    offset = sum(u.size for u in units[:start])
    doc = " ".join(str(raw.get("doc", "")).split())
    return View(name, doc, struct.name if struct else "", offset, fmt)


def _padding_table(raw: dict[str, Any]) -> list[bytes]:
    """The padding that follows data of each length modulo the word size."""
    word, low, high = int(raw["word"]), int(raw["min"]), int(raw["max"])
    if raw.get("fill") != "count" or (low, high) != (1, word):
        raise SchemaError("padding: only the 1..word count-filled rule is supported")
    table = []
    for remainder in range(word):
        count = word - remainder
        table.append(bytes([count]) * count)
    return table


def generate_layout(schema_dir: Path) -> Iterable[Artifact]:
    """The generator registered in the driver: the wire modules from one spec."""
    spec = load_spec(schema_dir / SPEC_NAME)
    env = environment()
    for template, out in (
        ("wire_codec.py.j2", "wire_codec.py"),
        ("wire_layout.py.j2", "wire_layout.py"),
        ("wire_messages.py.j2", "wire_messages.py"),
    ):
        text = env.get_template(template).render(spec=spec, spec_name=SPEC_NAME)
        yield Artifact(out, format_python(declare_public_names(text), template))
