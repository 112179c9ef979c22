"""What a session without tracing has where a traced one has its ``Tracing``: the same session
level calls (an operation's span, a reconnect's, the caller's context for a blocking call), each
doing nothing. Only those go through it: the data paths of an untraced session (its posts,
deliveries and confirms) carry no tracing at all, the tracing layer being a queue of its own
(``pybmq.client.aio_tracing``). No OpenTelemetry is imported here."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

__all__ = ["NO_TRACING", "NoTracing"]


class NoTracing:
    """``pybmq.client.tracing.Tracing``'s session-level calls, doing nothing."""

    def operation(
        self, name: str, uri: str | None = None
    ) -> contextlib.AbstractContextManager[Any]:
        return contextlib.nullcontext()

    def connection_lost(self) -> None:
        return None

    def reconnected(self, endpoint: str, error: str | None = None) -> None:
        return None

    @staticmethod
    def current() -> None:
        """No context to hand to the I/O thread."""
        return None

    @staticmethod
    @contextlib.contextmanager
    def attached(parent: object) -> Iterator[None]:
        yield


NO_TRACING = NoTracing()
