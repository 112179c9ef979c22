"""Subscriptions as first-class objects (``bmqt::Subscription`` in the C++ SDK, ``Subscription`` in
the Java SDK): an expression with its own consumer priority and flow control, and the one place
that turns a queue's subscriptions into the ``ConfigureStream`` subscription list.

A ``Subscription`` is also the handle a received message carries (``message.subscription``):
the object the application put in ``QueueOptions.subscriptions``. A subscription keeps its
stream id across configures (a configure that keeps it changes it in place on the broker; one
that leaves it out removes it), as the C++ SDK keeps a ``SubscriptionHandle`` stable.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pybmq.errors import UsageError
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.wire.expressions import (
    BROKER_LIMITS,
    ExpressionLimitError,
    check_limits,
    check_syntax,
)

if TYPE_CHECKING:
    from pybmq.client.options import QueueOptions

__all__ = [
    "MAX_EXPRESSION_LENGTH",
    "MAX_SUBSCRIPTIONS",
    "Subscription",
    "as_subscriptions",
    "effective",
    "wire_subscriptions",
]

_INT32 = 2**31
# Bounds that keep a ConfigureStream (and the broker's echo of it) well under the 1 MiB a control
# event may take (pybmq.wire.framing.MAX_CONTROL_EVENT_SIZE).
MAX_SUBSCRIPTIONS = 1000  # per queue
# Characters of one expression: the broker's evaluator refuses longer ones (and its operator and
# property limits, pybmq.wire.expressions.BROKER_LIMITS, are checked here too).
MAX_EXPRESSION_LENGTH = BROKER_LIMITS.max_length


@dataclass(frozen=True)
class Subscription:
    """Which messages of a queue a reader wants (``expression``; empty = all of them), and the
    consumer priority and flow control (max unconfirmed messages/bytes) of this subscription
    alone. A field left None takes the value of the queue's ``QueueOptions``, as in the C++ SDK.

    ``name`` is for the application only (it tells handles apart in logs and in ``repr``); it
    never goes on the wire."""

    expression: str = ""
    consumer_priority: int | None = None
    max_unconfirmed_messages: int | None = None
    max_unconfirmed_bytes: int | None = None
    name: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.expression, str):
            raise UsageError(f"a subscription expression is a str, not {self.expression!r}")
        if len(self.expression) > MAX_EXPRESSION_LENGTH:
            raise ExpressionLimitError(
                "e_TOO_LONG",
                f"a subscription expression has at most {MAX_EXPRESSION_LENGTH} characters",
            )
        check_limits(self.expression)  # a broker would not apply it: the reader would get nothing
        if self.expression:  # "" is no expression (every message); " " or "x >" is refused
            check_syntax(self.expression)  # as the official SDKs compile it before sending
        for field_name in ("max_unconfirmed_messages", "max_unconfirmed_bytes"):
            value = getattr(self, field_name)
            if value is not None and value < 0:
                raise UsageError(f"subscription {field_name} must be >= 0")
        if self.consumer_priority is not None and not -_INT32 < self.consumer_priority < _INT32:
            raise UsageError("subscription consumer_priority must fit in a signed 32-bit int")

    def __repr__(self) -> str:
        parts = [repr(self.expression)]
        for label in ("consumer_priority", "max_unconfirmed_messages", "max_unconfirmed_bytes"):
            value = getattr(self, label)
            if value is not None:
                parts.append(f"{label}={value}")
        if self.name:
            parts.append(f"name={self.name!r}")
        return f"Subscription({', '.join(parts)})"


def as_subscriptions(values: Sequence[str | Subscription]) -> tuple[Subscription, ...]:
    """QueueOptions' subscriptions: a bare expression string is a Subscription with the queue's
    priority and flow control."""
    if len(values) > MAX_SUBSCRIPTIONS:
        raise UsageError(f"a queue takes at most {MAX_SUBSCRIPTIONS} subscriptions")
    out = []
    for value in values:
        if isinstance(value, Subscription):
            out.append(value)
        elif isinstance(value, str):
            out.append(Subscription(value))
        else:
            raise UsageError(f"a subscription is a Subscription or an expression str: {value!r}")
    return tuple(out)


def effective(subscription: Subscription, defaults: QueueOptions) -> tuple[int, int, int]:
    """(priority, max unconfirmed messages, max unconfirmed bytes) of ``subscription``."""
    return (
        (
            subscription.consumer_priority
            if subscription.consumer_priority is not None
            else defaults.consumer_priority
        ),
        (
            subscription.max_unconfirmed_messages
            if subscription.max_unconfirmed_messages is not None
            else defaults.max_unconfirmed_messages
        ),
        (
            subscription.max_unconfirmed_bytes
            if subscription.max_unconfirmed_bytes is not None
            else defaults.max_unconfirmed_bytes
        ),
    )


def wire_subscriptions(
    subscriptions: Sequence[Subscription],
    defaults: QueueOptions,
    previous: Mapping[Subscription, int],
    new_id: Callable[[], int],
) -> tuple[list[ctrl.Subscription], list[int]]:
    """The ConfigureStream subscription list and the stream id of each subscription (in order).
    A subscription already configured (in ``previous``) keeps its id; no subscriptions at all is
    one catch-all subscription with the queue's own settings."""
    wanted = subscriptions or (Subscription(),)
    out: list[ctrl.Subscription] = []
    ids: list[int] = []
    taken: set[int] = set()
    for subscription in wanted:
        sid = previous.get(subscription)
        if sid is None or sid in taken:  # two equal subscriptions still get two streams
            sid = new_id()
        taken.add(sid)
        ids.append(sid)
        priority, messages, size = effective(subscription, defaults)
        text = subscription.expression
        out.append(
            ctrl.Subscription(
                s_id=sid,
                expression=ctrl.Expression(
                    version=(
                        ctrl.ExpressionVersion.E_VERSION_1
                        if text
                        else ctrl.ExpressionVersion.E_UNDEFINED
                    ),
                    text=text,
                ),
                consumers=[
                    ctrl.ConsumerInfo(
                        max_unconfirmed_messages=messages,
                        max_unconfirmed_bytes=size,
                        consumer_priority=priority,
                        consumer_priority_count=1,
                    )
                ],
            )
        )
    return out, ids
