"""schema-diff's rules for members: sequences and choices, their elements (added, removed,
reordered), occurrence, defaults and type references, on a base that records each Change.

``pybmq.codegen.schemadiff`` runs the whole walk; this module holds the rules below the type level.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from pybmq.codegen import schemashape as shape
from pybmq.codegen.model import (
    INTEGER_RANGES,
    AnonymousChoice,
    ComplexType,
    Element,
    Schema,
    SimpleType,
    TypeRef,
)
from pybmq.codegen.schemachange import BER, BOTH, JSON, KINDS, Change, Compat

__all__ = ["DifferBase", "MemberRules"]


class DifferBase:
    """The two schemas, the changes found so far, and the rules every level shares."""

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

    def kind_changed(
        self, name: str, old: SimpleType | ComplexType, new: SimpleType | ComplexType
    ) -> None:
        self.add(
            "type-kind-changed",
            name,
            f"{shape.type_kind(old)} -> {shape.type_kind(new)}",
            Compat.WIRE,
            "a different kind of type has a different encoding in BER and JSON",
            BOTH,
        )

    def doc_changed(self, path: str, old: str | None, new: str | None) -> None:
        if shape.doc(old) != shape.doc(new):
            what = "added" if not shape.doc(old) else "removed" if not shape.doc(new) else "changed"
            self.add(
                "doc-changed",
                path,
                f"documentation {what}",
                Compat.COMPATIBLE,
                "documentation reaches neither the wire nor the API's behaviour",
            )

    # -- simple types ----------------------------------------------------------------------------


class MemberRules(DifferBase):
    """Complex types and their members."""

    # -- complex types ---------------------------------------------------------------------------

    def complex_type(self, old: ComplexType, new: ComplexType) -> None:
        name = new.name
        self.doc_changed(name, old.doc, new.doc)
        if old.kind != new.kind:
            self.kind_changed(name, old, new)
            return
        if new.kind == "choice":
            self.members(name, shape.plain(old.members), shape.plain(new.members), choice=True)
            return
        self.members(name, shape.plain(old.members), shape.plain(new.members), choice=False)
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
        detail = f"removed (was id {element.id}, {shape.describe(element)})"
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
        fill = shape.fill(self.old, element)
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
        detail = f"added (id {element.id}; {shape.describe(element)})"
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
        fill = shape.fill(self.new, element)
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
        detail = f"occurs {shape.occurs(old)} -> {shape.occurs(new)}"
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
        fill = shape.fill(reader, replace(expected, min_occurs=1))
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
        if shape.fill(self.old, old) is None:
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
        old_base, new_base = shape.scalar(self.old, old), shape.scalar(self.new, new)
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
        return shape.shape(self.old, old, set()) == shape.shape(self.new, new, set())
