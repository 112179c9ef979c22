"""Generators: schema and layout spec in, Python modules out.

Needs the ``codegen`` extra (xsdata, jinja2, black, PyYAML); this package's ``__init__`` imports
none of it, so callers can check for it first with ``require_extra``.
"""

from __future__ import annotations

import importlib.util

from pybmq.errors import UsageError

EXTRA_MODULES = ("xsdata", "jinja2", "black", "yaml")


def require_extra(what: str) -> None:
    """A UsageError naming the extra to install when a codegen dependency is missing."""
    missing = [name for name in EXTRA_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        raise UsageError(
            f"{what} needs the codegen extra ({', '.join(missing)} not installed): "
            "pip install 'pybmq[codegen]'"
        )
