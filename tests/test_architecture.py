"""The layering of ``pybmq`` (docs/architecture.md), checked on the source with ``ast``.

Every import between pybmq's own modules must go from a layer to one it may use (never upward),
and the module graph must have no cycle. Imports under ``if TYPE_CHECKING:`` are annotations
only and do not count; imports inside functions do (they run).
"""

from __future__ import annotations

import ast
import enum
import functools
import importlib
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from tests.helpers.paths import REPO_ROOT

# Folder → import prefix, as pyproject's package-dir maps them.
ROOTS = {
    REPO_ROOT / "runtime": "pybmq",
    REPO_ROOT / "generated": "pybmq.generated",
    REPO_ROOT / "codegen": "pybmq.codegen",
}

# Layer of each module (the longest matching prefix wins), and the layers it may import.
LAYER_OF = {
    "pybmq._version": "base",
    "pybmq.errors": "base",
    "pybmq.uri": "base",
    "pybmq.loopthread": "base",
    "pybmq.statemachine": "base",
    "pybmq.printable": "base",
    "pybmq.codec": "codec",
    "pybmq.generated": "generated",
    "pybmq.codegen": "codegen",
    "pybmq.wire": "wire",
    "pybmq.client": "client",
    "pybmq.sim": "sim",
    "pybmq.compat": "compat",
    "pybmq.spark": "spark",
    "pybmq.faststream": "faststream",
    "pybmq.cli": "cli",
    "pybmq.demo": "app",
    "pybmq.testing": "app",
    "pybmq": "package",
}
MAY_IMPORT = {
    "base": {"base"},
    "codec": {"base", "codec"},
    "generated": {"base", "codec", "generated"},
    "codegen": {"base", "codec", "codegen"},
    "wire": {"base", "codec", "generated", "wire"},
    "client": {"base", "codec", "generated", "wire", "client"},
    "sim": {"base", "codec", "generated", "wire", "sim"},
    "compat": {"base", "generated", "wire", "client", "compat"},
    "spark": {"base", "generated", "wire", "client", "spark"},
    "faststream": {"base", "wire", "client", "sim", "faststream"},
    "cli": {"base", "codec", "generated", "wire", "client", "sim", "codegen", "app", "cli"},
    "app": {"base", "generated", "wire", "client", "sim", "app"},
    "package": {"base", "client"},
}


def layer(module: str) -> str:
    for prefix in sorted(LAYER_OF, key=len, reverse=True):
        if module == prefix or module.startswith(prefix + "."):
            return LAYER_OF[prefix]
    raise AssertionError(f"{module} is in no layer: add it to LAYER_OF")


