"""pybmq: pure-Python, code-generated bindings and client for the BlazingMQ protocol."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pybmq._version import __version__

if TYPE_CHECKING:
    from pybmq.client.aio import AsyncSession  # noqa: F401
    from pybmq.client.aio_queue import AsyncQueue, ReceivedMessage  # noqa: F401
    from pybmq.client.events import Ack, AckStatus  # noqa: F401
    from pybmq.client.options import QueueOptions, SessionOptions  # noqa: F401
    from pybmq.client.subscriptions import Subscription  # noqa: F401
    from pybmq.client.sync import Queue, Session  # noqa: F401

# The client is imported on first use, so `import pybmq` (and the CLI) stay cheap.
_LAZY = {
    "AsyncSession": "pybmq.client.aio",
    "AsyncQueue": "pybmq.client.aio_queue",
    "ReceivedMessage": "pybmq.client.aio_queue",
    "Session": "pybmq.client.sync",
    "Queue": "pybmq.client.sync",
    "Ack": "pybmq.client.events",
    "AckStatus": "pybmq.client.events",
    "QueueOptions": "pybmq.client.options",
    "SessionOptions": "pybmq.client.options",
    "Subscription": "pybmq.client.subscriptions",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pybmq' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
