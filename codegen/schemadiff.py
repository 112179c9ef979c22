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

Why one module of ~770 lines: it is one job, the walk that classifies each kind of XSD change
(types, enumerators, members, occurrence, defaults, type references), and its rules read best side
by side; the result model is in ``schemachange``, the layout-spec differ in ``layoutdiff``, and
locating and reporting changes in ``pybmq.cli.schema_locate`` and ``pybmq.cli.schema_reports``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

# The generator's own rule for 'can T() be built': schema-diff judges what codegen emits.
from pybmq.codegen.model import (
    INTEGER_RANGES,
    AnonymousChoice,
    ComplexType,
    Element,
    EnumValue,
    Schema,
    SimpleType,
    TypeRef,
    constructible,
)
from pybmq.codegen.schemachange import BER, BOTH, JSON, KINDS, Change, Compat, SchemaDiff
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


def _doc(text: str | None) -> str:
    """Documentation compared by words: re-wrapping or trailing blanks are not a change."""
    return " ".join((text or "").split())


def _describe(element: Element) -> str:
    parts = [f"{element.type}"]
    if element.is_array:
        parts.append("array")
    elif element.is_optional:
        parts.append("optional")
    if element.default is not None:
        parts.append(f"default {element.default!r}")
    return ", ".join(parts)


def _occurs(element: Element) -> str:
    high = "unbounded" if element.max_occurs is None else str(element.max_occurs)
    return f"{element.min_occurs}..{high}"


