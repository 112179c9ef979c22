"""The one jinja2 environment and the one formatter pass every generator goes through.

Templates live in ``templates/``. A generation run (a process: ``make generate``, ``pybmq
generate``) makes one environment, so each template is compiled once however many schemas it
renders; what a generator's templates need (its model, its own filters) comes with each
``render()`` call, not with the environment. The output is formatted by black with the project's settings
(the same line length as hand-written code), so generated and hand-written code look alike.
Formatting is nearly all of a run's cost, so its output is cached by content hash (see
``formatcache``) in a checkout's ``build/codegen-cache/`` (ignored by git, removed by ``make
clean``), or in the folder named by ``PYBMQ_CODEGEN_CACHE`` (empty: no disk cache).
"""

from __future__ import annotations

import ast
import functools
import os
from importlib.metadata import version
from pathlib import Path
from typing import Any

from pybmq.codegen import extra_missing
from pybmq.codegen.filters import FILTERS
from pybmq.codegen.formatcache import FormatCache
from pybmq.errors import SchemaError

__all__ = [
    "BLACK_MODE",
    "CHECKOUT",
    "DEFAULT_CACHE_DIR",
    "FORMATTER_ID",
    "TEMPLATES",
    "cache_dir",
    "declare_public_names",
    "environment",
    "format_cache",
    "format_python",
    "model_filters",
    "set_format_cache",
]

try:
    import black
    import jinja2
    from black import InvalidInput, TargetVersion  # type: ignore[attr-defined]
except ModuleNotFoundError as exc:  # the codegen extra is not installed: say so
    raise extra_missing(exc)  # noqa: B904 - its context is exc

TEMPLATES = Path(__file__).resolve().parent / "templates"
BLACK_MODE = black.Mode(line_length=100, target_versions={TargetVersion.PY310})
FORMATTER_ID = f"black {version('black')} {BLACK_MODE!r}"
CHECKOUT = Path(__file__).resolve().parent.parent
DEFAULT_CACHE_DIR = CHECKOUT / "build" / "codegen-cache"


def cache_dir() -> Path | None:
    """Where formatted output is cached across runs; None turns the disk cache off (the default
    outside a source checkout: an installed package must not write next to itself)."""
    configured = os.environ.get("PYBMQ_CODEGEN_CACHE")
    if configured is not None:
        return Path(configured) if configured else None
    return DEFAULT_CACHE_DIR if (CHECKOUT / "pyproject.toml").is_file() else None


_cache = FormatCache(cache_dir(), FORMATTER_ID)


def format_cache() -> FormatCache:
    """The process's formatter cache (the driver prunes it after a full run)."""
    return _cache


def set_format_cache(cache: FormatCache) -> FormatCache:
    """Make ``cache`` the process's formatter cache; returns the one it replaces."""
    global _cache
    previous, _cache = _cache, cache
    return previous


def environment() -> jinja2.Environment:
    """The run's jinja2 environment over ``templates/``: strict about undefined names, no
    autoescape (the output is Python), the shared filters, and ``model_filters``."""
    return _environment(TEMPLATES)


@functools.cache
def _environment(templates: Path) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters.update(FILTERS)
    return env


def model_filters(names: tuple[str, ...]) -> None:
    """Filters that call the method of that name of the render's ``model`` (a generator's own
    naming and typing rules, e.g. ``{{ e | annotation(t) }}`` is ``model.annotation(e, t)``),
    added to the run's environment once."""
    env = environment()
    for name in names:
        if name not in env.filters:
            env.filters[name] = _model_filter(name)


def _model_filter(name: str) -> Any:
    @jinja2.pass_context
    def call(context: Any, *args: Any) -> Any:
        return getattr(context["model"], name)(*args)

    return call


def declare_public_names(source: str) -> str:
    """``source`` with an ``__all__`` naming its public top-level definitions (functions,
    classes, constants; not type variables), inserted after its imports: a generated module
    declares its public names as the hand-written ones do."""
    tree = ast.parse(source)
    names: list[str] = []
    last_import = 0
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            last_import = node.end_lineno or node.lineno
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            value = node.value
            if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "TypeVar":
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names += [t.id for t in targets if isinstance(t, ast.Name)]
    public = sorted(dict.fromkeys(n for n in names if not n.startswith("_")))
    lines = source.split("\n")
    lines[last_import:last_import] = ["", "__all__ = [" + ", ".join(map(repr, public)) + "]"]
    return "\n".join(lines)


def format_python(text: str, origin: str = "template") -> str:
    """black-format generated code (through the cache); a template that renders invalid Python
    is a SchemaError naming the template."""

    def run_black(source: str) -> str:
        try:
            return black.format_str(source, mode=BLACK_MODE)
        except InvalidInput as exc:  # a template bug: show where
            raise SchemaError(f"{origin} rendered invalid Python: {exc}") from exc

    return _cache.format(text, run_black)
