"""Compare two revisions of the binary layout spec (schema/*.yaml) and classify each change.

Both revisions are read with the loader the layout generator uses (``pybmq.codegen.layout``). In
the binary data plane nothing is named on the wire: a field is its bit offset and width, an
enumerator or flag is its number. Names only reach the generated Python API (struct attributes,
enum members, constants). So:

- a field that moves, changes width or signedness, or disappears is wire-breaking;
- a field renamed in place is api-breaking, unless it only takes over a ``reserved*`` field
  (peers write reserved bits as zero and ignore them when read, so both sides still agree);
- enumerators: added = wire-breaking once sent (old readers reject an unknown code), renumbered
  or removed = wire-breaking, renamed = api-breaking;
- flags: an added bit is compatible (readers ignore bits they do not know), a moved bit is
  wire-breaking, a removed or renamed bit is api-breaking;
- constants are limits and codes both sides must agree on: a changed value is wire-breaking.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pybmq.codegen.layout import BitField, Enum, Spec, Struct, load_spec
from pybmq.codegen.schemadiff import Change, Compat, SchemaDiff
from pybmq.errors import SchemaError

__all__ = ["BINARY", "diff_layout_files", "diff_layouts", "load_layout"]

BINARY = ("binary",)


@dataclass(frozen=True)
class _Placed:
    """A field with its absolute position in the struct (bits from the struct's first bit)."""

    name: str
    offset: int
    width: int
    signed: bool
    is_bytes: bool
    enum: str | None

    @property
    def where(self) -> str:
        byte, bit = divmod(self.offset, 8)
        return f"byte {byte} bit {bit}, {self.width} bits"


def load_layout(path: Path) -> Spec:
    """``load_spec`` with every malformed-input failure reported as a SchemaError."""
    try:
        return load_spec(path)
    except SchemaError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise SchemaError(f"{path.name}: not a usable layout spec: {exc!r}") from exc


def diff_layout_files(old: Path, new: Path) -> SchemaDiff:
    return diff_layouts(load_layout(old), load_layout(new), str(old), str(new))


def diff_layouts(
    old: Spec, new: Spec, old_label: str = "old", new_label: str = "new"
) -> SchemaDiff:
    result = SchemaDiff(old_label, new_label)
    differ = _LayoutDiffer()
    differ.constants(old.constants, new.constants)
    differ.enums({e.name: e for e in old.enums}, {e.name: e for e in new.enums})
    differ.structs({s.name: s for s in old.structs}, {s.name: s for s in new.structs})
    differ.padding(old.padding, new.padding)
    differ.event_bodies(old.events, new.events)
    result.changes.extend(differ.out)
    return result


def _placed(struct: Struct) -> list[_Placed]:
    out: list[_Placed] = []
    start = 0
    for unit in struct.units:
        width = unit.size * 8
        for f in unit.fields:
            out.append(_field(f, start + width - f.shift - f.width))
        start += width
    return out


def _field(f: BitField, offset: int) -> _Placed:
    return _Placed(f.name, offset, f.width, f.signed, f.is_bytes, f.enum)


def _reserved(name: str) -> bool:
    return name.startswith("reserved")


class _LayoutDiffer:
    def __init__(self) -> None:
        self.out: list[Change] = []

    def add(
        self, kind: str, path: str, detail: str, compat: Compat, reason: str, wire: bool = False
    ) -> None:
        self.out.append(Change(kind, path, detail, compat, reason, BINARY if wire else ()))

    # -- constants -------------------------------------------------------------------------------

    def constants(self, old: dict[str, int | str], new: dict[str, int | str]) -> None:
        for name in old.keys() - new.keys():
            self.add(
                "constant-removed",
                name,
                f"constant {name} = {old[name]} removed",
                Compat.API,
                "importers lose the name; the wire never carries it",
            )
        for name, value in new.items():
            if name not in old:
                self.add(
                    "constant-added",
                    name,
                    f"constant {name} = {value} added",
                    Compat.COMPATIBLE,
                    "a new name for importers; nothing old peers rely on changes",
                )
            elif old[name] != value:
                self.add(
                    "constant-changed",
                    name,
                    f"{old[name]} -> {value}",
                    Compat.WIRE,
                    "protocol constants are limits and codes both peers must agree on",
                    wire=True,
                )

    # -- padding and event bodies ------------------------------------------------------------------

    def padding(self, old: list[bytes], new: list[bytes]) -> None:
        if old != new:
            self.add(
                "padding-changed",
                "<padding>",
                f"{[p.hex() for p in old]} -> {[p.hex() for p in new]}",
                Compat.WIRE,
                "peers find the end of the data by its padding: a different rule misplaces it",
                wire=True,
            )

    def event_bodies(self, old: dict[str, str], new: dict[str, str]) -> None:
        for name in sorted(old.keys() | new.keys()):
            if old.get(name) != new.get(name):
                self.add(
                    "doc-changed",
                    f"<events>.{name}",
                    "event body description changed",
                    Compat.COMPATIBLE,
                    "descriptions of event bodies reach neither the wire nor the API",
                )

    # -- enums and flags -------------------------------------------------------------------------

    def enums(self, old: dict[str, Enum], new: dict[str, Enum]) -> None:
        for name in [n for n in old if n not in new]:
            self.add(
                "enum-removed",
                name,
                f"enumeration {name} removed",
                Compat.API,
                "importers lose the class; fields that used it are judged on their own",
            )
        for name, enum in new.items():
            before = old.get(name)
            if before is None:
                self.add(
                    "enum-added",
                    name,
                    f"enumeration {name} added",
                    Compat.COMPATIBLE,
                    "nothing old peers rely on changes",
                )
            elif before.flags != enum.flags:
                self.add(
                    "enum-kind-changed",
                    name,
                    f"flags {before.flags} -> {enum.flags}",
                    Compat.WIRE,
                    "a bit set and a code read the same bits differently",
                    wire=True,
                )
            else:
                self.values(before, enum)

    def values(self, old: Enum, new: Enum) -> None:
        by_value_new = {v: k for k, v in new.values.items()}
        noun = "flag" if new.flags else "enum-value"
        for name, value in old.values.items():
            path = f"{new.name}.{name}"
            if name in new.values:
                if new.values[name] != value:
                    self.add(
                        f"{noun}-value-changed" if new.flags else "enum-value-renumbered",
                        path,
                        f"{value} -> {new.values[name]}",
                        Compat.WIRE,
                        "the number is what travels: old and new peers read each other's "
                        f"{'bit' if new.flags else 'code'} as something else",
                        wire=True,
                    )
            elif value in by_value_new and by_value_new[value] not in old.values:
                self.add(
                    f"{noun}-renamed",
                    path,
                    f"renamed to {by_value_new[value]} (value {value} kept)",
                    Compat.API,
                    "only the number travels; importers see a new member name",
                )
            elif new.flags:
                self.add(
                    "flag-removed",
                    path,
                    f"flag {name} ({value}) removed",
                    Compat.API,
                    "readers ignore bits they do not know, so an old peer setting it is still "
                    "read; importers lose the member",
                )
            else:
                self.add(
                    "enum-value-removed",
                    path,
                    f"{name} ({value}) removed",
                    Compat.WIRE,
                    "old peers may still send the code and new readers reject it",
                    wire=True,
                )
        old_values = set(old.values.values())
        for name, value in new.values.items():
            if name in old.values or value in old_values:
                continue
            path = f"{new.name}.{name}"
            if new.flags:
                self.add(
                    "flag-added",
                    path,
                    f"flag {name} ({value}) added",
                    Compat.COMPATIBLE,
                    "old readers ignore a bit they do not know (the message still decodes; the "
                    "new meaning is lost)",
                )
            else:
                self.add(
                    "enum-value-added",
                    path,
                    f"{name} ({value}) added",
                    Compat.WIRE,
                    "old readers reject an unknown code: breaks as soon as a new peer sends it",
                    wire=True,
                )

    # -- structs ---------------------------------------------------------------------------------

    def structs(self, old: dict[str, Struct], new: dict[str, Struct]) -> None:
        for name in [n for n in old if n not in new]:
            self.add(
                "struct-removed",
                name,
                f"struct {name} ({old[name].size} bytes) removed",
                Compat.API,
                "importers lose the struct; the event types that carried it are judged as enums",
            )
        for name, struct in new.items():
            before = old.get(name)
            if before is None:
                self.add(
                    "struct-added",
                    name,
                    f"struct {name} ({struct.size} bytes) added",
                    Compat.COMPATIBLE,
                    "nothing old peers rely on changes",
                )
                continue
            if " ".join(before.doc.split()) != " ".join(struct.doc.split()):
                self.add(
                    "doc-changed",
                    name,
                    "documentation changed",
                    Compat.COMPATIBLE,
                    "documentation reaches neither the wire nor the API's behaviour",
                )
            self.fields(name, _placed(before), _placed(struct))
            if before.size != struct.size:
                self.add(
                    "struct-size-changed",
                    name,
                    f"{before.size} -> {struct.size} bytes",
                    Compat.WIRE,
                    "readers that assume the fixed size misplace whatever follows the struct",
                    wire=True,
                )

    def fields(self, struct: str, old: list[_Placed], new: list[_Placed]) -> None:
        old_by_name = {f.name: f for f in old}
        new_by_name = {f.name: f for f in new}
        old_only = [f for f in old if f.name not in new_by_name]
        new_only = [f for f in new if f.name not in old_by_name]
        renamed: dict[str, _Placed] = {}
        for f in old_only:
            for g in new_only:
                if (g.offset, g.width) == (f.offset, f.width) and g not in renamed.values():
                    renamed[f.name] = g
                    break
        for f in old_only:
            path = f"{struct}.{f.name}"
            target = renamed.get(f.name)
            if target is None:
                self.add(
                    "field-removed",
                    path,
                    f"removed (was {f.where})",
                    Compat.WIRE,
                    "peers disagree about what the bits mean (nothing takes over its place)",
                    wire=True,
                )
            elif _reserved(f.name):
                self.add(
                    "field-added",
                    f"{struct}.{target.name}",
                    f"takes over reserved bits {f.name} ({target.where})",
                    Compat.COMPATIBLE,
                    "old peers write reserved bits as zero and ignore them: zero must mean "
                    "'not used' for the new field",
                )
                self.same_field(struct, f, target)
            elif _reserved(target.name):
                self.add(
                    "field-removed",
                    path,
                    f"now reserved as {target.name} ({target.where})",
                    Compat.API,
                    "the bits stay where they were; importers lose the attribute",
                )
                self.same_field(struct, f, target)
            else:
                self.add(
                    "field-renamed",
                    path,
                    f"renamed to {target.name} ({target.where})",
                    Compat.API,
                    "only positions travel; importers see a new attribute name",
                )
                self.same_field(struct, f, target)
        for g in new_only:
            if g in renamed.values():
                continue
            self.add(
                "field-added",
                f"{struct}.{g.name}",
                f"added at {g.where}",
                Compat.WIRE,
                "bits old peers give another meaning (or do not send) are now read as this field",
                wire=True,
            )
        for g in new:
            before = old_by_name.get(g.name)
            if before is not None:
                self.same_field(struct, before, g)

    def same_field(self, struct: str, f: _Placed, g: _Placed) -> None:
        path = f"{struct}.{f.name}"
        if f.offset != g.offset:
            self.add(
                "field-moved",
                path,
                f"offset bit {f.offset} -> {g.offset}",
                Compat.WIRE,
                "peers read the field from different bits",
                wire=True,
            )
        if f.width != g.width:
            self.add(
                "field-width-changed",
                path,
                f"{f.width} -> {g.width} bits",
                Compat.WIRE,
                "values no longer fit, or neighbouring bits are read as part of the field",
                wire=True,
            )
        if (f.signed, f.is_bytes) != (g.signed, g.is_bytes):
            self.add(
                "field-signedness-changed",
                path,
                f"{_repr_kind(f)} -> {_repr_kind(g)}",
                Compat.WIRE,
                "the same bits are read as a different value",
                wire=True,
            )
        if f.enum != g.enum:
            self.add(
                "field-enum-changed",
                path,
                f"enum {f.enum} -> {g.enum}",
                Compat.API,
                "the bits are unchanged; importers get the value as a different Python type",
            )


def _repr_kind(f: _Placed) -> str:
    return "bytes" if f.is_bytes else "signed" if f.signed else "unsigned"
