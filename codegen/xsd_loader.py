"""Read a BDE-style XSD with xsdata and map it into ``pybmq.codegen.model``.

xsdata's ``SchemaParser`` does the XML work and gives its ``xsdata.models.xsd`` objects; this module
only walks those objects. Two things xsdata drops are recovered here: the document order of a
sequence's members (xsdata keeps elements and choices in separate lists, each node carries its
``index`` in the file) and BDE's own attributes (``bdem:id``, ``bdem:package``...), which the
parser sees but does not store: a small subclass records them by node index.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pybmq.codegen import extra_missing
from pybmq.codegen.model import (
    BUILTIN_KINDS,
    AnonymousChoice,
    ComplexType,
    Element,
    EnumValue,
    Member,
    Restrictions,
    Schema,
    SimpleType,
    TypeRef,
)
from pybmq.errors import SchemaError

__all__ = ["BDEM_NS", "XSD_NS", "load_schema"]

try:
    from xsdata.codegen.parsers.schema import SchemaParser
    from xsdata.exceptions import ParserError
    from xsdata.models import xsd
except ModuleNotFoundError as exc:  # the codegen extra is not installed: say so
    raise extra_missing(exc)  # noqa: B904 - its context is exc

XSD_NS = "http://www.w3.org/2001/XMLSchema"
BDEM_NS = "http://bloomberg.com/schemas/bdem"


@dataclass
class _BdemSchemaParser(SchemaParser):  # type: ignore[misc]
    """xsdata's schema parser, also keeping each node's ``bdem:*`` attributes by node index."""

    bdem: dict[int, dict[str, str]] = field(default_factory=dict)

    def start(
        self,
        clazz: Any,
        queue: list[Any],
        objects: list[Any],
        qname: str,
        attrs: dict[str, str],
        ns_map: dict[str | None, str],
    ) -> None:
        super().start(clazz, queue, objects, qname, attrs, ns_map)
        prefix = "{" + BDEM_NS + "}"
        found = {
            key[len(prefix) :]: value for key, value in attrs.items() if key.startswith(prefix)
        }
        if found:
            self.bdem[self.index] = found


def load_schema(path: Path | str) -> Schema:
    """Parse the XSD at ``path`` into a ``Schema``; SchemaError if it uses what we don't model."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SchemaError(f"cannot read schema {path}: {exc}") from exc
    parser = _BdemSchemaParser(location=path.resolve().as_uri())
    try:
        root = parser.from_bytes(data, xsd.Schema)
    except (ParserError, ValueError, SyntaxError) as exc:
        raise SchemaError(f"{path.name}: not a readable XSD: {exc}") from exc
    return _Mapper(root, parser.bdem, path.name).schema()


