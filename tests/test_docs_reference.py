"""The API reference page lists every public name of the documented modules, each with a docstring.

``docs/reference/api.md`` holds one mkdocstrings directive (``::: module.name``) per name in the
``__all__`` of ``pybmq``, ``pybmq.compat``, ``pybmq.spark``, ``pybmq.faststream`` and
``pybmq.testing``; ``make docs``
fails on a directive that names nothing. Here: no name is missing from the page, and every public
class, function and method (and property) defined by those names says what it is for.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from typing import Any

import pytest

from tests.helpers.paths import REPO_ROOT

PAGE = REPO_ROOT / "docs" / "reference" / "api.md"
MODULES = ("pybmq", "pybmq.compat", "pybmq.spark", "pybmq.faststream", "pybmq.testing")


def public_names(module: str) -> list[str]:
    if module in ("pybmq.spark", "pybmq.faststream"):  # read without importing their extras
        package = module.rsplit(".", 1)[1]
        tree = ast.parse((REPO_ROOT / "runtime" / package / "__init__.py").read_text())
        for node in tree.body:
            if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "__all__":
                return [n for n in ast.literal_eval(node.value) if n != "__version__"]
        raise AssertionError(f"{module} has no __all__")
    return [n for n in importlib.import_module(module).__all__ if n != "__version__"]


def documented() -> set[str]:
    return set(re.findall(r"^::: ([\w.]+)$", PAGE.read_text(encoding="utf-8"), re.M))


def places(module: str, name: str) -> set[str]:
    """Where the page may document ``module.name``: there, or where it is defined (a package
    that imports its names lazily, as ``pybmq.testing`` does, is documented at the source)."""
    if module == "pybmq.spark":
        return {f"{module}.{name}"}
    obj = getattr(importlib.import_module(module), name)
    obj = getattr(obj, "__wrapped__", obj)  # a pytest fixture: the function it wraps
    home = getattr(obj, "__module__", None)
    return {f"{module}.{name}", *([f"{home}.{name}"] if home else [])}


@pytest.mark.parametrize("module", MODULES)
def test_every_public_name_is_on_the_reference_page(module: str) -> None:
    page = documented()
    missing = [n for n in public_names(module) if not places(module, n) & page]
    assert not missing, f"add to {PAGE.name}: " + ", ".join(f"::: {module}.{n}" for n in missing)


def undocumented(name: str, obj: Any) -> list[str]:
    obj = getattr(obj, "__wrapped__", obj)  # a pytest fixture: the function it wraps
    if not (inspect.isclass(obj) or inspect.isfunction(obj) or inspect.ismodule(obj)):
        return []  # a type alias: its docstring is read from the source by the docs build
    missing = [] if (obj.__doc__ or "").strip() else [name]
    if inspect.isclass(obj):
        for member, value in vars(obj).items():
            if member.startswith("_"):
                continue
            value = getattr(value, "__func__", value)  # classmethod / staticmethod
            if (inspect.isfunction(value) or isinstance(value, property)) and not (
                value.__doc__ or ""
            ).strip():
                missing.append(f"{name}.{member}")
    return missing


@pytest.mark.parametrize("module", MODULES)
def test_every_public_name_has_a_docstring(module: str) -> None:
    if module == "pybmq.spark":
        pytest.importorskip("pyspark")
    if module == "pybmq.faststream":
        pytest.importorskip("faststream")
    imported = importlib.import_module(module)
    missing = [m for n in public_names(module) for m in undocumented(n, getattr(imported, n))]
    assert not missing, f"{module}: no docstring on " + ", ".join(missing)


def test_the_reference_pages_are_made_from_the_modules_all() -> None:
    """api.md and modules.md are what ``make api-reference`` makes from every ``__all__``."""
    from pybmq.cli.apidocs import main

    assert main(["--check"]) == 0
