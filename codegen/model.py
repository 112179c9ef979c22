"""A small, typed model of a BDE-style XSD: what every generator (and schema-diff) works from.

The XSD is read by xsdata (see ``pybmq.codegen.xsd_loader``) and mapped into these frozen
dataclasses. They keep exactly what BDE's tools give meaning to and XML Schema alone does not:
``bdem:id`` on enumerators and choice selections (the wire ids), defaults, occurrence bounds,
documentation, and the anonymous ``<choice>`` nested in a ``<sequence>`` (which BER encodes as one
extra element). Everything is immutable and ordered as in the schema file, so two loads of the
same file compare equal and two revisions can be diffed member by member.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

# XSD built-in types a BDE schema may use, by local name. ``kind`` says how codecs treat them.
BUILTIN_KINDS: dict[str, str] = {
    "string": "string",
    "normalizedString": "string",
    "token": "string",
    "anyURI": "string",
    "boolean": "boolean",
    "byte": "int",
    "short": "int",
    "int": "int",
    "long": "int",
    "integer": "int",
    "unsignedByte": "int",
    "unsignedShort": "int",
    "unsignedInt": "int",
    "unsignedLong": "int",
    "nonNegativeInteger": "int",
    "positiveInteger": "int",
    "negativeInteger": "int",
    "nonPositiveInteger": "int",
    "float": "float",
    "double": "float",
    "decimal": "float",
    "hexBinary": "bytes",
    "base64Binary": "bytes",
    "date": "temporal",
    "dateTime": "temporal",
    "time": "temporal",
    "duration": "temporal",
}

# Inclusive value range of the fixed-width integer built-ins (BDE maps each to a C++ type).
INTEGER_RANGES: dict[str, tuple[int, int]] = {
    "byte": (-(2**7), 2**7 - 1),
    "short": (-(2**15), 2**15 - 1),
    "int": (-(2**31), 2**31 - 1),
    "long": (-(2**63), 2**63 - 1),
    "integer": (-(2**63), 2**63 - 1),
    "unsignedByte": (0, 2**8 - 1),
    "unsignedShort": (0, 2**16 - 1),
    "unsignedInt": (0, 2**32 - 1),
    "unsignedLong": (0, 2**64 - 1),
    "nonNegativeInteger": (0, 2**63 - 1),
    "positiveInteger": (1, 2**63 - 1),
    "negativeInteger": (-(2**63), -1),
    "nonPositiveInteger": (-(2**63), 0),
}

UNBOUNDED = None  # value of ``max_occurs`` for maxOccurs='unbounded'

__all__ = [
    "BUILTIN_KINDS",
    "INTEGER_RANGES",
    "UNBOUNDED",
    "AnonymousChoice",
    "ComplexType",
    "Element",
    "EnumValue",
    "Member",
    "Restrictions",
    "Schema",
    "SimpleType",
    "TypeRef",
    "constructible",
]


@dataclass(frozen=True)
class TypeRef:
    """A reference to a type: an XSD built-in (``builtin=True``) or a type of this schema."""

    name: str
    builtin: bool

    @property
    def builtin_kind(self) -> str | None:
        """``string``/``int``/``boolean``/``bytes``/``float``/``temporal`` for built-ins."""
        return BUILTIN_KINDS.get(self.name) if self.builtin else None

    def __str__(self) -> str:
        return f"xs:{self.name}" if self.builtin else self.name


@dataclass(frozen=True)
class Restrictions:
    """Facets of a ``<restriction>`` other than enumerations (values as written in the XSD)."""

    min_inclusive: str | None = None
    max_inclusive: str | None = None
    min_exclusive: str | None = None
    max_exclusive: str | None = None
    length: str | None = None
    min_length: str | None = None
    max_length: str | None = None
    pattern: str | None = None
    total_digits: str | None = None
    fraction_digits: str | None = None

    def is_empty(self) -> bool:
        return all(value is None for value in vars(self).values())


@dataclass(frozen=True)
class EnumValue:
    """One enumerator. ``id`` is its wire value: ``bdem:id`` if given, else its position."""

    name: str
    id: int
    bdem_id: int | None = None
    doc: str | None = None


@dataclass(frozen=True)
class SimpleType:
    """A named ``<simpleType>``: an enumeration (``values``) or a restricted built-in."""

    name: str
    base: TypeRef
    values: tuple[EnumValue, ...] = ()
    restrictions: Restrictions = field(default_factory=Restrictions)
    doc: str | None = None
    preserve_enum_order: bool = False

    @property
    def is_enum(self) -> bool:
        return bool(self.values)

    def value(self, name: str) -> EnumValue:
        for value in self.values:
            if value.name == name:
                return value
        raise KeyError(name)


@dataclass(frozen=True)
class Element:
    """One element of a sequence, or one selection of a choice.

    ``id`` is the BER context tag: ``bdem:id`` when the XSD gives one, else the element's position
    among its siblings (for a sequence: counting an anonymous choice as one member).
    ``choice`` is the ``id`` of the anonymous choice this element is a selection of, or None.
    """

    name: str
    type: TypeRef
    id: int
    min_occurs: int = 1
    max_occurs: int | None = 1
    default: str | None = None
    bdem_id: int | None = None
    doc: str | None = None
    choice: int | None = None

    @property
    def is_array(self) -> bool:
        return self.max_occurs is UNBOUNDED or self.max_occurs > 1

    @property
    def is_optional(self) -> bool:
        """Nullable in BDE terms: may be absent, and is not an array."""
        return self.min_occurs == 0 and not self.is_array


@dataclass(frozen=True)
class AnonymousChoice:
    """A ``<choice>`` written directly inside a ``<sequence>`` (BDE generates it untagged).

    ``id`` is its position among the sequence's members; BER encodes it as one constructed element
    with that context tag holding the chosen selection.
    """

    id: int
    elements: tuple[Element, ...]
    min_occurs: int = 1
    max_occurs: int | None = 1
    doc: str | None = None


Member = Element | AnonymousChoice


@dataclass(frozen=True)
class ComplexType:
    """A named ``<complexType>``: a sequence (members in order) or a choice (its selections).

    A type with no content model (``<complexType name='X'/>``) is an empty sequence.
    """

    name: str
    kind: Literal["sequence", "choice"]
    members: tuple[Member, ...] = ()
    doc: str | None = None

    @property
    def elements(self) -> tuple[Element, ...]:
        """Every element in schema order, the anonymous choices' selections flattened in place."""
        out: list[Element] = []
        for member in self.members:
            if isinstance(member, AnonymousChoice):
                out.extend(member.elements)
            else:
                out.append(member)
        return tuple(out)

    @property
    def anonymous_choices(self) -> tuple[AnonymousChoice, ...]:
        return tuple(m for m in self.members if isinstance(m, AnonymousChoice))

    def element(self, name: str) -> Element:
        for element in self.elements:
            if element.name == name:
                return element
        raise KeyError(name)