def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for root, prefix in ROOTS.items():
        for path in root.rglob("*.py"):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([prefix, *parts])] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(module: str, path: Path, known: set[str]) -> Iterator[tuple[str, int]]:
    """(imported pybmq module, line) for every import that runs."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            skip.update(id(n) for child in node.body for n in ast.walk(child))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            # `from pybmq.x import y` may name a module y or a name in pybmq.x
            targets = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names
            ]
        for target in targets:
            if target == "pybmq" or target.startswith("pybmq."):
                while target not in known and "." in target:
                    target = target.rpartition(".")[0]
                if target in known and target != module:
                    yield target, node.lineno


GRAPH = {
    module: sorted(set(imports_of(module, path, set(modules()))))
    for module, path in modules().items()
}


def test_every_import_goes_down_the_layers() -> None:
    wrong = [
        f"{module}:{line} imports {target} ({layer(module)} → {layer(target)})"
        for module, targets in GRAPH.items()
        for target, line in targets
        if layer(target) not in MAY_IMPORT[layer(module)]
    ]
    assert wrong == []


def test_no_import_cycle() -> None:
    edges = {m: {t for t, _ in targets} for m, targets in GRAPH.items()}
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append([*path[path.index(nxt) :], nxt] if nxt in path else [node, nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for start in sorted(edges):
        if start not in state:
            visit(start, [start])
    assert cycles == []


@pytest.mark.parametrize("module", ["pybmq", "pybmq.cli.main"])
def test_light_imports_stay_light(module: str) -> None:
    """``import pybmq`` and the CLI's entry point pull in no code generator (black, jinja2,
    xsdata), so a client user needs none of them and ``pybmq --version`` starts fast."""
    import subprocess
    import sys

    code = (
        f"import sys, {module}; "
        "print(sorted(m for m in ('black', 'jinja2', 'xsdata', 'yaml') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_cli_help_imports_no_codegen() -> None:
    import subprocess
    import sys

    code = (
        "import sys, contextlib, io\n"
        "from pybmq.cli.main import build_parser\n"
        "build_parser()\n"
        "print(sorted(m for m in ('black', 'jinja2', 'xsdata', 'yaml', 'rich') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- every state change is a row of a transition table ----------------------------------------
#
# What is watched comes from the tables themselves: every module that imports the one table step
# (pybmq.statemachine.step) holds tables (state x input -> state); the attributes watched are
# those the code assigns from a step on one of them (directly, or through a function that returns
# one) or from a member of one of their state enums. Every assignment to such an attribute, in
# the packages that hold the tables, must be a step; the only other one allowed is a machine's
# initial state, a literal member, in an __init__.


@functools.cache
def table_modules(root: Path = REPO_ROOT / "runtime") -> dict[str, Path]:
    """Module name -> file of every module under ``root`` (the ``pybmq`` package) that imports
    ``step`` from pybmq.statemachine."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "pybmq.statemachine" not in text:
            continue
        for node in ast.parse(text).body:
            if (
                isinstance(node, ast.ImportFrom)
                and node.module == "pybmq.statemachine"
                and any(a.name == "step" for a in node.names)
            ):
                parts = list(path.relative_to(root).with_suffix("").parts)
                found[".".join(["pybmq", *parts])] = path
    return found


@functools.cache
def transition_tables() -> dict[str, Mapping[tuple[enum.Enum, enum.Enum], enum.Enum]]:
    """Every table of those modules: a mapping (state, input) -> state of enum members."""
    tables = {}
    for module in table_modules():
        for name, value in vars(importlib.import_module(module)).items():
            if (
                isinstance(value, Mapping)
                and value
                and all(
                    isinstance(key, tuple)
                    and len(key) == 2
                    and all(isinstance(k, enum.Enum) for k in key)
                    and isinstance(state, enum.Enum)
                    for key, state in value.items()
                )
            ):
                tables[name] = value
    return tables


@functools.cache
def state_enums() -> frozenset[str]:
    """Names of the enums whose members are the tables' states."""
    return {
        type(state).__name__ for table in transition_tables().values() for state in table.values()
    }


def _trees(folders: list[Path]) -> list[tuple[Path, ast.Module]]:
    return [
        (path, ast.parse(path.read_text(encoding="utf-8")))
        for folder in folders
        for path in sorted(folder.rglob("*.py"))
    ]


def _call_name(node: ast.expr) -> str | None:
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else None


def _steppers(trees: list[tuple[Path, ast.Module]], tables: set[str]) -> set[str]:
    """``step`` and every function that returns a step on one of ``tables``."""
    steppers = {"step"}
    for _, tree in trees:
        for function in ast.walk(tree):
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(function):
                    if (
                        isinstance(node, ast.Return)
                        and _call_name(node.value) == "step"
                        and any(
                            isinstance(arg, ast.Name) and arg.id in tables
                            for arg in node.value.args  # type: ignore[union-attr]
                        )
                    ):
                        steppers.add(function.name)
    return steppers


def _is_state_member(node: ast.expr, enums: frozenset[str]) -> bool:
    """``SomeState.MEMBER`` of one of the tables' state enums."""
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in enums
    )


