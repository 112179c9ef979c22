"""The FastAPI integration, as FastStream's brokers have it (needs ``fastapi``):

    from fastapi import FastAPI
    from pybmq.faststream.fastapi import BlazingMQRouter

    router = BlazingMQRouter("tcp://localhost:30114")

    @router.subscriber("bmq://bmq.test.mem.priority/orders")
    async def handle(order: Order, db: Annotated[Db, Depends(database)]) -> None: ...

    app = FastAPI()
    app.include_router(router)   # the broker starts and stops with the app

Handlers take FastAPI dependencies (``Depends``), ``router.broker`` publishes from HTTP routes,
and the AsyncAPI page is served at ``schema_url`` (``/asyncapi``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from fastapi.datastructures import Default
from fastapi.routing import APIRoute
from fastapi.utils import generate_unique_id
from faststream._internal.constants import EMPTY
from faststream._internal.context import ContextRepo
from faststream._internal.fastapi.router import StreamRouter
from faststream.message import gen_cor_id
from faststream.middlewares import AckPolicy
from pybmq.faststream.broker import BlazingMQBroker
from pybmq.faststream.config import DEFAULT_MAX_ATTEMPTS
from pybmq.faststream.message import Delivery
from starlette.responses import JSONResponse
from typing_extensions import override

if TYPE_CHECKING:
    from enum import Enum

    from fastapi import params
    from fastapi.types import IncEx
    from faststream._internal.basic_types import LoggerProto
    from faststream._internal.types import BrokerMiddleware, CustomCallable, IdGenerator
    from faststream.specification.base import SpecificationFactory
    from pybmq.client.options import SessionOptions
    from pybmq.faststream.publisher import BlazingMQPublisher
    from pybmq.faststream.registrator import SubscriptionSpec
    from pybmq.faststream.subscriber import BlazingMQSubscriber
    from starlette.responses import Response
    from starlette.routing import BaseRoute
    from starlette.types import ASGIApp, Lifespan

__all__ = ["BlazingMQRouter"]

# FastAPI's markers of an argument left at its default, made once (as FastAPI's own are).
_JSON_RESPONSE: Any = Default(JSONResponse)
_UNIQUE_ID: Any = Default(generate_unique_id)
_NO_MODEL: Any = Default(None)


class BlazingMQRouter(StreamRouter[Delivery]):
    """A FastAPI router holding a ``BlazingMQBroker`` (``router.broker``)."""

    broker_class = BlazingMQBroker
    broker: BlazingMQBroker

    def __init__(
        self,
        url: str | None = None,
        *,
        options: SessionOptions | None = None,
        connect_timeout: float = 10.0,
        graceful_timeout: float | None = 15.0,
        decoder: CustomCallable | None = None,
        parser: CustomCallable | None = None,
        middlewares: Sequence[BrokerMiddleware[Any, Any]] = (),
        ack_policy: AckPolicy = EMPTY,
        id_generator: IdGenerator = gen_cor_id,
        specification_url: str | None = None,
        description: str | None = None,
        specification: SpecificationFactory | None = None,
        logger: LoggerProto | None = EMPTY,
        log_level: int = logging.INFO,
        setup_state: bool = True,
        schema_url: str | None = "/asyncapi",
        context: ContextRepo | None = None,
        # FastAPI's APIRouter arguments
        prefix: str = "",
        tags: list[str | Enum] | None = None,
        dependencies: Sequence[params.Depends] | None = None,
        default_response_class: type[Response] = _JSON_RESPONSE,
        responses: dict[int | str, dict[str, Any]] | None = None,
        callbacks: list[BaseRoute] | None = None,
        routes: list[BaseRoute] | None = None,
        redirect_slashes: bool = True,
        default: ASGIApp | None = None,
        dependency_overrides_provider: Any | None = None,
        route_class: type[APIRoute] = APIRoute,
        on_startup: Sequence[Callable[[], Any]] | None = None,
        on_shutdown: Sequence[Callable[[], Any]] | None = None,
        lifespan: Lifespan[Any] | None = None,
        deprecated: bool | None = None,
        include_in_schema: bool = True,
        generate_unique_id_function: Callable[[APIRoute], str] = _UNIQUE_ID,
        **session_options: Any,
    ) -> None:
        super().__init__(
            url,
            options=options,
            connect_timeout=connect_timeout,
            graceful_timeout=graceful_timeout,
            decoder=decoder,
            parser=parser,
            middlewares=middlewares,
            ack_policy=ack_policy,
            id_generator=id_generator,
            specification_url=specification_url,
            description=description,
            specification=specification,
            logger=logger,
            log_level=log_level,
            setup_state=setup_state,
            schema_url=schema_url,
            context=context,
            prefix=prefix,
            tags=tags,
            dependencies=dependencies,
            default_response_class=default_response_class,
            responses=responses,
            callbacks=callbacks,
            routes=routes,
            redirect_slashes=redirect_slashes,
            default=default,
            dependency_overrides_provider=dependency_overrides_provider,
            route_class=route_class,
            on_startup=on_startup,
            on_shutdown=on_shutdown,
            lifespan=lifespan,
            deprecated=deprecated,
            include_in_schema=include_in_schema,
            generate_unique_id_function=generate_unique_id_function,
            **session_options,
        )

    @override
    def subscriber(  # type: ignore[override]
        self,
        queue: str,
        *,
        subscription: SubscriptionSpec = None,
        max_unconfirmed_messages: int = 1000,
        max_unconfirmed_bytes: int = 32 * 1024 * 1024,
        consumer_priority: int = 0,
        dedup_window: int = 0,
        dedup_window_age: float = 300.0,
        ack_policy: AckPolicy = EMPTY,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        retry_delay: float = 0.0,
        dead_letter_queue: str | None = None,
        max_workers: int = 1,
        no_reply: bool = False,
        dependencies: Iterable[params.Depends] = (),
        parser: CustomCallable | None = None,
        decoder: CustomCallable | None = None,
        title: str | None = None,
        description: str | None = None,
        include_in_schema: bool = True,
        response_model: Any = _NO_MODEL,
        response_model_include: IncEx | None = None,
        response_model_exclude: IncEx | None = None,
        response_model_by_alias: bool = True,
        response_model_exclude_unset: bool = False,
        response_model_exclude_defaults: bool = False,
        response_model_exclude_none: bool = False,
    ) -> BlazingMQSubscriber:
        """``BlazingMQBroker.subscriber`` with FastAPI's dependencies and response model."""
        return cast(
            "BlazingMQSubscriber",
            super().subscriber(
                queue,
                subscription=subscription,
                max_unconfirmed_messages=max_unconfirmed_messages,
                max_unconfirmed_bytes=max_unconfirmed_bytes,
                consumer_priority=consumer_priority,
                dedup_window=dedup_window,
                dedup_window_age=dedup_window_age,
                ack_policy=ack_policy,
                max_attempts=max_attempts,
                retry_delay=retry_delay,
                dead_letter_queue=dead_letter_queue,
                max_workers=max_workers,
                no_reply=no_reply,
                dependencies=dependencies,
                parser=parser,
                decoder=decoder,
                title=title,
                description=description,
                include_in_schema=include_in_schema,
                response_model=response_model,
                response_model_include=response_model_include,
                response_model_exclude=response_model_exclude,
                response_model_by_alias=response_model_by_alias,
                response_model_exclude_unset=response_model_exclude_unset,
                response_model_exclude_defaults=response_model_exclude_defaults,
                response_model_exclude_none=response_model_exclude_none,
            ),
        )

    @override
    def publisher(  # type: ignore[override]
        self,
        queue: str,
        *,
        headers: dict[str, Any] | None = None,
        properties: Mapping[str, Any] | None = None,
        compression: str | None = None,
        title: str | None = None,
        description: str | None = None,
        schema: Any | None = None,
        include_in_schema: bool = True,
    ) -> BlazingMQPublisher:
        """``BlazingMQBroker.publisher``."""
        return self.broker.publisher(
            queue,
            headers=headers,
            properties=properties,
            compression=compression,
            title=title,
            description=description,
            schema=schema,
            include_in_schema=include_in_schema,
        )
