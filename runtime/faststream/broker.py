"""``BlazingMQBroker``: FastStream's broker over pybmq's asyncio client.

It holds two ``pybmq.AsyncSession``s to the same broker, started on ``connect()`` and stopped
on ``stop()``: one that subscribers read through and one that posts. BlazingMQ opens a queue
URI once per session, so keeping them apart lets a service read and post the same queue (and a
subscriber start after something was posted to its queue) without the two sharing a handle.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, NamedTuple

from fast_depends import dependency_provider
from faststream._internal.broker import BrokerUsecase
from faststream._internal.constants import EMPTY
from faststream._internal.context.repository import ContextRepo
from faststream._internal.di import FastDependsConfig
from faststream._internal.logger import DefaultLoggerStorage, make_logger_state
from faststream._internal.logger.logging import get_broker_logger
from faststream.message import gen_cor_id
from faststream.middlewares import AckPolicy
from faststream.response.publish_type import PublishType
from faststream.specification.schema import BrokerSpec
from pybmq._version import __version__
from pybmq.client.aio import AsyncSession
from pybmq.client.fsm import SessionState
from pybmq.client.options import SessionOptions
from pybmq.faststream.config import BlazingMQBrokerConfig
from pybmq.faststream.message import Delivery
from pybmq.faststream.producer import DEFAULT_MAX_QUEUES, BlazingMQProducer
from pybmq.faststream.registrator import BlazingMQRegistrator
from pybmq.faststream.response import BlazingMQPublishCommand
from pybmq.faststream.subscriber import BlazingMQSubscriber
from typing_extensions import override

__all__ = ["BlazingMQBroker", "Sessions"]

if TYPE_CHECKING:
    from types import TracebackType

    from fast_depends import Provider
    from fast_depends.dependencies import Dependant
    from fast_depends.library.serializer import SerializerProto
    from faststream._internal.basic_types import LoggerProto, SendableMessage
    from faststream._internal.parser import CodecProto
    from faststream._internal.types import BrokerMiddleware, CustomCallable, IdGenerator
    from faststream.specification.schema.extra import Tag, TagDict
    from pybmq.client.events import Ack


class Sessions(NamedTuple):
    """The broker's connection: the session subscribers read through and the one that posts."""

    reader: AsyncSession
    poster: AsyncSession


class _LogStorage(DefaultLoggerStorage):
    """FastStream's log line with the queue URI in a column as wide as the longest one."""

    def __init__(self) -> None:
        super().__init__()
        self._width = 5

    def register_subscriber(self, params: dict[str, Any]) -> None:
        self._width = max(self._width, len(params.get("queue", "")))

    def get_logger(self, *, context: ContextRepo) -> LoggerProto:
        logger = self._get_logger_ref()
        if logger is None:
            logger = get_broker_logger(
                name="blazingmq",
                default_context={"queue": ""},
                message_id_ln=10,
                fmt=(
                    "%(asctime)s %(levelname)-8s - "
                    f"%(queue)-{self._width}s | %(message_id)-10s - %(message)s"
                ),
                context=context,
                log_level=self.logger_log_level,
            )
            self._logger_ref.add(logger)
        return logger


