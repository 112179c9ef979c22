"""The producer: encodes a publish as FastStream does and posts it through pybmq, waiting for
the broker's ACK (a NACK raises ``DeliveryError``). Writer queues are opened on first use, once
per queue URI, and kept open until the broker stops; at most ``max_queues`` of them (a bound,
``UsageError`` past it)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from faststream._internal.endpoint.utils import ParserComposition
from faststream._internal.parser import DefaultCodec
from faststream._internal.producer import ProducerProto
from faststream.exceptions import FeatureNotSupportedException, IncorrectState
from pybmq.errors import DeliveryError, UsageError
from pybmq.faststream.parser import BlazingMQParser, to_properties
from pybmq.faststream.response import BlazingMQPublishCommand
from pybmq.uri import require_queue_uri
from typing_extensions import override

__all__ = ["DEFAULT_MAX_QUEUES", "BlazingMQProducer"]

if TYPE_CHECKING:
    from fast_depends.library.serializer import SerializerProto
    from faststream._internal.parser import CodecProto
    from faststream._internal.types import AsyncCallable, CustomCallable
    from pybmq.client.aio import AsyncSession
    from pybmq.client.aio_queue import AsyncQueue
    from pybmq.client.events import Ack

DEFAULT_MAX_QUEUES = 1000


class BlazingMQProducer(ProducerProto[BlazingMQPublishCommand]):
    """Posts ``BlazingMQPublishCommand``s through the broker's publishing session."""

    _parser: AsyncCallable
    _decoder: AsyncCallable

    def __init__(
        self,
        parser: CustomCallable | None = None,
        decoder: CustomCallable | None = None,
        *,
        max_queues: int = DEFAULT_MAX_QUEUES,
    ) -> None:
        if max_queues < 1:
            raise UsageError("max_writer_queues must be >= 1")
        default = BlazingMQParser()
        self._parser = ParserComposition(parser, default.parse_message)
        self._decoder = ParserComposition(decoder, default.decode_message)
        self.codec: CodecProto = DefaultCodec()
        self.serializer: SerializerProto | None = None
        self.max_queues = max_queues
        self._session: AsyncSession | None = None
        self._writers: dict[str, asyncio.Task[AsyncQueue]] = {}

    def connect(
        self,
        session: AsyncSession,
        serializer: SerializerProto | None,
        codec: CodecProto | None = None,
    ) -> None:
        self._session = session
        self.serializer = serializer
        self.codec = codec or DefaultCodec()

    def disconnect(self) -> None:
        self._session = None
        for task in self._writers.values():
            task.cancel()
        self._writers.clear()

    @property
    def session(self) -> AsyncSession:
        if self._session is None:
            raise IncorrectState("the BlazingMQ broker is not connected: call connect() first")
        return self._session

    async def writer(self, uri: str) -> AsyncQueue:
        """The writer queue of ``uri``, opened on first use (concurrent callers share one open)."""
        task = self._writers.get(uri)
        if task is None or (task.done() and (task.cancelled() or task.exception() is not None)):
            parsed = require_queue_uri(uri)
            if parsed.app_id is not None:
                raise UsageError(
                    f"cannot publish to {uri!r}: messages are posted to a queue, "
                    "not to one of its fan-out apps (drop the ?id=)"
                )
            if uri not in self._writers and len(self._writers) >= self.max_queues:
                raise UsageError(
                    f"this broker already posts to {self.max_queues} queues "
                    "(max_writer_queues); raise it to post to more"
                )
            task = asyncio.ensure_future(self.session.open_queue(uri, write=True))
            self._writers[uri] = task
        return await asyncio.shield(task)

    async def encode(self, cmd: BlazingMQPublishCommand) -> tuple[bytes, Any]:
        """The payload and properties of ``cmd``."""
        payload, content_type = await self.codec.encode(cmd.body, self.serializer)
        properties = to_properties(
            cmd.headers,
            cmd.properties,
            content_type=content_type,
            correlation_id=cmd.correlation_id,
            reply_to=cmd.reply_to,
        )
        return payload, properties

    @override
    async def publish(self, cmd: BlazingMQPublishCommand) -> Ack:
        payload, properties = await self.encode(cmd)
        queue = await self.writer(cmd.destination)
        post = queue.post(payload, properties=properties, compression=cmd.compression)
        ack = await (asyncio.wait_for(post, cmd.timeout) if cmd.timeout else post)
        if not ack.ok:
            raise DeliveryError(
                f"{cmd.destination}: the broker did not store the message ({ack!r})",
                posted=1,
                acked=0,
            )
        return ack

    @override
    async def request(self, cmd: BlazingMQPublishCommand) -> Any:
        raise FeatureNotSupportedException(
            "BlazingMQ has no temporary reply queues: publish with reply_to='bmq://...' and "
            "subscribe to that queue instead of request()"
        )

    @override
    async def publish_batch(self, cmd: BlazingMQPublishCommand) -> None:
        raise FeatureNotSupportedException("BlazingMQBroker does not publish batches")
