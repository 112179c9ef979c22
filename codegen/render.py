"""The one jinja2 environment and the one formatter pass every generator goes through.

Templates live in ``templates/``; their output is formatted by black with the project's settings
(the same line length as hand-written code), so generated and hand-written code look alike. The
formatter is memoised in-process only: codegen writes nothing but its output.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import black
import jinja2
from black import InvalidInput, TargetVersion  # type: ignore[attr-defined]
from pybmq.codegen.filters import FILTERS
from pybmq.errors import SchemaError

TEMPLATES = Path(__file__).resolve().parent / "templates"
BLACK_MODE = black.Mode(line_length=100, target_versions={TargetVersion.PY310})


def environment(filters: dict[str, Any] | None = None, **globals_: Any) -> jinja2.Environment:
    """A jinja2 environment over ``templates/``: strict about undefined names, no autoescape
    (the output is Python), the shared filters plus ``filters``, and ``globals_``."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters.update(FILTERS)
    env.filters.update(filters or {})
    env.globals.update(globals_)
    return env


@lru_cache(maxsize=64)
def format_python(text: str, origin: str = "template") -> str:
    """black-format generated code; a template that renders invalid Python is a SchemaError
    naming the template."""
    try:
        return black.format_str(text, mode=BLACK_MODE)
    except InvalidInput as exc:  # a template bug: show where
        raise SchemaError(f"{origin} rendered invalid Python: {exc}") from exc
