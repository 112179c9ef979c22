"""XSD → Python bindings: dataclasses, a JSON codec and a BER codec, all from one ``Schema``.

Pipeline (xsdata style): ``load_schema`` → checks on the model → jinja2 templates
(``templates/types.py.j2``, ``json_codec.py.j2``, ``ber_codec.py.j2``) → black. Templates hold the
layout; the filters below hold naming and type mapping. Nothing here is specific to
bmqp_ctrlmsg: ``generate_bindings(xsd, module)`` works for any schema the loader accepts.
"""

from __future__ import annotations

import base64
import keyword
from pathlib import Path

from pybmq.codec.ber import identifier
from pybmq.codegen.artifact import Artifact
from pybmq.codegen.filters import snake
from pybmq.codegen.model import (
    BUILTIN_KINDS,
    INTEGER_RANGES,
    ComplexType,
    Element,
    Schema,
    SimpleType,
    constructible,
)
from pybmq.codegen.render import environment, format_python, model_filters
from pybmq.codegen.xsd_loader import load_schema
from pybmq.errors import SchemaError

__all__ = [
    "BINDING_FILTERS",
    "SECRET_ELEMENTS",
    "Bindings",
    "generate_bindings",
    "generate_ctrlmsg",
]

# How BER tags a value inside an array (balber's universal tag numbers: BOOLEAN 1, INTEGER 2,
# OCTET STRING 4, ENUMERATED 10, UTF8String 12).
# REAL 9 for doubles; date/time values travel as their ISO 8601 text (balber's default), which
# an array tags as VisibleString 26.
_UNIVERSAL_TAGS = {
    "int": 2,
    "bool": 1,
    "bytes": 4,
    "enum": 10,
    "str": 12,
    "float": 9,
    "temporal": 26,
}
# Credential material: generated dataclasses keep it out of their repr (and so out of logs).
SECRET_ELEMENTS = {("AuthenticationRequest", "data")}
_CODEC_KINDS = {"int", "bool", "str", "bytes", "enum", "sequence", "choice", "float", "temporal"}