class _XsdDiffer:
    def __init__(self, old: Schema, new: Schema) -> None:
        self.old = old
        self.new = new
        self.out: list[Change] = []

    def add(
        self,
        kind: str,
        path: str,
        detail: str,
        compat: Compat,
        reason: str,
        encodings: Sequence[str] = (),
    ) -> None:
        assert kind in KINDS, kind
        self.out.append(Change(kind, path, detail, compat, reason, tuple(encodings)))

    # -- schema and types ------------------------------------------------------------------------

    def run(self) -> list[Change]:
        if self.old.package != self.new.package:
            self.add(
                "package-changed",
                "<schema>",
                f"bdem:package {self.old.package!r} -> {self.new.package!r}",
                Compat.API,
                "the generated module is named after the package; the wire never carries it",
            )
        old_types = _types(self.old)
        new_types = _types(self.new)
        for name in [n for n in old_types if n not in new_types]:
            self.type_removed(old_types[name])
        for name, new_type in new_types.items():
            old_type = old_types.get(name)
            if old_type is None:
                self.add(
                    "type-added",
                    name,
                    f"new {_type_kind(new_type)} type {name}",
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
            f"{_type_kind(old_type)} type {old_type.name} removed{used}",
            Compat.API,
            "importers lose the class; type names never travel, so the wire effect is judged "
            "at each member that used it",
        )

    def kind_changed(
        self, name: str, old: SimpleType | ComplexType, new: SimpleType | ComplexType
    ) -> None:
        self.add(
            "type-kind-changed",
            name,
            f"{_type_kind(old)} -> {_type_kind(new)}",
            Compat.WIRE,
            "a different kind of type has a different encoding in BER and JSON",
            BOTH,
        )

    def doc_changed(self, path: str, old: str | None, new: str | None) -> None:
        if _doc(old) != _doc(new):
            what = "added" if not _doc(old) else "removed" if not _doc(new) else "changed"
            self.add(
                "doc-changed",
                path,
                f"documentation {what}",
                Compat.COMPATIBLE,
                "documentation reaches neither the wire nor the API's behaviour",
            )

    # -- simple types ----------------------------------------------------------------------------

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
                    f"facets {_facets(old)} -> {_facets(new)}",
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

    # -- complex types ---------------------------------------------------------------------------

    def complex_type(self, old: ComplexType, new: ComplexType) -> None:
        name = new.name
        self.doc_changed(name, old.doc, new.doc)
        if old.kind != new.kind:
            self.kind_changed(name, old, new)
            return
        if new.kind == "choice":
            self.members(name, _plain(old.members), _plain(new.members), choice=True)
            return
        self.members(name, _plain(old.members), _plain(new.members), choice=False)
        old_choices = old.anonymous_choices
        new_choices = new.anonymous_choices
        for old_c, new_c in zip(old_choices, new_choices, strict=False):
            self.anonymous_choice(name, old_c, new_c)
        for extra in old_choices[len(new_choices) :]:
            self.add(
                "element-removed",
                f"{name}.<choice@{extra.id}>",
                "anonymous choice removed",
                Compat.WIRE,
                "old peers send one of its selections; new decoders cannot place it",
                BOTH,
            )
        for extra in new_choices[len(old_choices) :]:
            self.add(
                "element-added",
                f"{name}.<choice@{extra.id}>",
                "anonymous choice added",
                Compat.WIRE,
                "a choice must hold a selection: old peers never send one",
                BOTH,
            )

    def anonymous_choice(self, name: str, old: AnonymousChoice, new: AnonymousChoice) -> None:
        path = f"{name}.<choice>"
        if old.id != new.id:
            self.add(
                "element-reordered",
                path,
                f"anonymous choice moves from id {old.id} to {new.id}",
                Compat.WIRE,
                "BER tags the choice with its position: old and new peers look for it under "
                "different tags",
                (BER,),
            )
        if (old.min_occurs, old.max_occurs) != (new.min_occurs, new.max_occurs):
            self.add(
                "element-occurs-changed",
                path,
                "occurrence of the anonymous choice changed",
                Compat.WIRE,
                "an optional or repeated choice is encoded differently",
                BOTH,
            )
        self.doc_changed(path, old.doc, new.doc)
        self.members(name, old.elements, new.elements, choice=True)

    def members(
        self, owner: str, old: Sequence[Element], new: Sequence[Element], *, choice: bool
    ) -> None:
        """Diff the members of one sequence (direct elements) or one choice (selections)."""
        what = "selection" if choice else "element"
        old_by_name = {e.name: e for e in old}
        new_by_name = {e.name: e for e in new}
        old_only = [e for e in old if e.name not in new_by_name]
        new_only = [e for e in new if e.name not in old_by_name]
        # A member that disappears under one name and appears under another with the same id
        # (BER tag) is a rename: BER is unaffected, JSON and the API see it.
        renames: dict[str, Element] = {}
        for element in old_only:
            for candidate in new_only:
                if candidate.id == element.id and candidate not in renames.values():
                    renames[element.name] = candidate
                    break
        for element in old_only:
            path = f"{owner}.{element.name}"
            if element.name in renames:
                target = renames[element.name]
                self.add(
                    f"{what}-renamed",
                    path,
                    f"renamed to {target.name} (id {element.id} kept)",
                    Compat.WIRE,
                    f"JSON carries members by name: each side drops the other's {what} "
                    "(BER matches by tag, unaffected); importers see a new attribute name",
                    (JSON,),
                )
                self.same_member(owner, element, target, choice=choice)
            else:
                self.member_removed(owner, element, choice=choice)
        for element in new:
            if element in renames.values():
                continue
            before = old_by_name.get(element.name)
            if before is None:
                self.member_added(owner, element, old, choice=choice)
            else:
                self.same_member(owner, before, element, choice=choice)
        self.order_only(owner, old, new, what)

    def order_only(
        self, owner: str, old: Sequence[Element], new: Sequence[Element], what: str
    ) -> None:
        """Members listed in another order while every id stays: nothing observable changes."""
        common = [e.name for e in old if any(n.name == e.name for n in new)]
        order = [e.name for e in new if e.name in common]
        same_ids = all(o.id == n.id for o in old for n in new if o.name == n.name)
        if common != order and same_ids:
            self.add(
                f"{what}-reordered",
                owner,
                f"{what}s listed in another order, every bdem:id kept",
                Compat.COMPATIBLE,
                "BER tags are the unchanged ids, JSON uses names, and the generated classes "
                "take keyword arguments only",
            )

    def member_removed(self, owner: str, element: Element, *, choice: bool) -> None:
        path = f"{owner}.{element.name}"
        detail = f"removed (was id {element.id}, {_describe(element)})"
        if choice:
            self.add(
                "selection-removed",
                path,
                detail,
                Compat.WIRE,
                "old peers may still send this selection and new decoders cannot decode it",
                BOTH,
            )
            return
        fill = _fill(self.old, element)
        if fill is None:
            self.add(
                "element-removed",
                path,
                detail,
                Compat.WIRE,
                "new peers stop sending it and old decoders have nothing to put in its place "
                "(no default, no value-initialised form)",
                BOTH,
            )
        else:
            self.add(
                "element-removed",
                path,
                detail,
                Compat.API,
                f"old decoders read {fill} when new peers omit it; importers lose the field",
            )

    def member_added(
        self, owner: str, element: Element, old: Sequence[Element], *, choice: bool
    ) -> None:
        path = f"{owner}.{element.name}"
        kind = "selection-added" if choice else "element-added"
        taken = next((o for o in old if o.id == element.id), None)
        detail = f"added (id {element.id}; {_describe(element)})"
        if taken is not None:
            self.add(
                kind,
                path,
                detail,
                Compat.WIRE,
                f"BER tag {element.id} carried {taken.name} before: each side reads the other's "
                "member under that tag as the wrong one",
                BOTH if choice else (BER,),
            )
            return
        if choice:
            self.add(
                kind,
                path,
                detail,
                Compat.WIRE,
                "old decoders cannot decode the new selection: breaks as soon as a new peer "
                "sends it",
                BOTH,
            )
            return
        fill = _fill(self.new, element)
        if fill is None:
            self.add(
                kind,
                path,
                detail,
                Compat.WIRE,
                "old peers never send it and nothing can stand in for it (its type holds a "
                "choice): new decoders reject their messages",
                BOTH,
            )
        elif element.min_occurs > 0 and element.default is None and not element.is_array:
            self.add(
                kind,
                path,
                detail,
                Compat.COMPATIBLE,
                f"old decoders skip it; new decoders read {fill} (value-initialised: no schema "
                "default) when old peers omit it, so that value must mean 'not sent'",
            )
        else:
            self.add(
                kind,
                path,
                detail,
                Compat.COMPATIBLE,
                f"old decoders skip it; new decoders read {fill} when old peers omit it, and "
                "the new field has that default",
            )

    def same_member(self, owner: str, old: Element, new: Element, *, choice: bool) -> None:
        """Compare one member known under both revisions (same name, or renamed on its tag)."""
        what = "selection" if choice else "element"
        path = f"{owner}.{old.name}"
        if old.id != new.id:
            explicit = old.bdem_id is not None or new.bdem_id is not None
            if explicit:
                self.add(
                    "bdem-id-changed",
                    path,
                    f"bdem:id {old.id} -> {new.id}",
                    Compat.WIRE,
                    "BER tags the member with its bdem:id: old and new peers look for it under "
                    "different tags (JSON uses names, unaffected)",
                    (BER,),
                )
            else:
                self.add(
                    f"{what}-reordered",
                    path,
                    f"position (BER tag) {old.id} -> {new.id}",
                    Compat.WIRE,
                    "without bdem:id the BER tag is the position: old and new peers read this "
                    f"{what} under a different tag (JSON uses names, unaffected)",
                    (BER,),
                )
        if old.type != new.type:
            self.type_changed(
                path,
                old.type,
                new.type,
                "selection-type-changed" if choice else "element-type-changed",
            )
        if not choice:
            self.occurs_changed(path, old, new)
            self.default_changed(path, old, new)
        self.doc_changed(path, old.doc, new.doc)

    def occurs_changed(self, path: str, old: Element, new: Element) -> None:
        if (old.min_occurs, old.max_occurs) == (new.min_occurs, new.max_occurs):
            return
        detail = f"occurs {_occurs(old)} -> {_occurs(new)}"
        if old.is_array != new.is_array:
            self.add(
                "element-occurs-changed",
                path,
                detail,
                Compat.WIRE,
                "a single value and an array are encoded differently in BER and JSON",
                BOTH,
            )
            return
        if old.is_array:
            self.add(
                "element-occurs-changed",
                path,
                detail,
                Compat.COMPATIBLE,
                "array bounds are enforced neither by BDE's nor by the generated decoders, "
                "and the field stays a list",
            )
            return
        # One side may now omit a member the other side's decoder expects.
        to_optional = new.min_occurs == 0
        reader, expected = (self.old, old) if to_optional else (self.new, new)
        fill = _fill(reader, replace(expected, min_occurs=1))
        who = "new peers may omit it; old" if to_optional else "old peers may omit it; new"
        if fill is None:
            self.add(
                "element-occurs-changed",
                path,
                detail,
                Compat.WIRE,
                f"{who} decoders need it and have nothing to put in its place",
                BOTH,
            )
        else:
            change = "becomes Optional" if to_optional else "loses Optional"
            self.add(
                "element-occurs-changed",
                path,
                detail,
                Compat.API,
                f"{who} decoders read {fill} instead; the field's type {change} for importers",
            )

    def default_changed(self, path: str, old: Element, new: Element) -> None:
        if old.default == new.default:
            return
        detail = f"default {old.default!r} -> {new.default!r}"
        if _fill(self.old, old) is None:
            self.add(
                "element-default-changed",
                path,
                detail,
                Compat.COMPATIBLE,
                "decoders now accept its absence, and constructor calls stay valid",
            )
        else:
            self.add(
                "element-default-changed",
                path,
                detail,
                Compat.API,
                "encoders always write it, so sent values are unchanged; decoders reading an "
                "omitted member and constructors not passing it get another value",
            )

    # -- type references -------------------------------------------------------------------------

    def type_changed(self, path: str, old: TypeRef, new: TypeRef, kind: str) -> None:
        # A non-enum simple type travels (and is held in Python) as its base built-in.
        old_base, new_base = _scalar(self.old, old), _scalar(self.new, new)
        if old_base is not None and new_base is not None:
            if old_base != new_base:
                self.builtin_changed(path, kind, old_base, new_base)
                return
            if old != new:
                self.add(
                    kind,
                    path,
                    f"type {old} -> {new} (both {old_base})",
                    Compat.COMPATIBLE,
                    "the same built-in underneath: same encoding, same Python type (facets are "
                    "not enforced by the decoders)",
                )
            return
        if not old.builtin and not new.builtin and self.same_shape(old, new):
            self.add(
                kind,
                path,
                f"type {old} -> {new} (same shape)",
                Compat.API,
                "both types encode identically in BER and JSON; importers see another class",
            )
            return
        old_python = self.python_kind(old, self.old)
        new_python = self.python_kind(new, self.new)
        self.add(
            kind,
            path,
            f"type {old} -> {new}",
            Compat.WIRE,
            "the values are encoded differently, so each side misreads or rejects the other's"
            + ("" if old_python == new_python else "; importers see another Python type"),
            BOTH,
        )

    def builtin_changed(self, path: str, kind: str, old: TypeRef, new: TypeRef) -> None:
        detail = f"type {old} -> {new}"
        if old.builtin_kind != new.builtin_kind:
            self.add(
                kind,
                path,
                detail,
                Compat.WIRE,
                f"a {old.builtin_kind} and a {new.builtin_kind} are encoded differently",
                BOTH,
            )
        elif old.builtin_kind == "int" and INTEGER_RANGES.get(old.name) != INTEGER_RANGES.get(
            new.name
        ):
            low_old, high_old = INTEGER_RANGES[old.name]
            low_new, high_new = INTEGER_RANGES[new.name]
            lost = []
            if low_new > low_old or high_new < high_old:
                lost.append("new decoders reject some old values")
            if low_new < low_old or high_new > high_old:
                lost.append("old decoders reject some new values")
            self.add(
                kind,
                path,
                detail,
                Compat.WIRE,
                f"integer range [{low_old}, {high_old}] -> [{low_new}, {high_new}]: "
                + " and ".join(lost),
                BOTH,
            )
        else:
            self.add(
                kind,
                path,
                detail,
                Compat.COMPATIBLE,
                "same encoding and same value range in BER and JSON, same Python type",
            )

    def python_kind(self, ref: TypeRef, schema: Schema) -> str:
        if ref.builtin:
            return ref.builtin_kind or ref.name
        return ref.name

    def same_shape(self, old: TypeRef, new: TypeRef) -> bool:
        """Do two schema types encode identically (names of types and docs aside)?"""
        return _shape(self.old, old, set()) == _shape(self.new, new, set())


