"""Control requests: rIds, deadlines, and the Disconnect that ends a graceful stop."""

from __future__ import annotations

import logging

from pybmq.client.consuming import Consuming
from pybmq.client.fsm import (
    SessionState,
)
from pybmq.client.records import (
    PendingRequest,
    Req,
)
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.wire.control import (
    encode_control,
)

log = logging.getLogger("pybmq.client.engine")


class Requests(Consuming):
    """Control requests: rIds, deadlines, and the Disconnect that ends a graceful stop."""

    def _request(
        self, message: ctrl.ControlMessage, kind: str, queue_id: int | None, op_id: int | None
    ) -> None:
        rid = self._next_rid
        self._next_rid = self._next_rid + 1 if self._next_rid < 2**31 - 1 else 1
        message.r_id = rid
        self._requests[rid] = PendingRequest(
            kind, self._now + self.options.request_timeout, queue_id, op_id
        )
        self._send_control(message)

    def _send_control(self, message: ctrl.ControlMessage | ctrl.NegotiationMessage) -> None:
        # Data buffered before this request must reach the broker before it (post, then close).
        self._flush_data()
        self._out.append(encode_control(message, self.encoding))

    def _maybe_disconnect(self) -> None:
        """Send Disconnect once no queue is mid-request (the broker then sends nothing more)."""
        if self.state is not SessionState.STOPPING or self._disconnect_sent:
            return
        if any(r.kind != Req.DISCONNECT for r in self._requests.values()):
            return
        self._disconnect_sent = True
        self._request(ctrl.ControlMessage(disconnect=ctrl.Disconnect()), Req.DISCONNECT, None, None)
