"""Hypothesis strategies for every generated control-message type, derived from the XSD model.

Nothing here is written per message: the strategies walk ``pybmq.codegen.model`` exactly as the
generator does, so a new element or type in the schema is covered without touching the tests.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from hypothesis import strategies as st
from pybmq.codegen.bindings import Bindings, snake
from pybmq.codegen.model import AnonymousChoice, ComplexType, Element, Schema
from pybmq.codegen.xsd_loader import load_schema

from tests.helpers.paths import SCHEMA_DIR

MAX_LIST = 2


class ModelStrategies:
    def __init__(self, schema: Schema, module: ModuleType) -> None:
        self.schema = schema
        self.module = module
        self.bindings = Bindings(schema, module.__name__.rsplit(".", 1)[-1], "test")
        self._cache: dict[str, st.SearchStrategy[Any]] = {}

    def for_type(self, name: str) -> st.SearchStrategy[Any]:
        if name not in self._cache:
            self._cache[name] = st.deferred(lambda: self._build(name))
        return self._cache[name]

    def _build(self, name: str) -> st.SearchStrategy[Any]:
        complex_type = self.schema.type(name)
        assert isinstance(complex_type, ComplexType)
        cls = getattr(self.module, name)
        if complex_type.kind == "choice":
            return self._one_of(list(complex_type.elements)).map(lambda kw: cls(**kw))
        fixed: dict[str, st.SearchStrategy[Any]] = {}
        choice: st.SearchStrategy[dict[str, Any]] = st.just({})
        for member in complex_type.members:
            if isinstance(member, AnonymousChoice):
                picked = self._one_of(list(member.elements))
                choice = picked if member.min_occurs else st.just({}) | picked
                continue
            fixed[snake(member.name)] = self._element(member)
        return st.tuples(st.fixed_dictionaries(fixed), choice).map(
            lambda parts: cls(**parts[0], **parts[1])
        )

    def _one_of(self, elements: list[Element]) -> st.SearchStrategy[dict[str, Any]]:
        return st.sampled_from(elements).flatmap(
            lambda e: self._value(e).map(lambda v: {snake(e.name): v})
        )

    def _element(self, element: Element) -> st.SearchStrategy[Any]:
        value = self._value(element)
        if element.is_array:
            return st.lists(value, max_size=MAX_LIST)
        if element.is_optional:
            return st.none() | value
        return value

    def _value(self, element: Element) -> st.SearchStrategy[Any]:
        kind = self.bindings.kind(element)
        if kind == "int":
            lo, hi = self.bindings.bounds(element)
            return st.integers(lo, hi)
        if kind == "bool":
            return st.booleans()
        if kind == "str":
            return st.text(max_size=12)
        if kind == "bytes":
            return st.binary(max_size=12)
        if kind == "enum":
            return st.sampled_from(list(getattr(self.module, element.type.name)))
        return self.for_type(element.type.name)


def ctrlmsg_strategies() -> ModelStrategies:
    from pybmq.generated import bmqp_ctrlmsg

    xsd = SCHEMA_DIR / "bmqp_ctrlmsg.xsd"
    return ModelStrategies(load_schema(xsd), bmqp_ctrlmsg)