@dataclass(frozen=True)
class Schema:
    """A whole XSD: its types in file order, plus schema-level facts."""

    complex_types: tuple[ComplexType, ...]
    simple_types: tuple[SimpleType, ...]
    top_elements: tuple[Element, ...] = ()
    package: str | None = None
    target_namespace: str | None = None
    doc: str | None = None

    def type(self, name: str) -> ComplexType | SimpleType:
        """The schema type called ``name`` (KeyError if none)."""
        for complex_type in self.complex_types:
            if complex_type.name == name:
                return complex_type
        for simple_type in self.simple_types:
            if simple_type.name == name:
                return simple_type
        raise KeyError(name)

    @property
    def type_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.simple_types) + tuple(t.name for t in self.complex_types)

    def references(self, complex_type: ComplexType) -> Iterator[str]:
        """Names of the schema types ``complex_type``'s elements refer to, in order."""
        for element in complex_type.elements:
            if not element.type.builtin:
                yield element.type.name


def constructible(schema: Schema, type_name: str, seen: frozenset[str] = frozenset()) -> bool:
    """Whether a value of ``type_name`` can be made with no arguments (every required member has
    a default or is itself constructible): what a generated default factory needs."""
    target = schema.type(type_name)
    if not isinstance(target, ComplexType):
        return True
    if target.kind == "choice" or type_name in seen:
        return False
    if any(c.min_occurs > 0 for c in target.anonymous_choices):
        return False
    required = [
        element
        for element in target.members
        if isinstance(element, Element)
        and not (element.is_array or element.is_optional)
        and element.default is None
        and not element.type.builtin
    ]
    return all(constructible(schema, e.type.name, seen | {type_name}) for e in required)
