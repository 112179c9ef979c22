"""What leaves for the broker, in order: the posts and confirms buffered since the last flush,
and every control request after the data buffered before it (a post made before a close reaches
the broker first), in the control encoding the negotiation settled."""

from __future__ import annotations

from pybmq.client.consuming import Consumer
from pybmq.client.handshake import Negotiated
from pybmq.client.publishing import Publisher
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.wire.channel import Channel
from pybmq.wire.control import encode_control

__all__ = ["Output"]


class Output:
    """The engine's outgoing side (see the module docstring)."""

    def __init__(
        self, channel: Channel, publisher: Publisher, consumer: Consumer, encoding: str
    ) -> None:
        self._channel = channel
        self._publisher = publisher
        self._consumer = consumer
        self.encoding = encoding  # of control messages: the negotiation's, then the broker's

    def negotiated(self, outcome: Negotiated) -> None:
        self.encoding = outcome.encoding

    def flush(self, now: float) -> None:
        """Posts, then confirms, buffered since the last flush become events."""
        out = self._channel.out
        self._publisher.flush(out, now)
        self._consumer.flush(out)

    def send_control(self, message: ctrl.ControlMessage, now: float) -> None:
        # Data buffered before this request must reach the broker before it (post, then close).
        self.flush(now)
        self._channel.send(encode_control(message, self.encoding))
