"""What a subscriber receives: ``Delivery`` (FastStream's raw message: one delivery of a
BlazingMQ message, with its attempt number) and ``BlazingMQMessage`` (the ``StreamMessage``
handlers see), whose ``ack``/``nack``/``reject`` are mapped onto BlazingMQ's one settlement, the
CONFIRM:

- ``ack()`` confirms the message.
- ``nack()`` asks for another attempt: the subscriber hands the same delivery to its handler
  again (the message stays unconfirmed on the broker meanwhile, so a crash in between gets it
  redelivered to another consumer), up to the subscriber's ``max_attempts``; the last failed
  attempt is settled as ``reject()``.
- ``reject()`` posts the message to the subscriber's ``dead_letter_queue`` when it names one
  (waiting for the broker's ACK), then confirms it; without one the message is confirmed and
  dropped, with a warning in the log. If the dead-letter post fails the message is left
  unconfirmed: the broker redelivers it when this consumer goes away.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING

from faststream.message import StreamMessage
from pybmq.wire.properties import MessageProperties, PropertyValue

__all__ = ["IN_MEMORY", "NO_PROPERTIES", "BlazingMQMessage", "Delivery", "Outcome", "Settler"]

if TYPE_CHECKING:
    from pybmq.client.aio_queue import ReceivedMessage
    from pybmq.client.subscriptions import Subscription

NO_PROPERTIES: Mapping[str, PropertyValue] = MessageProperties()


class Outcome(enum.Enum):
    """How a delivery ended (None on the delivery while it is being handled)."""

    CONFIRMED = "confirmed"
    RETRY = "retry"  # nacked with attempts left: handed to the handler again
    DEAD_LETTERED = "dead-lettered"  # posted to the dead-letter queue, then confirmed
    DROPPED = "dropped"  # rejected without a dead-letter queue: confirmed
    HELD = "held"  # the dead-letter post failed: left unconfirmed for redelivery


class Settler:
    """What settling a delivery does; a subscriber gives each delivery its own. This one is the
    in-memory form (``TestBlazingMQBroker``): it records the outcome and confirms nothing."""

    max_attempts = 1

    async def confirm(self, delivery: Delivery) -> None:
        delivery.outcome = Outcome.CONFIRMED

    async def reject(self, delivery: Delivery, reason: str = "") -> None:
        delivery.outcome = Outcome.DROPPED


IN_MEMORY = Settler()


class Delivery:
    """One delivery of a BlazingMQ message to a subscriber (FastStream's raw message).

    ``received`` is pybmq's ``ReceivedMessage`` (None for a message made in memory by
    ``TestBlazingMQBroker``); ``attempt`` counts this process's deliveries of it, from 1."""

    __slots__ = (
        "attempt",
        "guid",
        "outcome",
        "payload",
        "properties",
        "queue_uri",
        "received",
        "settler",
        "subscription",
    )

    def __init__(
        self,
        queue_uri: str,
        payload: bytes,
        properties: Mapping[str, PropertyValue],
        guid: bytes = b"",
        *,
        received: ReceivedMessage | None = None,
        subscription: Subscription | None = None,
        settler: Settler = IN_MEMORY,
    ) -> None:
        self.queue_uri = queue_uri
        self.payload = payload
        self.properties = properties
        self.guid = guid
        self.received = received
        self.subscription = subscription
        self.settler = settler
        self.attempt = 1
        self.outcome: Outcome | None = None

    @classmethod
    def of(cls, received: ReceivedMessage, settler: Settler) -> Delivery:
        """The delivery of a message pybmq received (a poison message has an empty payload and
        no properties: ``received.error`` says why)."""
        return cls(
            received.queue.uri,
            received.payload,
            received.properties,
            received.guid,
            received=received,
            subscription=received.subscription,
            settler=settler,
        )

    @property
    def settled(self) -> bool:
        """True once confirmed, dead-lettered, dropped or held (not while a retry is due)."""
        return self.outcome is not None and self.outcome is not Outcome.RETRY

    def __repr__(self) -> str:
        return (
            f"<Delivery {self.guid.hex() or '(in memory)'} attempt {self.attempt} "
            f"{len(self.payload)}B on {self.queue_uri}>"
        )


class BlazingMQMessage(StreamMessage[Delivery]):
    """A BlazingMQ message as a FastStream handler sees it; see the module docstring for what
    ``ack``, ``nack`` and ``reject`` do on BlazingMQ."""

    @property
    def properties(self) -> Mapping[str, PropertyValue]:
        """The message properties with their BlazingMQ types (``MessageProperties``: ask it
        ``type_of(name)``); ``headers`` holds the same values as a plain dict."""
        return self.raw_message.properties

    @property
    def queue_uri(self) -> str:
        """The queue URI the subscriber reads (with ``?id=`` for a fan-out app)."""
        return self.raw_message.queue_uri

    @property
    def attempt(self) -> int:
        """Which delivery of this message to this subscriber this is, from 1."""
        return self.raw_message.attempt

    async def ack(self) -> None:
        if self.committed is None:
            await _settle(self.raw_message, self.raw_message.settler.confirm)
        await super().ack()

    async def nack(self) -> None:
        if self.committed is None:
            delivery = self.raw_message
            if delivery.attempt < delivery.settler.max_attempts:
                delivery.outcome = Outcome.RETRY
            else:
                await _settle(delivery, _reject)
        await super().nack()

    async def reject(self) -> None:
        if self.committed is None:
            await _settle(self.raw_message, _reject)
        await super().reject()


async def _settle(delivery: Delivery, action: Callable[[Delivery], Awaitable[None]]) -> None:
    if not delivery.settled:
        await action(delivery)


def _reject(delivery: Delivery) -> Awaitable[None]:
    """Reject ``delivery``, naming the exception being handled as the reason (FastStream settles
    a failed handler's message while its exception is handled)."""
    error = sys.exc_info()[1]
    return delivery.settler.reject(delivery, f"{type(error).__name__}: {error}" if error else "")
