"""pybmq: pure-Python, code-generated bindings and client for the BlazingMQ protocol."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from pybmq.aio import AsyncQueue, AsyncSession, ReceivedMessage  # noqa: F401
    from pybmq.client_events import Ack, AckStatus  # noqa: F401
    from pybmq.client_options import QueueOptions, SessionOptions  # noqa: F401
    from pybmq.sync import Queue, Session  # noqa: F401

# The client is imported on first use, so `import pybmq` (and the CLI) stay cheap.
_LAZY = {
    "AsyncSession": "pybmq.aio",
    "AsyncQueue": "pybmq.aio",
    "ReceivedMessage": "pybmq.aio",
    "Session": "pybmq.sync",
    "Queue": "pybmq.sync",
    "Ack": "pybmq.client_events",
    "AckStatus": "pybmq.client_events",
    "QueueOptions": "pybmq.client_options",
    "SessionOptions": "pybmq.client_options",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pybmq' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
