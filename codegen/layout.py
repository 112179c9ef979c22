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

import yaml
from pybmq.codegen.artifact import Artifact
from pybmq.codegen.filters import snake
from pybmq.codegen.render import environment, format_python
from pybmq.errors import SchemaError

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
    return spec


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
    """The generator registered in the driver: both wire modules from one spec."""
    spec = load_spec(schema_dir / SPEC_NAME)
    env = environment()
    for template, out in (
        ("wire_codec.py.j2", "wire_codec.py"),
        ("wire_layout.py.j2", "wire_layout.py"),
    ):
        text = env.get_template(template).render(spec=spec, spec_name=SPEC_NAME)
        yield Artifact(out, format_python(text, template))