def _assignments(tree: ast.Module) -> list[tuple[ast.AST, str, ast.expr | None, str]]:
    """(node, attribute, value or None when unknown, enclosing function) of every assignment to
    an attribute: plain, annotated, augmented, unpacked, loop and with targets, and setattr()
    with a literal name."""
    found: list[tuple[ast.AST, str, ast.expr | None, str]] = []

    def targets(target: ast.expr, value: ast.expr | None) -> list[tuple[str, ast.expr | None]]:
        if isinstance(target, ast.Attribute):
            return [(target.attr, value)]
        if isinstance(target, (ast.Tuple, ast.List)):
            return [pair for element in target.elts for pair in targets(element, None)]
        if isinstance(target, ast.Starred):
            return targets(target.value, None)
        return []

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            inside = function
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inside = child.name
            pairs: list[tuple[str, ast.expr | None]] = []
            if isinstance(child, ast.Assign):
                for target in child.targets:
                    pairs += targets(target, child.value)
            elif isinstance(child, ast.AnnAssign) and child.value is not None:
                pairs = targets(child.target, child.value)
            elif isinstance(child, (ast.AugAssign, ast.For, ast.AsyncFor)):
                pairs = targets(child.target, None)
            elif isinstance(child, (ast.With, ast.AsyncWith)):
                for item in child.items:
                    if item.optional_vars is not None:
                        pairs += targets(item.optional_vars, None)
            elif isinstance(child, ast.NamedExpr):
                pairs = targets(child.target, child.value)
            elif (
                isinstance(child, ast.Call)
                and _call_name(child) == "setattr"
                and len(child.args) == 3
                and isinstance(child.args[1], ast.Constant)
                and isinstance(child.args[1].value, str)
            ):
                pairs = [(child.args[1].value, None)]
            found.extend((child, attr, value, inside) for attr, value in pairs)
            visit(child, inside)

    visit(tree, "")
    return found


def watched_attributes(trees: list[tuple[Path, ast.Module]]) -> set[str]:
    """The attributes that hold a state of a table: assigned from a step or a state member."""
    tables = set(transition_tables())
    steppers, enums = _steppers(trees, tables), state_enums()
    return {
        attr
        for _, tree in trees
        for _, attr, value, _ in _assignments(tree)
        if value is not None and (_call_name(value) in steppers or _is_state_member(value, enums))
    }


def state_assignments_outside_tables(root: Path = REPO_ROOT / "runtime") -> list[str]:
    modules_with_tables = table_modules(root)
    folders = sorted({path.parent for path in modules_with_tables.values()})
    trees = _trees(folders)
    tables = set(transition_tables())
    steppers, enums = _steppers(trees, tables), state_enums()
    watched = watched_attributes(trees)
    wrong = []
    for path, tree in trees:
        for node, attr, value, function in _assignments(tree):
            if attr not in watched:
                continue
            if value is not None and _call_name(value) in steppers:
                continue  # the one way to move a machine
            if function == "__init__" and value is not None and _is_state_member(value, enums):
                continue  # a machine's initial state
            where = path.relative_to(root.parent)
            wrong.append(f"{where}:{node.lineno} sets .{attr} outside step()")  # type: ignore[attr-defined]
    return wrong


def test_every_state_change_goes_through_a_transition_table() -> None:
    assert state_assignments_outside_tables() == []


def test_the_watched_states_come_from_the_tables() -> None:
    """Every machine's state attribute is watched, found from the tables (not a list): the
    session's four, the queue's three, the host's, the backlog and the simulator's session."""
    runtime = REPO_ROOT / "runtime"
    folders = sorted({path.parent for path in table_modules(runtime).values()})
    assert watched_attributes(_trees(folders)) == {
        "state",
        "recovery",
        "disconnect",
        "writes",
        "remote",
        "health",
        "backlog",
    }
    assert {"SessionState", "QueueState", "WriteState", "BacklogState"} <= state_enums()


def _planted(tmp_path: Path, lines: str) -> list[str]:
    """The check over a copy of runtime/client and runtime/sim with ``lines`` appended to the
    client's connection part."""
    root = tmp_path / "runtime"
    for package in ("client", "sim"):
        shutil.copytree(REPO_ROOT / "runtime" / package, root / package)
    (root / "statemachine.py").write_text("")
    connection = root / "client" / "connection.py"
    connection.write_text(connection.read_text(encoding="utf-8") + lines, encoding="utf-8")
    return state_assignments_outside_tables(root)