def _shape(schema: Schema, ref: TypeRef, seen: set[str]) -> object:
    """A comparable structure of everything about ``ref`` that BER or JSON can observe."""
    if ref.builtin:
        return ("builtin", ref.name)
    if ref.name in seen:
        return ("recursive", ref.name)
    seen = seen | {ref.name}
    target = schema.type(ref.name)
    if isinstance(target, SimpleType):
        return (
            "simple",
            tuple((v.name, v.id) for v in target.values),
            target.base.name,
            target.restrictions,
        )
    members: list[object] = []
    for member in target.members:
        if isinstance(member, AnonymousChoice):
            members.append(
                (
                    "choice",
                    member.id,
                    member.min_occurs,
                    member.max_occurs,
                    tuple(_element_shape(schema, e, seen) for e in member.elements),
                )
            )
        else:
            members.append(_element_shape(schema, member, seen))
    return (target.kind, tuple(members))


def _element_shape(schema: Schema, element: Element, seen: set[str]) -> object:
    return (
        element.name,
        element.id,
        element.min_occurs,
        element.max_occurs,
        element.default,
        _shape(schema, element.type, seen),
    )


def _scalar(schema: Schema, ref: TypeRef) -> TypeRef | None:
    """The built-in a reference travels as: itself, or a non-enum simple type's base; else None."""
    if ref.builtin:
        return ref
    target = schema.type(ref.name)
    if isinstance(target, SimpleType) and not target.is_enum:
        return _scalar(schema, target.base)
    return None


