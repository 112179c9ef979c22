"""Running code written for the official SDK unchanged: ``install()`` makes ``import blazingmq``
(and its public submodules) give ``pybmq.compat``, without ever hiding a real ``blazingmq`` that
is installed unless the caller forces it."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import warnings

# The official package's public modules, and the compat module each one is.
ALIASES = {
    "blazingmq": "pybmq.compat",
    "blazingmq.exceptions": "pybmq.compat.exceptions",
    "blazingmq.session_events": "pybmq.compat.session_events",
    "blazingmq.testing": "pybmq.compat.testing",
}


def installed() -> bool:
    """Whether ``import blazingmq`` gives ``pybmq.compat`` now."""
    return sys.modules.get("blazingmq") is sys.modules.get("pybmq.compat") is not None


def real_sdk_present() -> bool:
    """Whether a real ``blazingmq`` is importable (or already imported) in this interpreter."""
    if installed():
        return False
    if "blazingmq" in sys.modules:
        return True
    try:
        return importlib.util.find_spec("blazingmq") is not None
    except ImportError:  # a finder that refuses the name: nothing importable
        return False


def install(force: bool = False) -> bool:
    """Register ``blazingmq``, ``blazingmq.exceptions``, ``blazingmq.session_events`` and
    ``blazingmq.testing`` as aliases of the compat modules. Returns whether they are in place.

    If a real ``blazingmq`` is installed it is left alone (a ``UserWarning`` says so) unless
    ``force`` is true: a program then imports the SDK it was written for.
    """
    if installed():
        return True
    if real_sdk_present() and not force:
        warnings.warn(
            "a real blazingmq package is installed; pybmq.compat.install() leaves it in place "
            "(pass force=True, or --force to python -m pybmq.compat, to run on pybmq.compat)",
            UserWarning,
            stacklevel=2,
        )
        return False
    for name in [n for n in sys.modules if n == "blazingmq" or n.startswith("blazingmq.")]:
        del sys.modules[name]  # a real SDK imported earlier: its modules must not be mixed in
    for alias, target in ALIASES.items():
        sys.modules[alias] = importlib.import_module(target)
    return True


def uninstall() -> None:
    """Remove the aliases ``install`` registered (a real ``blazingmq`` imports normally again)."""
    for alias, target in ALIASES.items():
        if alias in sys.modules and sys.modules[alias] is sys.modules.get(target):
            del sys.modules[alias]


__all__ = ["ALIASES", "install", "installed", "real_sdk_present", "uninstall"]