@pytest.mark.parametrize(
    "lines",
    [
        # an attribute the first check did not watch (it knew five names; writes was not one)
        "\n\ndef _planted(lifecycle: Lifecycle) -> None:\n"
        "    lifecycle.writes = WriteState.BLOCKED\n",
        # a state from a variable (the first check only saw literal members)
        "\n\ndef _planted(queue: QueueRecord, state: QueueState) -> None:\n"
        "    queue.state = state\n",
        # the same, unpacked and through setattr
        "\n\ndef _planted(queue: QueueRecord, states: tuple[QueueState, int]) -> None:\n"
        "    queue.state, _ = states\n",
        "\n\ndef _planted(queue: QueueRecord) -> None:\n"
        "    setattr(queue, 'health', queue.health)\n",
    ],
)
def test_a_state_set_outside_step_is_refused(tmp_path: Path, lines: str) -> None:
    """Each planted assignment (in a copy of the tree) makes the check fail, naming its line."""
    found = _planted(tmp_path, lines)
    assert len(found) == 1 and found[0].startswith("runtime/client/connection.py:"), found
    assert found[0].endswith("outside step()")


# -- docs/architecture.md's layer table is this file's ----------------------------------------


def documented_layers() -> dict[str, tuple[set[str], set[str]]]:
    """layer → (its packages, the layers it may import), read from docs/architecture.md."""
    text = (REPO_ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Packages and what each may import", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, tuple[set[str], set[str]]] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[0] in ("package", "---") or set(cells[0]) <= {"-"}:
            continue
        packages = {p.split(" ")[0] for p in cells[0].replace("`", "").split(", ")}
        may = {name.strip() for name in cells[3].split(",")}
        rows[cells[1]] = (packages, may)
    return rows


def test_the_documented_layer_table_is_the_tested_one() -> None:
    documented = documented_layers()
    assert {name: may for name, (_, may) in documented.items()} == MAY_IMPORT
    for name, (packages, _) in documented.items():
        for package in packages:
            assert (
                layer(package) == name
            ), f"docs put {package} in {name}, the test in {layer(package)}"


# -- the drawings are the code's, and the engine is the only router ----------------------------


def test_the_drawings_are_current() -> None:
    """docs/states.md's diagrams and docs/architecture.md's engine parts are drawn from the
    tables and a new engine (make drawings)."""
    from pybmq.cli.drawings import TABLE_MODULES, main

    assert main(["--check"]) == 0
    assert set(TABLE_MODULES) == set(table_modules())  # every table is drawn


# The engine's parts: the modules whose objects it holds.
PART_MODULES = (
    "collector",
    "configure",
    "connection",
    "consuming",
    "credit",
    "handshake",
    "lifecycle",
    "output",
    "publishing",
    "queue_table",
    "queues",
    "records",
    "requests",
    "suspension",
)


def test_no_part_holds_or_names_the_engine() -> None:
    """Nothing a new engine holds (its parts, and their parts) refers to the engine, not even
    through a bound method, and no part's module imports or names it in code."""
    from pybmq.client.engine import ClientEngine

    engine = ClientEngine()
    seen: set[int] = set()
    queue: list[object] = list(vars(engine).values())
    while queue:
        value = queue.pop()
        if id(value) in seen or isinstance(value, (str, bytes, int, float, bool, type(None))):
            continue
        seen.add(id(value))
        assert value is not engine and getattr(value, "__self__", None) is not engine, value
        if type(value).__module__.startswith(("pybmq.client.", "pybmq.wire.")):
            attributes = dict(getattr(value, "__dict__", {}))
            for cls in type(value).__mro__:
                for slot in getattr(cls, "__slots__", ()):
                    attributes[slot] = getattr(value, slot, None)
            queue.extend(attributes.values())
    for name in PART_MODULES:
        module = f"pybmq.client.{name}"
        assert "pybmq.client.engine" not in {target for target, _ in GRAPH[module]}, module
        tree = ast.parse((REPO_ROOT / "runtime" / "client" / f"{name}.py").read_text("utf-8"))
        named = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        named |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        assert not named & {"ClientEngine", "engine", "_engine"}, module
