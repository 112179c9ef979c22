"""No module of ``pybmq`` reaches into a private name of anything but itself, checked with ``ast``.

The shells, compat and Spark drive the sans-I/O engine through its public interface only; a
private name (one leading underscore) is an implementation detail of the object (or module) that
has it. The rule: ``x._name`` is flagged unless ``x`` is ``self`` or ``cls`` of the method it is
used in (the first parameter of the enclosing method, or of the method a nested function or
lambda sits in) or ``super()`` — whoever defines ``_name``, in whichever file. Reaching a
sibling's private through one's own (``self._table._lifecycle``), a class's private through its
name (``Queue._limit``), a module's through the module (``render._cache``) or another instance's
(``other._items``) is flagged; so is ``from m import _name``.
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
    # FastStream: a subscriber's broker configuration (the producer a dead letter is published
    # with), which FastStream keeps on each subscriber and publisher under this name only.
    ("faststream/subscriber.py", "_outer_config"),
}


# The public API of named tuples (underscored so that it cannot clash with a field's name).
NAMEDTUPLE_API = {"_fields", "_field_defaults", "_asdict", "_replace", "_make"}


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _own_receivers(tree: ast.Module) -> set[int]:
    """ids of the ``self``/``cls`` Name nodes that are the first parameter of the method they
    are used in (nested functions and lambdas see the method's)."""
    own: set[int] = set()

    def visit(node: ast.AST, receiver: str | None, in_class: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner = receiver
                if in_class:  # a method: its first parameter is its receiver
                    args = child.args.posonlyargs + child.args.args
                    first = args[0].arg if args else None
                    inner = first if first in ("self", "cls") else None
                elif receiver is not None and any(
                    a.arg == receiver
                    for a in child.args.posonlyargs + child.args.args + child.args.kwonlyargs
                ):
                    inner = None  # a nested function that rebinds the name
                visit(child, inner, False)
            elif isinstance(child, ast.ClassDef):
                visit(child, None, True)
            elif isinstance(child, ast.Lambda):
                rebinds = any(a.arg == receiver for a in child.args.args)
                visit(child, None if rebinds else receiver, False)
            else:
                if receiver is not None and isinstance(child, ast.Name) and child.id == receiver:
                    own.add(id(child))
                visit(child, receiver, in_class and isinstance(child, ast.ClassDef))

    visit(tree, None, False)
    return own


def _is_super(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
    )


def private_accesses(path: Path, root: Path = RUNTIME) -> Iterator[str]:
    """``file:line name`` for every private name reached on anything but ``self``/``cls``."""
    relative = path.relative_to(root).as_posix()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    own = _own_receivers(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            name = node.attr
            if not _is_private(name) or id(node.value) in own or _is_super(node.value):
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
        ("class A:\n    def _x(self): ...\ndef f(a):\n    return a._x()\n", ["m.py:4 ._x"]),
        ("class A:\n    __slots__ = ('_x',)\ndef f(a):\n    return a._x\n", ["m.py:4 ._x"]),
        ("_TABLE = {}\ndef f(m):\n    return m._TABLE\n", ["m.py:3 ._TABLE"]),
        ("def f(x):\n    return x.__class__\n", []),
        # self/cls only as a method's own receiver, also inside its lambdas and closures
        ("class A:\n    @classmethod\n    def f(cls):\n        return cls._x\n", []),
        ("class A:\n    def f(self):\n        return lambda: self._x\n", []),
        ("def f(self):\n    return self._x\n", ["m.py:2 ._x"]),
        ("class A:\n    def f(self, other):\n        return other._x\n", ["m.py:3 ._x"]),
        ("class A:\n    def f(me):\n        return me._x\n", ["m.py:3 ._x"]),
        ("class A:\n    def f(self):\n        self = B()\n        return self._x\n", []),
    ],
)
def test_the_check_itself(tmp_path: Path, source: str, expected: list[str]) -> None:
    """The rule flags what it should and only that (a check that cannot fail checks nothing)."""
    path = tmp_path / "m.py"
    path.write_text(source, encoding="utf-8")
    assert list(private_accesses(path, tmp_path)) == expected


def test_a_sibling_reached_through_ones_own_attribute_is_refused(tmp_path: Path) -> None:
    """The evasion that passed the first rule: a part reaching a sibling's private through its
    own attribute (``self._table._lifecycle``), in a file that itself defines a ``_lifecycle``.
    Planted in a copy of the queue part, the check must fail."""
    source = (RUNTIME / "client" / "queues.py").read_text(encoding="utf-8")
    assert "self._lifecycle" in source  # the file has a _lifecycle of its own
    planted = source + (
        "\n\ndef _planted(control: QueueControl) -> object:\n"
        "    return control._table\n"
        "\n\nclass Planted(QueueControl):\n"
        "    def peek(self) -> object:\n"
        "        return self._table._lifecycle\n"
    )
    (tmp_path / "client").mkdir()
    path = tmp_path / "client" / "queues.py"
    path.write_text(planted, encoding="utf-8")
    found = list(private_accesses(path, tmp_path))
    lines = planted.count("\n")
    assert found == [
        f"client/queues.py:{lines - 5} ._table",
        f"client/queues.py:{lines} ._lifecycle",
    ]
