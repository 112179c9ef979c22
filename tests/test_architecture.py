"""The layering of ``pybmq`` (docs/architecture.md), checked on the source with ``ast``.

Every import between pybmq's own modules must go from a layer to one it may use (never upward),
and the module graph must have no cycle. Imports under ``if TYPE_CHECKING:`` are annotations
only and do not count; imports inside functions do (they run).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
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

# Attributes that hold a state of a machine in pybmq.client.fsm (or the simulator's tables).
STATE_ATTRIBUTES = {"state", "remote", "health", "recovery", "disconnect"}
STATE_PACKAGES = ("client", "sim")


def _is_state_member(node: ast.expr) -> bool:
    """``SomethingState.MEMBER``: a literal state."""
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id.endswith("State")
    )


def _is_step_call(node: ast.expr) -> bool:
    func = node.func if isinstance(node, ast.Call) else None
    return (isinstance(func, ast.Name) and func.id == "step") or (
        isinstance(func, ast.Attribute) and func.attr == "step"
    )


def state_assignments_outside_tables() -> list[str]:
    wrong = []
    for package in STATE_PACKAGES:
        for path in sorted((REPO_ROOT / "runtime" / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for function in ast.walk(tree):
                if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                for node in ast.walk(function):
                    if isinstance(node, ast.Assign):
                        targets, value = node.targets, node.value
                    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value:
                        targets, value = [node.target], node.value
                    else:
                        continue
                    for target in targets:
                        if not (
                            isinstance(target, ast.Attribute) and target.attr in STATE_ATTRIBUTES
                        ):
                            continue
                        if _is_step_call(value):
                            continue  # the one way to move a machine
                        if function.name == "__init__" and _is_state_member(value):
                            continue  # a machine's initial state
                        if not _is_state_member(value) and not (
                            isinstance(value, ast.Attribute) and value.attr in STATE_ATTRIBUTES
                        ):
                            continue  # not a state (a part of the engine named like one)
                        where = path.relative_to(REPO_ROOT)
                        wrong.append(f"{where}:{node.lineno} sets .{target.attr} outside step()")
    return wrong


def test_every_state_change_goes_through_a_transition_table() -> None:
    assert state_assignments_outside_tables() == []


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
