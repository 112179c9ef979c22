"""Generators: schema and layout spec in, Python modules out.

Needs the ``codegen`` extra (xsdata, jinja2, black, PyYAML); this package's ``__init__`` imports
none of it, so callers can check for it first with ``require_extra``.
"""

from __future__ import annotations

import importlib.util

from pybmq.errors import UsageError

__all__ = ["EXTRA_MODULES", "extra_missing", "require_extra"]

EXTRA_MODULES = ("xsdata", "jinja2", "black", "yaml")


def require_extra(what: str) -> None:
    """A UsageError naming the extra to install when a codegen dependency is missing."""
    missing = [name for name in EXTRA_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        raise UsageError(
            f"{what} needs the codegen extra ({', '.join(missing)} not installed): "
            "pip install 'pybmq[codegen]'"
        )


def extra_missing(exc: ModuleNotFoundError) -> ModuleNotFoundError:
    """The error to raise (``raise extra_missing(exc)`` in ``except ModuleNotFoundError``) when
    importing a generator module finds a codegen dependency missing: it names the extra to
    install. Any other missing module is returned as it is."""
    top = (exc.name or "").partition(".")[0]
    if top not in EXTRA_MODULES:
        return exc
    return ModuleNotFoundError(
        f"the pybmq code generator needs the codegen extra ({top} is not installed): "
        "pip install 'pybmq[codegen]'",
        name=exc.name,
    )
