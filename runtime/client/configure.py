"""Reconfiguring a queue's stream on the broker: ConfigureStream (or, to an older broker,
ConfigureQueueStream) with the queue's subscriptions and their ids, each stream's credit, and
the request itself.

One part, ``StreamConfigurer``, held by the two parts that reconfigure queues: the queue
operations (open, configure, close, reopen: :mod:`pybmq.client.queues`) and host health
(suspend, resume: :mod:`pybmq.client.suspension`).
"""

from __future__ import annotations

from pybmq.client.credit import CreditLedger
from pybmq.client.options import QueueOptions
from pybmq.client.queue_table import QueueTable
from pybmq.client.records import QueueRecord, Req
from pybmq.client.requests import RequestTable
from pybmq.client.subscriptions import Subscription, effective, wire_subscriptions
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.generated.wire_codec import DEFAULT_APP_ID

__all__ = ["StreamConfigurer"]

# The configure that opens or reopens a queue suspended for host health sends nothing.
_EMPTY_WHEN_SUSPENDED = (Req.CONFIGURE_OPEN, Req.REOPEN_CONFIGURE)
# An empty ConfigureQueueStream's consumer priority (the C++ SDK's "not consuming").
_NO_PRIORITY = -(2**31)


class StreamConfigurer:
    """Sends a queue's stream configuration (see the module docstring)."""

    def __init__(self, table: QueueTable, requests: RequestTable, credit: CreditLedger) -> None:
        self._table = table
        self._requests = requests
        self._credit = credit
        # The broker takes ConfigureStream (subscriptions); older ones ConfigureQueueStream.
        self.broker_configure_stream = True

    def send(
        self,
        queue: QueueRecord,
        kind: str,
        options: QueueOptions | None,
        now: float,
        *,
        empty: bool = False,
    ) -> None:
        """Configure ``queue``'s stream with ``options`` (None: its own); ``empty`` sends no
        subscription (the broker stops delivering)."""
        if kind in _EMPTY_WHEN_SUSPENDED and queue.suspended:
            empty = True
        options = options or queue.options
        subscriptions: list[ctrl.Subscription] = []
        ids: list[int] = []
        table = self._table
        if queue.readable and not empty:
            # Before the first configure is answered there are no ids yet (zip stops short).
            previous = dict(
                zip(queue.options.subscription_objects, queue.subscription_ids, strict=False)
            )
            if not queue.options.subscriptions and queue.subscription_ids:
                previous = {Subscription(): queue.subscription_ids[0]}
            subscriptions, ids = wire_subscriptions(
                options.subscription_objects, options, previous, table.new_stream_id
            )
            table.pending_subscriptions[queue.queue_id] = (ids, options)
        if queue.readable:
            # Each stream's own credit: a subscription's limits (or the queue's), per stream id.
            limits: dict[int, tuple[int, int]] = {}
            if self.broker_configure_stream:
                wanted = options.subscription_objects or (Subscription(),)
                for sid, subscription in zip(ids, wanted, strict=False):
                    _, messages, size = effective(subscription, options)
                    limits[sid] = (messages, size)
            elif not empty:
                limits[queue.sub_id] = (
                    options.max_unconfirmed_messages,
                    options.max_unconfirmed_bytes,
                )
            self._credit.configuring(queue.queue_id, limits)
        if self.broker_configure_stream:
            message = ctrl.ControlMessage(
                configure_stream=ctrl.ConfigureStream(
                    q_id=queue.qid,
                    stream_parameters=ctrl.StreamParameters(
                        app_id=queue.app_id or DEFAULT_APP_ID, subscriptions=subscriptions
                    ),
                )
            )
        else:
            message = ctrl.ControlMessage(
                configure_queue_stream=ctrl.ConfigureQueueStream(
                    q_id=queue.qid, stream_parameters=_queue_stream(queue, options, empty)
                )
            )
        self._requests.send(message, kind, queue.queue_id, None, now, queue.request_timeout)


def _queue_stream(
    queue: QueueRecord, options: QueueOptions, empty: bool
) -> ctrl.QueueStreamParameters:
    """An older broker's flat flow-control parameters (all zero: deliver nothing)."""
    flowing = queue.readable and not empty
    return ctrl.QueueStreamParameters(
        sub_id_info=(
            ctrl.SubQueueIdInfo(sub_id=queue.sub_id, app_id=queue.app_id)
            if queue.app_id is not None
            else None
        ),
        max_unconfirmed_messages=options.max_unconfirmed_messages if flowing else 0,
        max_unconfirmed_bytes=options.max_unconfirmed_bytes if flowing else 0,
        consumer_priority=options.consumer_priority if flowing else _NO_PRIORITY,
        consumer_priority_count=1 if flowing else 0,
    )
