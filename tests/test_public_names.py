"""Every module of ``pybmq`` declares its public names in ``__all__``, checked with ``ast``.

A module's public names are its top-level definitions without a leading underscore (functions,
classes, constants, type aliases; not type variables, loggers nor pytest's hooks); each must be
in ``__all__``, and every name ``__all__`` lists must be bound in the module (defined or
imported: a re-export). The API
reference is rendered from these lists (``docs/reference/``), so a name left out of ``__all__`` is
left out of the documentation too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.helpers.paths import REPO_ROOT

FOLDERS = (REPO_ROOT / "runtime", REPO_ROOT / "codegen", REPO_ROOT / "generated")
FILES = sorted(path for folder in FOLDERS for path in folder.rglob("*.py"))


def _is_type_variable_or_logger(value: ast.expr | None) -> bool:
    """``TypeVar(...)``, ``ParamSpec(...)`` or ``logging.getLogger(...)``: not API."""
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
    return name in ("TypeVar", "ParamSpec", "getLogger")


def declared_and_defined(path: Path) -> tuple[list[str] | None, set[str], set[str]]:
    """(``__all__`` or None, public names the module defines, every name it binds)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    literals = {  # module-level tuples and lists of names, for ``__all__ = [*NAMES, ...]``
        target.id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, (ast.Tuple, ast.List, ast.Dict))
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    declared: list[str] | None = None
    defined: set[str] = set()
    bound: set[str] = set()
    deleted: set[str] = set()
    for node in _top_level(tree.body):
        names: list[str] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [node.name]
            if names[0].startswith("pytest_"):  # a hook pytest calls, not API
                bound.update(names)
                continue
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                elements = target.elts if isinstance(target, ast.Tuple) else [target]
                names += [e.id for e in elements if isinstance(e, ast.Name)]
            if names == ["__all__"] and node.value is not None:
                declared = _names(node.value, literals)
                continue
            if _is_type_variable_or_logger(node.value):
                bound.update(names)
                continue
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Delete):
            deleted.update(t.id for t in node.targets if isinstance(t, ast.Name))
        if isinstance(node, ast.FunctionDef) and node.name == "__getattr__":
            bound.update(declared or [])  # a lazy module: its __getattr__ binds the rest
            bound.add("*lazy*")
        bound.update(names)
        defined.update(n for n in names if not n.startswith("_"))
    if "*lazy*" in bound and declared is not None:
        bound.update(declared)
    bound.discard("*lazy*")
    return declared, defined - deleted, bound - deleted


def _top_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """The module's statements, those of a top-level ``try`` (an optional import) included."""
    out: list[ast.stmt] = []
    for node in body:
        if isinstance(node, ast.Try):
            out += _top_level(node.body)
        else:
            out.append(node)
    return out


def _names(value: ast.expr, literals: dict[str, ast.expr]) -> list[str]:
    """The names of an ``__all__`` value: strings, and ``*NAMES`` of a module-level literal
    (a dict: its keys)."""
    names: list[str] = []
    for element in value.elts if isinstance(value, (ast.List, ast.Tuple)) else []:
        if isinstance(element, ast.Starred) and isinstance(element.value, ast.Name):
            literal = literals[element.value.id]
            keys = literal.keys if isinstance(literal, ast.Dict) else literal.elts  # type: ignore[attr-defined]
            names += [ast.literal_eval(k) for k in keys if k is not None]
        else:
            names.append(ast.literal_eval(element))
    return names


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.relative_to(REPO_ROOT).as_posix())
def test_the_module_declares_its_public_names(path: Path) -> None:
    declared, defined, bound = declared_and_defined(path)
    assert declared is not None, "no __all__"
    assert not defined - set(
        declared
    ), f"public but not in __all__: {sorted(defined - set(declared))}"
    assert (
        not set(declared) - bound
    ), f"in __all__ but not in the module: {sorted(set(declared) - bound)}"
    assert len(declared) == len(set(declared)), "a name twice in __all__"


def test_the_check_itself(tmp_path: Path) -> None:
    """It refuses a public name left out, a name that is not there, and no __all__ at all."""
    path = tmp_path / "m.py"
    path.write_text('import os\nT = TypeVar("T")\n__all__ = ["f", "os"]\ndef f(): ...\nX = 1\n')
    assert declared_and_defined(path) == (["f", "os"], {"f", "X"}, {"os", "T", "f", "X"})
    path.write_text("def f(): ...\n")
    assert declared_and_defined(path)[0] is None