class Bindings:
    """The filters for one schema: each maps a model element to a piece of Python."""

    def __init__(self, schema: Schema, module: str, source: str) -> None:
        self.schema = schema
        self.module = module
        self.source = source
        self._check()

    # -- type mapping ----------------------------------------------------------------------------

    def resolve(self, element: Element) -> ComplexType | SimpleType | None:
        return None if element.type.builtin else self.schema.type(element.type.name)

    def builtin_of(self, element: Element) -> str:
        """The XSD built-in behind an element (through a non-enum simple type)."""
        target = self.resolve(element)
        if isinstance(target, SimpleType):
            return target.base.name
        return element.type.name

    def kind(self, element: Element) -> str:
        """int | bool | str | bytes | float | temporal | enum | sequence | choice."""
        target = self.resolve(element)
        if isinstance(target, ComplexType):
            return target.kind
        if isinstance(target, SimpleType) and target.is_enum:
            return "enum"
        kind = BUILTIN_KINDS[self.builtin_of(element)]
        return {"boolean": "bool", "string": "str"}.get(kind, kind)

    def value_type(self, element: Element) -> str:
        kind = self.kind(element)
        if kind in ("enum", "sequence", "choice"):
            return element.type.name
        return {"int": "int", "bool": "bool", "str": "str", "bytes": "bytes", "float": "float"}.get(
            kind, "str"
        )

    def annotation(self, element: Element, owner: ComplexType) -> str:
        base = self.value_type(element)
        if element.is_array:
            return f"list[{base}]"
        if self.nullable(element, owner):
            return f"{base} | None"
        return base

    @staticmethod
    def nullable(element: Element, owner: ComplexType) -> bool:
        """Held as ``X | None``: optional elements and every choice selection."""
        return element.is_optional or element.choice is not None or owner.kind == "choice"

    def bounds(self, element: Element) -> tuple[int, int]:
        builtin = self.builtin_of(element)
        return INTEGER_RANGES.get(builtin, (-(2**63), 2**64 - 1))

    # -- defaults --------------------------------------------------------------------------------

    def constructible(self, type_name: str) -> bool:
        """Can ``T()`` be built with no arguments (no mandatory choice inside)?"""
        return constructible(self.schema, type_name)

    def default_value(self, element: Element) -> str | None:
        """The Python expression of the element's default value; None if it has none."""
        kind = self.kind(element)
        raw = element.default
        if raw is not None:
            return self.literal(element, raw)
        if kind == "int":
            return "0"
        if kind == "bool":
            return "False"
        if kind in ("str", "temporal"):
            return '""'
        if kind == "bytes":
            return 'b""'
        if kind == "float":
            return "0.0"
        if kind == "enum":
            target = self.resolve(element)
            assert isinstance(target, SimpleType)
            # BDE value-initialises an enum attribute: the enumerator with id 0, else the first.
            zero = [v for v in target.values if v.id == 0]
            return f"{target.name}.{(zero or list(target.values))[0].name}"
        if kind == "sequence" and self.constructible(element.type.name):
            return f"{element.type.name}()"
        return None

    def literal(self, element: Element, raw: str) -> str:
        kind = self.kind(element)
        where = f"{self.source}: default of {element.name}"
        try:
            if kind == "int":
                return str(int(raw.strip()))
            if kind == "bool":
                return {"true": "True", "1": "True", "false": "False", "0": "False"}[raw.strip()]
            if kind == "float":
                return repr(float(raw))
            if kind == "enum":
                target = self.resolve(element)
                assert isinstance(target, SimpleType)
                return f"{target.name}.{target.value(raw.strip()).name}"
            if kind == "bytes":
                if self.builtin_of(element) == "hexBinary":
                    return repr(bytes.fromhex(raw.strip()))
                return repr(base64.b64decode(raw.strip()))
        except (ValueError, KeyError) as exc:
            raise SchemaError(f"{where}: {raw!r} is not a valid value ({exc})") from exc
        return repr(raw)

    def default_expr(self, element: Element, owner: ComplexType) -> str:
        """What follows ``=`` in the dataclass field; "" for a mandatory keyword argument."""
        if (owner.name, element.name) in SECRET_ELEMENTS:
            if not self.nullable(element, owner):
                raise SchemaError(f"{owner.name}.{element.name}: a secret must be optional")
            return "field(default=None, repr=False)"
        if element.is_array:
            return "field(default_factory=list)"
        if self.nullable(element, owner):
            return "None"
        value = self.default_value(element)
        if value is None:
            return ""
        if value.endswith("()"):  # a lambda: the class may be defined further down the module
            return f"field(default_factory=lambda: {value})"
        return value

    # -- BER -------------------------------------------------------------------------------------

    def ctx_tag(self, number: int, constructed: bool) -> str:
        return repr(identifier(0x80, constructed, number))

    def tag(self, element: Element) -> str:
        """The element's context tag; arrays and complex values are constructed."""
        constructed = element.is_array or self.kind(element) in ("sequence", "choice")
        return self.ctx_tag(element.id, constructed)

    def universal_tag(self, element: Element) -> str:
        kind = self.kind(element)
        if kind in ("sequence", "choice"):
            return repr(identifier(0x00, True, 16))
        return repr(identifier(0x00, False, _UNIVERSAL_TAGS[kind]))

    def ident_bits(self, element: Element, universal: bool = False) -> str:
        """Class+form bits the decoder expects for the element (or for an item of its array)."""
        constructed = self.kind(element) in ("sequence", "choice")
        return hex((0x00 if universal else 0x80) | (0x20 if constructed else 0))

    # -- naming and text ---------------------------------------------------------------------------

    def docstring(self, text: str | None, indent: int = 4, fallback: str = "") -> str:
        body = (text or fallback).strip().replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
        if not body:
            return ""
        if body.endswith('"'):  # would merge with the closing quotes (mqbcmd has one)
            body = body[:-1] + '\\"'
        pad = " " * indent
        lines = body.splitlines()
        if len(lines) == 1:
            return f'"""{lines[0]}"""'
        inner = "\n".join((pad + line).rstrip() for line in lines[1:])
        return f'"""{lines[0]}\n{inner}\n{pad}"""'

    def choice_required(self, complex_type: ComplexType) -> bool:
        if complex_type.kind == "choice":
            return True
        return any(c.min_occurs > 0 for c in complex_type.anonymous_choices)

    @staticmethod
    def kind_of_builtin(name: str) -> str:
        kind = BUILTIN_KINDS[name]
        return {"boolean": "bool", "string": "str"}.get(kind, kind)

    def selection_fields(self, complex_type: ComplexType) -> list[Element]:
        if complex_type.kind == "choice":
            return list(complex_type.elements)
        return [e for e in complex_type.elements if e.choice is not None]

    # -- checks ----------------------------------------------------------------------------------

    def _check(self) -> None:
        for complex_type in self.schema.complex_types:
            names = [snake(e.name) for e in complex_type.elements]
            duplicates = {n for n in names if names.count(n) > 1}
            if duplicates:
                raise SchemaError(f"{complex_type.name}: field names collide: {sorted(duplicates)}")
            if "selection" in names:
                raise SchemaError(f"{complex_type.name}: an element is called 'selection'")
            if len(complex_type.anonymous_choices) > 1:
                raise SchemaError(f"{complex_type.name}: more than one anonymous choice")
            for choice in complex_type.anonymous_choices:
                if choice.max_occurs != 1:
                    raise SchemaError(f"{complex_type.name}: repeated anonymous choice")
            for element in complex_type.elements:
                kind = self.kind(element)
                if kind not in _CODEC_KINDS:
                    raise SchemaError(
                        f"{complex_type.name}.{element.name}: xs:{self.builtin_of(element)} "
                        "is not supported by the generated codecs yet"
                    )
                selection = element.choice is not None or complex_type.kind == "choice"
                if selection and element.is_array:
                    raise SchemaError(f"{complex_type.name}.{element.name}: array in a choice")
                self.default_expr(element, complex_type)  # validates defaults
        for simple_type in self.schema.simple_types:
            for value in simple_type.values:
                if not value.name.isidentifier() or keyword.iskeyword(value.name):
                    raise SchemaError(f"{simple_type.name}: {value.name!r} is not a Python name")


