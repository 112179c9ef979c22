"""What schema-diff reads off the codegen model: a type's wire shape, what a decoder fills in
for an absent member, and the short descriptions the changes quote. Pure functions of the model.
"""

from __future__ import annotations

from collections.abc import Iterable

# The generator's own rule for 'can T() be built': schema-diff judges what codegen emits.
from pybmq.codegen.model import (
    AnonymousChoice,
    ComplexType,
    Element,
    Schema,
    SimpleType,
    TypeRef,
    constructible,
)

__all__ = [
    "describe",
    "doc",
    "element_shape",
    "facets",
    "fill",
    "occurs",
    "plain",
    "scalar",
    "shape",
    "type_kind",
    "types",
]


def doc(text: str | None) -> str:
    """Documentation compared by words: re-wrapping or trailing blanks are not a change."""
    return " ".join((text or "").split())


def describe(element: Element) -> str:
    parts = [f"{element.type}"]
    if element.is_array:
        parts.append("array")
    elif element.is_optional:
        parts.append("optional")
    if element.default is not None:
        parts.append(f"default {element.default!r}")
    return ", ".join(parts)


def occurs(element: Element) -> str:
    high = "unbounded" if element.max_occurs is None else str(element.max_occurs)
    return f"{element.min_occurs}..{high}"


def shape(schema: Schema, ref: TypeRef, seen: set[str]) -> object:
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
                    tuple(element_shape(schema, e, seen) for e in member.elements),
                )
            )
        else:
            members.append(element_shape(schema, member, seen))
    return (target.kind, tuple(members))


def element_shape(schema: Schema, element: Element, seen: set[str]) -> object:
    return (
        element.name,
        element.id,
        element.min_occurs,
        element.max_occurs,
        element.default,
        shape(schema, element.type, seen),
    )


def scalar(schema: Schema, ref: TypeRef) -> TypeRef | None:
    """The built-in a reference travels as: itself, or a non-enum simple type's base; else None."""
    if ref.builtin:
        return ref
    target = schema.type(ref.name)
    if isinstance(target, SimpleType) and not target.is_enum:
        return scalar(schema, target.base)
    return None


def types(schema: Schema) -> dict[str, SimpleType | ComplexType]:
    types: dict[str, SimpleType | ComplexType] = {t.name: t for t in schema.simple_types}
    types.update((t.name, t) for t in schema.complex_types)
    return types


def plain(members: Iterable[object]) -> list[Element]:
    return [m for m in members if isinstance(m, Element)]


def fill(schema: Schema, element: Element) -> str | None:
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


def type_kind(t: SimpleType | ComplexType) -> str:
    if isinstance(t, SimpleType):
        return "enumeration" if t.is_enum else "simple"
    return t.kind


def facets(t: SimpleType) -> str:
    set_facets = {k: v for k, v in vars(t.restrictions).items() if v is not None}
    return ", ".join(f"{k}={v}" for k, v in set_facets.items()) or "none"
