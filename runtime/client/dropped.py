"""What happens to a session the program drops without ``stop()``: it is released (its
connection closed, its threads ended) by a finalizer, as asyncio's transports close themselves,
and a ``ResourceWarning`` names where it was made, so the missing ``stop()`` can be found."""

from __future__ import annotations

import contextlib
import inspect
import os
import socket
import warnings
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pybmq.client.aio_link import Link

__all__ = ["creation_site", "release_dropped_link", "warn_dropped", "weak_method"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def creation_site() -> str:
    """``file:line`` of the first caller outside pybmq (where the application made it)."""
    here = inspect.currentframe()
    frame = here.f_back if here is not None else None
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE + os.sep):
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return "<unknown>"
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


def warn_dropped(kind: str, site: str) -> None:
    """The ResourceWarning of a session released by its finalizer."""
    warnings.warn(
        f"{kind} created at {site} was not stopped: its connection is closed now; "
        f"call stop() or use it as a context manager",
        ResourceWarning,
        stacklevel=2,
    )


def weak_method(method: Callable[[Any], None]) -> Callable[[Any], None]:
    """``method`` without keeping its object alive (a callback the socket or the loop holds
    must not hold the session: it could never be collected, so never released)."""
    ref = weakref.WeakMethod(method)

    def call(arg: Any) -> None:
        bound = ref()
        if bound is not None:
            bound(arg)

    return call


def release_dropped_link(link: Link, kind: str, site: str) -> None:
    """A session collected without ``stop()``: warn, and close what is still open."""
    transport = link.transport
    if transport is None:
        return
    warn_dropped(kind, site)
    try:
        link.abort()
    except RuntimeError:  # its loop is closed: end the connection itself (the fd goes with
        sock = transport.get_extra_info("socket")  # the transport, when it is collected)
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
