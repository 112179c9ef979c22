"""No module of ``pybmq`` reaches into another module's private names, checked with ``ast``.

The shells, compat and Spark drive the sans-I/O engine through its public interface only; a
private name (one leading underscore) is an implementation detail of the module that defines it.
The check approximates that: ``x._name`` is flagged unless ``x`` is ``self``, ``cls`` or
``super()``, or ``_name`` is defined in the same module (a def, a class, a class attribute, a
``self._name = ...`` assignment, a ``__slots__`` entry or a module-level name); so is
``from m import _name`` from another module.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.paths import REPO_ROOT

RUNTIME = REPO_ROOT / "runtime"

# Files not checked (none: every module of runtime/ keeps to its own private names).
TEMPORARY_SKIP: tuple[str, ...] = ()

# Private names of other libraries that have no public equivalent, each with its reason.
FOREIGN_PRIVATE = {
    # pyspark: the only way to tell an executor (where SparkFiles has a root) from the driver.
    ("spark/reruns.py", "_is_running_on_worker"),
    ("spark/reruns.py", "_root_directory"),
    # FastStream: the serializer a broker's FastDepends config resolves to (its default when
    # unset); FastStream's own brokers hand it to their producers the same way.
    ("faststream/broker.py", "_serializer"),
    ("faststream/testing.py", "_serializer"),
}


# The public API of named tuples (underscored so that it cannot clash with a field's name).
NAMEDTUPLE_API = {"_fields", "_field_defaults", "_asdict", "_replace", "_make"}


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _is_own(node: ast.expr) -> bool:
    """``self``, ``cls`` or ``super()``: the object whose own privates these are."""
    if isinstance(node, ast.Name):
        return node.id in ("self", "cls")
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
    )


def _target_names(target: ast.expr) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, ast.Attribute) and _is_own(target.value):
        yield target.attr
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _target_names(element)


def defined_names(tree: ast.Module) -> set[str]:
    """Every name the module itself defines (at any depth: defs, classes, assignments)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                names.update(_target_names(target))
            if any(isinstance(t, ast.Name) and t.id == "__slots__" for t in node.targets):
                names.update(
                    c.value
                    for c in ast.walk(node.value)
                    if isinstance(c, ast.Constant) and isinstance(c.value, str)
                )
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            names.update(_target_names(node.target))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names if a.asname)
    return names


def private_accesses(path: Path, root: Path = RUNTIME) -> Iterator[str]:
    """``file:line name`` for every access to a private name another module defines."""
    relative = path.relative_to(root).as_posix()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    own = defined_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            name = node.attr
            if not _is_private(name) or _is_own(node.value) or name in own:
                continue
            if name in NAMEDTUPLE_API:
                continue
            if (relative, name) in FOREIGN_PRIVATE:
                continue
            yield f"{relative}:{node.lineno} .{name}"
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if _is_private(alias.name):
                    yield f"{relative}:{node.lineno} import {alias.name}"


def _skipped(relative: str) -> bool:
    return any(
        relative == s or (s.endswith("/") and relative.startswith(s)) for s in TEMPORARY_SKIP
    )


def _files(*, skipped: bool) -> list[Path]:
    return sorted(
        path
        for path in RUNTIME.rglob("*.py")
        if _skipped(path.relative_to(RUNTIME).as_posix()) == skipped
    )


def test_no_access_to_another_modules_private_names() -> None:
    found = [access for path in _files(skipped=False) for access in private_accesses(path)]
    assert found == []


def test_skip_list_is_current() -> None:
    """Every skipped entry still names a file (a stale entry would hide nothing and mislead)."""
    for entry in TEMPORARY_SKIP:
        assert (RUNTIME / entry).exists(), f"{entry} is skipped but does not exist"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("def f(x):\n    return x._hidden\n", ["m.py:2 ._hidden"]),
        ("def f(x):\n    x._hidden = 1\n", ["m.py:2 ._hidden"]),
        ("from pybmq.client.core import _helper\n", ["m.py:1 import _helper"]),
        ("class A:\n    def f(self):\n        return self._x\n", []),
        ("class A:\n    def f(self):\n        return super()._x()\n", []),
        ("class A:\n    def _x(self): ...\ndef f(a):\n    return a._x()\n", []),
        ("class A:\n    __slots__ = ('_x',)\ndef f(a):\n    return a._x\n", []),
        ("_TABLE = {}\ndef f(m):\n    return m._TABLE\n", []),
        ("def f(x):\n    return x.__class__\n", []),
    ],
)
def test_the_check_itself(tmp_path: Path, source: str, expected: list[str]) -> None:
    """The rule flags what it should and only that (a check that cannot fail checks nothing)."""
    path = tmp_path / "m.py"
    path.write_text(source, encoding="utf-8")
    assert list(private_accesses(path, tmp_path)) == expected
