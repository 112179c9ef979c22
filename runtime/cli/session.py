"""A session for ``post`` and ``consume`` that knows which stage it is in, so a broker that
accepts the connection and then says nothing is reported as such: the stage (connect,
negotiate, open, close) and the timeout that fired, never a bare timeout or a traceback."""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING, Any

from pybmq.errors import PybmqError, RequestTimeoutError, SessionStoppedError

if TYPE_CHECKING:
    from pybmq.client.aio import AsyncSession
    from pybmq.client.aio_queue import AsyncQueue
    from pybmq.client.options import SessionOptions

__all__ = ["BrokerSilentError", "close_queue", "open_queue", "start_session"]


class BrokerSilentError(PybmqError):
    """The broker did not answer within a stage's timeout (exit code 5)."""

    def __init__(self, broker: str, stage: str, flag: str, seconds: float) -> None:
        self.stage = stage
        self.flag = flag
        super().__init__(
            f"{broker} did not answer: no end to the {stage} stage within {flag} {seconds:g} s"
        )


def _silent(args: argparse.Namespace, broker: str, stage: str) -> BrokerSilentError:
    if stage == "connect":
        return BrokerSilentError(broker, stage, "--connect-timeout", args.connect_timeout)
    return BrokerSilentError(broker, stage, "--request-timeout", args.request_timeout)


async def start_session(args: argparse.Namespace, options: SessionOptions) -> AsyncSession:
    """Connect and negotiate (authenticating first if asked)."""
    from pybmq.client.aio import AsyncSession

    session = AsyncSession(options=options, connect_timeout=args.connect_timeout)
    try:
        await session.start()
    except SessionStoppedError as exc:
        if isinstance(exc.__cause__, (asyncio.TimeoutError, TimeoutError)):
            raise _silent(args, session.broker, "connect") from None
        raise
    except TimeoutError as exc:  # RequestTimeoutError or AuthenticationTimeoutError
        stage = "negotiate" if isinstance(exc, RequestTimeoutError) else "authenticate"
        raise _silent(args, session.broker, stage) from None
    return session


async def open_queue(
    args: argparse.Namespace, session: AsyncSession, uri: str, **kwargs: Any
) -> AsyncQueue:
    try:
        return await session.open_queue(uri, **kwargs)
    except RequestTimeoutError:
        raise _silent(args, session.broker, "open") from None


async def close_queue(args: argparse.Namespace, session: AsyncSession, queue: AsyncQueue) -> None:
    try:
        await queue.close()
    except RequestTimeoutError:
        raise _silent(args, session.broker, "close") from None