class BlazingMQBroker(
    BlazingMQRegistrator, BrokerUsecase[Delivery, Sessions, BlazingMQBrokerConfig]
):
    """BlazingMQ for FastStream: ``BlazingMQBroker("tcp://localhost:30114", **session options)``.

    Keywords not listed are ``pybmq.SessionOptions`` fields (``reconnect``, ``linger``,
    ``tracing``, timeouts, TLS, ...); or pass ``options=SessionOptions(...)``. The rest are
    FastStream's broker arguments."""

    def __init__(
        self,
        url: str | None = None,
        *,
        options: SessionOptions | None = None,
        connect_timeout: float = 10.0,
        max_writer_queues: int = DEFAULT_MAX_QUEUES,
        graceful_timeout: float | None = 15.0,
        decoder: CustomCallable | None = None,
        parser: CustomCallable | None = None,
        codec: CodecProto | None = None,
        dependencies: Sequence[Dependant] = (),
        middlewares: Sequence[BrokerMiddleware[Any, Any]] = (),
        routers: Iterable[BlazingMQRegistrator] = (),
        ack_policy: AckPolicy = EMPTY,
        id_generator: IdGenerator = gen_cor_id,
        specification_url: str | None = None,
        description: str | None = None,
        tags: Iterable[Tag | TagDict] = (),
        logger: LoggerProto | None = EMPTY,
        log_level: int = logging.INFO,
        apply_types: bool = True,
        serializer: SerializerProto | None = EMPTY,
        provider: Provider | None = None,
        context: ContextRepo | None = None,
        **session_options: Any,
    ) -> None:
        if session_options:
            options = SessionOptions(**{**(_fields(options)), **session_options})
        self.session_options = options or SessionOptions()
        url = url or self.session_options.broker_uri
        self.url = url
        producer = BlazingMQProducer(parser, decoder, max_queues=max_writer_queues)
        super().__init__(
            url=url,
            connect_timeout=connect_timeout,
            routers=routers,
            config=BlazingMQBrokerConfig(
                producer=producer,
                broker_middlewares=middlewares,
                broker_parser=parser,
                broker_decoder=decoder,
                broker_codec=codec,
                logger=make_logger_state(
                    logger=logger, log_level=log_level, default_storage_cls=_LogStorage
                ),
                fd_config=FastDependsConfig(
                    use_fastdepends=apply_types,
                    serializer=serializer,
                    provider=provider or dependency_provider,
                    context=context or ContextRepo(),
                ),
                broker_dependencies=dependencies,
                graceful_timeout=graceful_timeout,
                ack_policy=ack_policy,
                id_generator=id_generator,
                extra_context={"broker": self},
            ),
            specification=BrokerSpec(
                description=description,
                url=[specification_url or url],
                protocol="blazingmq",
                protocol_version=f"pybmq {__version__}",
                tags=tags,
                security=None,
            ),
        )

    @property
    def sessions(self) -> Sessions | None:
        """The two sessions while connected, else None."""
        return self._connection

    @override
    async def _connect(self) -> Sessions:
        new = partial(
            AsyncSession,
            self.url,
            options=self.session_options,
            connect_timeout=self._connection_kwargs["connect_timeout"],
        )
        reader, poster = new(), new()
        await reader.start()
        try:
            await poster.start()
        except BaseException:
            await reader.stop()
            raise
        config = self.config.broker_config
        config.session = reader
        producer = config.poster
        producer.connect(poster, config.fd_config._serializer, config.broker_codec)
        return Sessions(reader, poster)

    @override
    async def start(self) -> None:
        """Connect (if not yet), then start every subscriber (each opens its reader queue)."""
        await self.connect()
        self.config.logger.log(
            f"connected to {self.url}", logging.INFO, BlazingMQSubscriber.build_log_context(None)
        )
        await super().start()

    @override
    async def stop(
        self,
        exc_type: type[BaseException] | None = None,
        exc_val: BaseException | None = None,
        exc_tb: TracebackType | None = None,
    ) -> None:
        """Stop the subscribers (their unconfirmed messages go back to the broker), then the
        sessions: the posting one last, after its posts' ACKs (``linger``)."""
        await super().stop(exc_type, exc_val, exc_tb)
        sessions, self._connection = self._connection, None
        config = self.config.broker_config
        config.session = None
        if isinstance(config.producer, BlazingMQProducer):
            config.producer.disconnect()
        if sessions is not None:
            await sessions.reader.stop()
            await sessions.poster.stop()

    @override
    async def ping(self, timeout: float | None = None) -> bool:
        """True while both sessions are started (connected, or reconnecting within the
        session's policy for at most ``timeout`` seconds)."""
        sessions = self._connection
        if sessions is None:
            return False
        deadline = asyncio.get_running_loop().time() + (timeout or 0.0)
        while True:
            if all(s.state is SessionState.STARTED for s in sessions):
                return True
            if asyncio.get_running_loop().time() >= deadline:
                return False
            await asyncio.sleep(min(0.05, timeout or 0.05))

    @override
    async def publish(  # type: ignore[override]
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
        """Post ``message`` to ``queue`` (a queue URI) and wait for the broker's ACK; a NACK
        raises ``pybmq.errors.DeliveryError``. ``properties`` are BlazingMQ message properties
        (a ``MessageProperties`` or values, ``(PropertyType, value)`` for an exact type);
        ``headers`` become properties too."""
        cmd = BlazingMQPublishCommand(
            message,
            queue=queue,
            headers=headers,
            properties=properties,
            correlation_id=correlation_id or self.config.id_generator(),
            reply_to=reply_to,
            compression=compression,
            timeout=timeout,
            _publish_type=PublishType.PUBLISH,
        )
        ack: Ack = await self._basic_publish(cmd, producer=self.config.producer)
        return ack

    @override
    async def request(  # type: ignore[override]
        self, message: SendableMessage = None, queue: str = "", /, timeout: float = 0.5
    ) -> Any:
        """Not on BlazingMQ (no temporary reply queues): FeatureNotSupportedException."""
        cmd = BlazingMQPublishCommand(
            message, queue=queue, timeout=timeout, _publish_type=PublishType.REQUEST
        )
        return await self._basic_request(cmd, producer=self.config.producer)


def _fields(options: SessionOptions | None) -> Mapping[str, Any]:
    if options is None:
        return {}
    return {f.name: getattr(options, f.name) for f in dataclasses.fields(options)}
