"""Publishers: ``@broker.publisher("bmq://...")`` (posts a handler's result, or what
``publisher.publish`` is given, to one queue) and the reply publisher that answers a message
carrying ``reply_to``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from faststream._internal.endpoint.publisher import PublisherUsecase
from faststream._internal.endpoint.publisher.fake import FakePublisher
from faststream.response.publish_type import PublishType
from pybmq.faststream.config import queue_uri
from pybmq.faststream.parser import to_properties
from pybmq.faststream.response import BlazingMQPublishCommand
from typing_extensions import override

__all__ = ["BlazingMQPublisher", "BlazingMQReplyPublisher"]

if TYPE_CHECKING:
    from faststream._internal.basic_types import SendableMessage
    from faststream._internal.endpoint.publisher import PublisherSpecification
    from faststream._internal.producer import ProducerProto
    from faststream._internal.types import PublisherMiddleware
    from faststream.response.response import PublishCommand
    from pybmq.client.events import Ack
    from pybmq.faststream.config import BlazingMQBrokerConfig, BlazingMQPublisherConfig


class BlazingMQPublisher(PublisherUsecase):
    """Posts to one queue; ``headers``/``properties`` are put on every message it posts."""

    _outer_config: BlazingMQBrokerConfig

    def __init__(
        self,
        config: BlazingMQPublisherConfig,
        specification: PublisherSpecification[Any, Any],
    ) -> None:
        super().__init__(config, specification)
        self._queue_name = config.queue
        self.headers = config.headers
        self.properties = config.properties
        self.compression = config.compression

    @property
    def queue_uri(self) -> str:
        """The queue URI, with the prefix of the routers it was declared on."""
        return queue_uri(self._outer_config.prefix, self._queue_name)

    @override
    async def publish(
        self,
        message: SendableMessage = None,
        queue: str = "",
        *,
        headers: dict[str, Any] | None = None,
        properties: Mapping[str, Any] | None = None,
        correlation_id: str | None = None,
        reply_to: str = "",
        compression: str | None = None,
        timeout: float | None = None,
    ) -> Ack:
        """Post ``message`` (to ``queue``, default this publisher's) and wait for the ACK."""
        cmd = BlazingMQPublishCommand(
            message,
            queue=queue or self.queue_uri,
            headers=self.headers | (headers or {}),
            properties=_merged(self.properties, properties),
            correlation_id=correlation_id or self._outer_config.id_generator(),
            reply_to=reply_to,
            compression=compression or self.compression,
            timeout=timeout,
            _publish_type=PublishType.PUBLISH,
        )
        ack: Ack = await self._basic_publish(
            cmd, producer=self._outer_config.producer, _extra_middlewares=()
        )
        return ack

    @override
    async def _publish(
        self,
        cmd: PublishCommand | BlazingMQPublishCommand,
        *,
        _extra_middlewares: Iterable[PublisherMiddleware],
    ) -> None:
        """A handler's result, posted in the subscriber's flow."""
        command = BlazingMQPublishCommand.from_cmd(cmd)
        command.destination = command.destination or self.queue_uri
        command.add_headers(self.headers, override=False)
        command.properties = _merged(self.properties, command.properties)
        command.compression = command.compression or self.compression
        await self._basic_publish(
            command, producer=self._outer_config.producer, _extra_middlewares=_extra_middlewares
        )

    @override
    async def request(self, message: SendableMessage, *args: Any, **kwargs: Any) -> Any:
        cmd = BlazingMQPublishCommand(
            message, queue=self.queue_uri, _publish_type=PublishType.REQUEST
        )
        return await self._basic_request(cmd, producer=self._outer_config.producer)


def _merged(
    base: Mapping[str, Any] | None, extra: Mapping[str, Any] | None
) -> Mapping[str, Any] | None:
    """Typed properties of a publisher with those of one post (the post's win)."""
    if not base:
        return extra
    if not extra:
        return base
    return to_properties(base, extra)


class BlazingMQReplyPublisher(FakePublisher):
    """Posts a handler's result to the queue a message named in its ``reply_to`` property."""

    def __init__(self, producer: ProducerProto[Any], queue: str) -> None:
        super().__init__(producer=producer)
        self.queue = queue

    @override
    def patch_command(
        self, cmd: PublishCommand | BlazingMQPublishCommand
    ) -> BlazingMQPublishCommand:
        command = BlazingMQPublishCommand.from_cmd(super().patch_command(cmd))
        command.destination = self.queue
        return command
