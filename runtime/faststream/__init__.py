"""BlazingMQ for FastStream (the ``faststream`` extra: ``pip install 'pybmq[faststream]'``).

    from faststream import FastStream
    from pybmq.faststream import BlazingMQBroker

    broker = BlazingMQBroker("tcp://localhost:30114")
    app = FastStream(broker)

    @broker.subscriber("bmq://bmq.test.mem.priority/orders")
    @broker.publisher("bmq://bmq.test.mem.priority/shipped")
    async def handle(order: Order) -> Shipment: ...

It follows the shape of FastStream's own brokers: ``BlazingMQBroker``, ``BlazingMQRouter``
(``BlazingMQRoute``, ``BlazingMQRoutePublisher``), ``BlazingMQMessage``, ``BlazingMQResponse``,
``TestBlazingMQBroker``. ``BlazingMQMessage`` here is the handler annotation (the message from
the context), as ``faststream.rabbit.RabbitMessage`` is; the class is
``pybmq.faststream.message.BlazingMQMessage``. The middlewares are in ``pybmq.faststream.opentelemetry`` and
``pybmq.faststream.prometheus``, the FastAPI integration in ``pybmq.faststream.fastapi``.
"""

from __future__ import annotations

from importlib.util import find_spec

try:
    from pybmq.faststream.annotations import BlazingMQMessage
    from pybmq.faststream.broker import BlazingMQBroker, Sessions
    from pybmq.faststream.message import Delivery, Outcome
    from pybmq.faststream.response import BlazingMQPublishCommand, BlazingMQResponse
    from pybmq.faststream.router import BlazingMQRoute, BlazingMQRoutePublisher, BlazingMQRouter
    from pybmq.faststream.testing import TestBlazingMQBroker
except ImportError as exc:  # pragma: no cover - depends on the environment
    if find_spec("faststream") is not None:
        raise
    raise ImportError("pybmq.faststream needs FastStream: pip install 'pybmq[faststream]'") from exc

__all__ = [
    "BlazingMQBroker",
    "BlazingMQMessage",
    "BlazingMQPublishCommand",
    "BlazingMQResponse",
    "BlazingMQRoute",
    "BlazingMQRoutePublisher",
    "BlazingMQRouter",
    "Delivery",
    "Outcome",
    "Sessions",
    "TestBlazingMQBroker",
]