# What the binding templates call on their model, as filters (``{{ e | kind }}``).
BINDING_FILTERS = (
    "kind",
    "annotation",
    "default_expr",
    "default_value",
    "bounds",
    "tag",
    "ctx_tag",
    "universal_tag",
    "ident_bits",
    "docstring",
    "value_type",
    "nullable",
)


def generate_bindings(
    xsd_path: Path, module: str, package: str = "pybmq.generated"
) -> list[Artifact]:
    """Render ``<module>.py`` (types), ``<module>_json.py`` and ``<module>_ber.py`` from an XSD.

    ``package`` is where the three modules will be imported from (the codecs import the types
    from there); "" makes them top-level modules, for a user's own output folder.
    """
    schema = load_schema(xsd_path)
    bindings = Bindings(schema, module, xsd_path.name)
    model_filters(BINDING_FILTERS)
    env = environment()
    context = {
        "model": bindings,
        "b": bindings,
        "schema": bindings.schema,
        "module": bindings.module,
        "types_module": f"{package}.{module}" if package else module,
        "source": xsd_path.name,
    }
    out = []
    templates = (("types.py.j2", ""), ("json_codec.py.j2", "_json"), ("ber_codec.py.j2", "_ber"))
    for template, suffix in templates:
        text = env.get_template(template).render(context)
        out.append(Artifact(f"{module}{suffix}.py", format_python(text, template)))
    return out


def generate_ctrlmsg(schema_dir: Path) -> list[Artifact]:
    """The control messages: schema/bmqp_ctrlmsg.xsd → pybmq.generated.bmqp_ctrlmsg[_json|_ber]."""
    return generate_bindings(schema_dir / "bmqp_ctrlmsg.xsd", "bmqp_ctrlmsg")