class _Mapper:
    """Maps one parsed ``xsd.Schema`` into the model; raises SchemaError naming the construct."""

    def __init__(self, root: xsd.Schema, bdem: dict[int, dict[str, str]], source: str) -> None:
        self.root = root
        self.bdem = bdem
        self.source = source
        self.names = {t.name for t in root.complex_types} | {t.name for t in root.simple_types}

    # -- schema ----------------------------------------------------------------------------------

    def schema(self) -> Schema:
        root = self.root
        for unsupported in ("includes", "imports", "redefines", "groups", "attribute_groups"):
            if getattr(root, unsupported):
                raise SchemaError(f"{self.source}: top-level {unsupported} are not supported")
        simple = tuple(self.simple_type(t) for t in sorted(root.simple_types, key=_index))
        complex_ = tuple(self.complex_type(t) for t in sorted(root.complex_types, key=_index))
        tops = tuple(
            self.element(e, position, f"element {e.name}", None)
            for position, e in enumerate(sorted(root.elements, key=_index))
        )
        return Schema(
            complex_types=complex_,
            simple_types=simple,
            top_elements=tops,
            package=self.bdem.get(root.index, {}).get("package"),
            target_namespace=root.target_namespace,
            doc=root.display_help,
        )

    # -- simple types ----------------------------------------------------------------------------

    def simple_type(self, node: xsd.SimpleType) -> SimpleType:
        where = f"simpleType {node.name}"
        restriction = node.restriction
        if node.name is None or restriction is None or node.list is not None or node.union:
            raise SchemaError(f"{self.source}: {where}: only named restrictions are supported")
        if restriction.base is None:
            raise SchemaError(f"{self.source}: {where}: restriction without a base")
        base = self.type_ref(restriction.base, restriction.ns_map, where)
        values = tuple(
            EnumValue(
                name=enum.value,
                id=_first(self.bdem_id(enum.index, where), position),
                bdem_id=self.bdem_id(enum.index, where),
                doc=enum.display_help,
            )
            for position, enum in enumerate(sorted(restriction.enumerations, key=_index))
        )
        preserve = "1" in (
            self.bdem.get(node.index, {}).get("preserveEnumOrder"),
            self.bdem.get(restriction.index, {}).get("preserveEnumOrder"),
        )
        return SimpleType(
            name=node.name,
            base=base,
            values=values,
            restrictions=_restrictions(restriction),
            doc=node.display_help,
            preserve_enum_order=preserve,
        )

    # -- complex types ---------------------------------------------------------------------------

    def complex_type(self, node: xsd.ComplexType) -> ComplexType:
        where = f"complexType {node.name}"
        if node.name is None:
            raise SchemaError(f"{self.source}: anonymous top-level complexType")
        for unsupported in ("simple_content", "complex_content", "group", "all", "open_content"):
            if getattr(node, unsupported) is not None:
                raise SchemaError(f"{self.source}: {where}: {unsupported} is not supported")
        if node.attributes or node.attribute_groups or node.any_attribute is not None:
            raise SchemaError(f"{self.source}: {where}: attributes are not supported")
        if node.choice is not None:
            self.check_occurs_once(node.choice, where)
            members = self.choice_elements(node.choice, where, choice_id=None)
            return ComplexType(node.name, "choice", tuple(members), node.display_help)
        members_: list[Member] = []
        if node.sequence is not None:
            self.check_occurs_once(node.sequence, where)
            members_ = self.sequence_members(node.sequence, where)
        return ComplexType(node.name, "sequence", tuple(members_), node.display_help)

    def sequence_members(self, node: xsd.Sequence, where: str) -> list[Member]:
        if node.groups or node.any or node.sequences:
            raise SchemaError(f"{self.source}: {where}: only elements and choices in a sequence")
        children: list[Any] = sorted([*node.elements, *node.choices], key=_index)
        members: list[Member] = []
        for position, child in enumerate(children):
            if isinstance(child, xsd.Choice):
                members.append(
                    AnonymousChoice(
                        id=position,
                        elements=tuple(self.choice_elements(child, where, choice_id=position)),
                        min_occurs=child.min_occurs,
                        max_occurs=_max_occurs(child.max_occurs),
                        doc=child.display_help,
                    )
                )
            else:
                members.append(self.element(child, position, where, None))
        return members

    def choice_elements(self, node: xsd.Choice, where: str, choice_id: int | None) -> list[Element]:
        if node.groups or node.any or node.sequences or node.choices:
            raise SchemaError(f"{self.source}: {where}: only elements in a choice")
        return [
            self.element(child, position, where, choice_id)
            for position, child in enumerate(sorted(node.elements, key=_index))
        ]

    def element(self, node: xsd.Element, position: int, where: str, choice: int | None) -> Element:
        if node.name is None or node.ref is not None:
            raise SchemaError(f"{self.source}: {where}: element references are not supported")
        here = f"{where}.{node.name}"
        if node.type is None:
            raise SchemaError(f"{self.source}: {here}: anonymous element types are not supported")
        return Element(
            name=node.name,
            type=self.type_ref(node.type, node.ns_map, here),
            id=_first(self.bdem_id(node.index, here), position),
            min_occurs=node.min_occurs,
            max_occurs=_max_occurs(node.max_occurs),
            default=node.default if node.default is not None else node.fixed,
            bdem_id=self.bdem_id(node.index, here),
            doc=node.display_help,
            choice=choice,
        )

    # -- helpers ---------------------------------------------------------------------------------

    def type_ref(self, qname: str, ns_map: Mapping[Any, str], where: str) -> TypeRef:
        prefix, _, local = qname.rpartition(":")
        namespace = ns_map.get(prefix or None)
        if namespace == XSD_NS and local in BUILTIN_KINDS:
            return TypeRef(local, builtin=True)
        if local in self.names:
            # Also covers a schema type written with the XSD prefix (mqbcmd does this).
            return TypeRef(local, builtin=False)
        if local in BUILTIN_KINDS:
            # ...and a built-in written with the schema's own prefix (mqbcmd's tns:unsignedLong).
            return TypeRef(local, builtin=True)
        raise SchemaError(f"{self.source}: {where}: unknown type {qname!r}")

    def bdem_id(self, index: int, where: str) -> int | None:
        """The node's ``bdem:id``, if it has one."""
        raw = self.bdem.get(index, {}).get("id")
        if raw is None:
            return None
        try:
            return int(raw)
        except ValueError as exc:
            raise SchemaError(f"{self.source}: {where}: bdem:id={raw!r} is not an integer") from exc

    def check_occurs_once(self, node: xsd.Sequence | xsd.Choice, where: str) -> None:
        if node.min_occurs != 1 or _max_occurs(node.max_occurs) != 1:
            raise SchemaError(f"{self.source}: {where}: repeated top-level model group")


def _first(value: int | None, fallback: int) -> int:
    return fallback if value is None else value


def _index(node: Any) -> int:
    return int(node.index)


def _max_occurs(raw: object) -> int | None:
    if isinstance(raw, int):
        return None if raw >= sys.maxsize else raw  # xsdata stores 'unbounded' as sys.maxsize
    if raw == "unbounded":
        return None
    return int(str(raw))


def _restrictions(node: xsd.Restriction) -> Restrictions:
    def facet(name: str) -> str | None:
        value = getattr(node, name)
        return None if value is None else str(value.value)

    return Restrictions(
        min_inclusive=facet("min_inclusive"),
        max_inclusive=facet("max_inclusive"),
        min_exclusive=facet("min_exclusive"),
        max_exclusive=facet("max_exclusive"),
        length=facet("length"),
        min_length=facet("min_length"),
        max_length=facet("max_length"),
        pattern="|".join(p.value for p in node.patterns) or None,
        total_digits=facet("total_digits"),
        fraction_digits=facet("fraction_digits"),
    )
