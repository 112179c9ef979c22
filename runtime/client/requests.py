"""Control requests in flight: each gets an rId and a deadline, and its answer (or its timeout)
is handed back with the kind of request it answers, so that the right handler takes it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from pybmq.client.options import SharedOptions
from pybmq.client.records import EXPECTED_RESPONSE, PendingRequest, Req
from pybmq.errors import BrokerError, ProtocolError
from pybmq.generated import bmqp_ctrlmsg as ctrl

__all__ = ["CLOSES_CHANNEL", "TIMEOUT_OF", "RequestTable"]

_MAX_RID = 2**31 - 1

# Which SessionOptions timeout bounds each kind of request (as bmqt::SessionOptions splits them).
TIMEOUT_OF: dict[str, str] = {
    Req.OPEN: "open",
    Req.CONFIGURE_OPEN: "open",
    Req.REOPEN: "open",
    Req.REOPEN_CONFIGURE: "open",
    Req.CONFIGURE: "configure",
    Req.SUSPEND: "configure",
    Req.RESUME: "configure",
    Req.CONFIGURE_CLOSE: "close",
    Req.CLOSE: "close",
    Req.CLOSE_ABANDONED: "close",
    Req.DISCONNECT: "disconnect",
}


# Requests whose timeout closes the channel (upstream 894fa9fbf: open, reopen and close).
CLOSES_CHANNEL = frozenset(
    (Req.OPEN, Req.CONFIGURE_OPEN, Req.REOPEN, Req.REOPEN_CONFIGURE, Req.CONFIGURE_CLOSE, Req.CLOSE)
)
_SUCCESS = ctrl.StatusCategory.E_SUCCESS


class RequestTable:
    """rId → the request waiting for its answer; rIds of abandoned opens, to undo them."""

    def __init__(
        self, send: Callable[[ctrl.ControlMessage, float], None], options: SharedOptions
    ) -> None:
        """``send(message, now)`` writes a control message (the data buffered before it goes
        first); ``options`` say how long each kind of request may wait for its answer."""
        self._send = send
        self._options = options
        self.pending: dict[int, PendingRequest] = {}
        # rId of a timed-out OpenQueue → its parameters, to undo the open if it succeeds late.
        self.abandoned_opens: dict[int, ctrl.QueueHandleParameters] = {}
        self._next_rid = 1

    def send(
        self,
        message: ctrl.ControlMessage,
        kind: str,
        queue_id: int | None,
        op_id: int | None,
        now: float,
        timeout: float | None = None,
    ) -> None:
        """Send ``message`` as a request of ``kind`` (for queue handle ``queue_id`` and user
        operation ``op_id``, when it has them), answered within ``timeout`` seconds (None: the
        session's timeout for that kind)."""
        rid = self._next_rid
        self._next_rid = rid + 1 if rid < _MAX_RID else 1
        message.r_id = rid
        if timeout is None:
            timeout = self._options.current.timeout(TIMEOUT_OF.get(kind, "request"))
        self.pending[rid] = PendingRequest(kind, now + timeout, queue_id, op_id)
        self._send(message, now)

    def answered(self, rid: int) -> PendingRequest | None:
        """The request ``rid`` answers (None: unknown, late, or abandoned)."""
        return self.pending.pop(rid, None)

    @staticmethod
    def refusal(request: PendingRequest, message: ctrl.ControlMessage) -> BrokerError | None:
        """The broker's refusal of ``request`` when ``message`` is a failed status, None when it
        is the response the request expects; ProtocolError for any other answer."""
        if message.selection == "status":
            status = message.status
            assert status is not None
            if status.category == _SUCCESS:
                return None
            return BrokerError(request.kind, status.category.name, status.code, status.message)
        expected = EXPECTED_RESPONSE[request.kind]
        if message.selection not in expected:
            raise ProtocolError(
                f"response to {request.kind} (rId {message.r_id}) is {message.selection}, "
                f"expected {' or '.join(expected)}",
                path="ControlMessage",
            )
        return None

    def expired(self, now: float) -> Iterator[tuple[int, PendingRequest]]:
        """Each request whose deadline passed, taken out as it is yielded (one that the
        handling of an earlier one removed is skipped)."""
        pending = self.pending
        for rid, request in list(pending.items()):
            if request.deadline <= now and rid in pending:
                del pending[rid]
                yield rid, request

    def only_disconnect_left(self) -> bool:
        return all(r.kind == Req.DISCONNECT for r in self.pending.values())

    def next_deadline(self) -> float | None:
        return min((r.deadline for r in self.pending.values()), default=None)

    def clear(self) -> list[PendingRequest]:
        """Forget every request (the connection is gone); returns them, to fail their ops."""
        requests = list(self.pending.values())
        self.pending.clear()
        self.abandoned_opens.clear()
        return requests

    def __bool__(self) -> bool:
        return bool(self.pending)
