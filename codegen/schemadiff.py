"""Compare two revisions of a BDE-style XSD and say, per change, who stops understanding whom.

Both revisions are read with the loader codegen uses (``pybmq.codegen.xsd_loader.load_schema``),
so schema-diff judges exactly the model the bindings are generated from.

The classes rest on how BDE's codecs (balber, baljsn) and ours put a schema on the wire:

- BER names nothing: a sequence element or choice selection travels as a context-specific tag whose
  number is the member's id (``bdem:id``, else its position), an enumerator as its integer id.
- JSON names everything: members travel by element name, enumerators by their name; ids and order
  do not matter.
- Decoders skip members they do not know (unknown tag / unknown JSON name). A missing member is
  read as None (optional), [] (array), its schema default, or else its value-initialised form
  (0, "", the zero enumerator, a sequence of such values), as BDE does; only a member that has
  none of these (a choice, or a sequence holding one) makes the message undecodable. Unknown
  enumerators and unknown choice selections are rejected; facets and array bounds are not
  enforced. tests/test_schema_diff_interop.py checks these claims against the generated codecs.
- The generated Python API has one keyword-only dataclass per type (defaults as above) and one
  enum class per enumeration, so member order is not part of the API; names and types are.

``compatible`` means old and new peers keep interoperating in both directions and importers'
code keeps working; ``api-breaking`` means the wire is unaffected but the generated API changes;
``wire-breaking`` means some old/new peer pair fails to decode (in the encodings named).

This module runs the walk and holds the rules for the schema and its simple types (enumerators
included); the rules for sequences, choices and their members are in ``schemamembers``, what is
read off the model (wire shapes, fill values, descriptions) in ``schemashape``, the result model in
``schemachange``, the layout-spec differ in ``layoutdiff``, and locating and reporting changes in
``pybmq.cli.schema_locate`` and ``pybmq.cli.schema_reports``.
"""

from __future__ import annotations

from pathlib import Path

from pybmq.codegen import schemashape as shape
from pybmq.codegen.model import ComplexType, EnumValue, Schema, SimpleType
from pybmq.codegen.schemachange import BER, BOTH, JSON, Change, Compat, SchemaDiff
from pybmq.codegen.schemamembers import MemberRules
from pybmq.codegen.xsd_loader import load_schema

__all__ = ["BER", "BOTH", "JSON", "Change", "Compat", "SchemaDiff", "diff_files", "diff_schemas"]


def diff_files(old: Path, new: Path) -> SchemaDiff:
    """Load both XSDs with the codegen loader and diff them (SchemaError if unreadable)."""
    return diff_schemas(load_schema(old), load_schema(new), str(old), str(new))


def diff_schemas(
    old: Schema, new: Schema, old_label: str = "old", new_label: str = "new"
) -> SchemaDiff:
    result = SchemaDiff(old_label, new_label)
    result.changes.extend(_XsdDiffer(old, new).run())
    return result


