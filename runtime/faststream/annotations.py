"""Handler parameter annotations, as FastStream's brokers have them:
``async def handle(body: Order, message: BlazingMQMessage, broker: BlazingMQBroker)``."""

from __future__ import annotations

from typing import Annotated

from faststream._internal.context import Context
from faststream.annotations import ContextRepo, Logger
from faststream.params import NoCast
from pybmq.faststream.broker import BlazingMQBroker as _Broker
from pybmq.faststream.broker import Sessions as _Sessions
from pybmq.faststream.message import BlazingMQMessage as _Message

__all__ = ["BlazingMQBroker", "BlazingMQMessage", "ContextRepo", "Logger", "NoCast", "Sessions"]

BlazingMQMessage = Annotated[_Message, Context("message")]
BlazingMQBroker = Annotated[_Broker, Context("broker")]
Sessions = Annotated[_Sessions, Context("broker._connection")]