def _types(schema: Schema) -> dict[str, SimpleType | ComplexType]:
    types: dict[str, SimpleType | ComplexType] = {t.name: t for t in schema.simple_types}
    types.update((t.name, t) for t in schema.complex_types)
    return types


def _plain(members: Iterable[object]) -> list[Element]:
    return [m for m in members if isinstance(m, Element)]


def _fill(schema: Schema, element: Element) -> str | None:
    """What a decoder (BDE's or ours) puts in place of ``element`` when it is absent, or None.

    Optional members become None, arrays empty, members with a schema default take it; other
    members are value-initialised (0, "", the zero enumerator, a sequence of such values) unless
    their type cannot be (a choice, or a sequence holding one): only then is absence an error.
    """
    if element.is_array:
        return "an empty list"
    if element.min_occurs == 0:
        return "None"
    if element.default is not None:
        return f"the default {element.default!r}"
    if element.type.builtin:
        kind = element.type.builtin_kind
        return {"int": "0", "boolean": "false", "float": "0.0"}.get(kind or "", "an empty value")
    target = schema.type(element.type.name)
    if isinstance(target, SimpleType):
        if target.is_enum:
            zero = [v for v in target.values if v.id == 0] or list(target.values)
            return zero[0].name
        return "0" if target.base.builtin_kind == "int" else "an empty value"
    if constructible(schema, target.name):
        return f"an all-default {target.name}"
    return None


def _type_kind(t: SimpleType | ComplexType) -> str:
    if isinstance(t, SimpleType):
        return "enumeration" if t.is_enum else "simple"
    return t.kind


def _facets(t: SimpleType) -> str:
    set_facets = {k: v for k, v in vars(t.restrictions).items() if v is not None}
    return ", ".join(f"{k}={v}" for k, v in set_facets.items()) or "none"