class _XsdDiffer(MemberRules):
    """The whole walk: the schema, its types, then (inherited) the members of each."""

    def run(self) -> list[Change]:
        if self.old.package != self.new.package:
            self.add(
                "package-changed",
                "<schema>",
                f"bdem:package {self.old.package!r} -> {self.new.package!r}",
                Compat.API,
                "the generated module is named after the package; the wire never carries it",
            )
        old_types = shape.types(self.old)
        new_types = shape.types(self.new)
        for name in [n for n in old_types if n not in new_types]:
            self.type_removed(old_types[name])
        for name, new_type in new_types.items():
            old_type = old_types.get(name)
            if old_type is None:
                self.add(
                    "type-added",
                    name,
                    f"new {shape.type_kind(new_type)} type {name}",
                    Compat.COMPATIBLE,
                    "a new type changes nothing old peers or importers rely on; members that "
                    "use it are judged on their own",
                )
            elif isinstance(old_type, SimpleType) and isinstance(new_type, SimpleType):
                self.simple_type(old_type, new_type)
            elif isinstance(old_type, ComplexType) and isinstance(new_type, ComplexType):
                self.complex_type(old_type, new_type)
            else:
                self.kind_changed(name, old_type, new_type)
        return self.out

    def type_removed(self, old_type: SimpleType | ComplexType) -> None:
        users = sorted(
            f"{t.name}.{e.name}"
            for t in self.old.complex_types
            for e in t.elements
            if not e.type.builtin and e.type.name == old_type.name
        )
        used = f"; old users: {', '.join(users)}" if users else "; no old type referred to it"
        self.add(
            "type-removed",
            old_type.name,
            f"{shape.type_kind(old_type)} type {old_type.name} removed{used}",
            Compat.API,
            "importers lose the class; type names never travel, so the wire effect is judged "
            "at each member that used it",
        )

    def simple_type(self, old: SimpleType, new: SimpleType) -> None:
        name = new.name
        self.doc_changed(name, old.doc, new.doc)
        if old.is_enum != new.is_enum:
            self.kind_changed(name, old, new)
            return
        if not new.is_enum:
            if old.base != new.base:
                self.builtin_changed(name, "restriction-changed", old.base, new.base)
            if old.restrictions != new.restrictions:
                self.add(
                    "restriction-changed",
                    name,
                    f"facets {shape.facets(old)} -> {shape.facets(new)}",
                    Compat.COMPATIBLE,
                    "facets are enforced neither by BDE's nor by the generated decoders, and the "
                    "Python type is unchanged (review what receivers assume about the values)",
                )
            return
        self.enum_values(old, new)

    def enum_values(self, old: SimpleType, new: SimpleType) -> None:
        old_by_name = {v.name: v for v in old.values}
        new_by_name = {v.name: v for v in new.values}
        old_only = [v for v in old.values if v.name not in new_by_name]
        new_only = [v for v in new.values if v.name not in old_by_name]
        renamed: dict[str, EnumValue] = {}
        for value in old_only:
            match = [n for n in new_only if n.id == value.id and n not in renamed.values()]
            if match:
                renamed[value.name] = match[0]
        for value in old_only:
            path = f"{new.name}.{value.name}"
            if value.name in renamed:
                target = renamed[value.name]
                self.add(
                    "enum-value-renamed",
                    path,
                    f"enumerator renamed to {target.name} (id {value.id} kept)",
                    Compat.WIRE,
                    "JSON carries enumerators by name: each side rejects the other's name "
                    "(BER carries the id, unchanged)",
                    (JSON,),
                )
            else:
                self.add(
                    "enum-value-removed",
                    path,
                    f"enumerator {value.name} (id {value.id}) removed",
                    Compat.WIRE,
                    "old peers may still send it and new decoders reject an unknown enumerator; "
                    "importers lose the member",
                    BOTH,
                )
        for value in new_only:
            if value in renamed.values():
                continue
            self.add(
                "enum-value-added",
                f"{new.name}.{value.name}",
                f"enumerator {value.name} (id {value.id}) added",
                Compat.WIRE,
                "old decoders reject an unknown enumerator: breaks as soon as a new peer sends it",
                BOTH,
            )
        for value in new.values:
            before = old_by_name.get(value.name)
            if before is None:
                continue
            path = f"{new.name}.{value.name}"
            if before.id != value.id:
                explicit = before.bdem_id is not None or value.bdem_id is not None
                self.add(
                    "enum-value-renumbered",
                    path,
                    f"{'bdem:id' if explicit else 'position id'} {before.id} -> {value.id}",
                    Compat.WIRE,
                    "BER carries enumerators as their integer id: old and new peers read each "
                    "other's value as a different enumerator (JSON uses names, unaffected)",
                    (BER,),
                )
            self.doc_changed(path, before.doc, value.doc)
