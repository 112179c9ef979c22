"""Control requests in flight: each gets an rId and a deadline, and its answer (or its timeout)
is handed back with the kind of request it answers, so that the right handler takes it. A request
made while there is no connection (an open during a reconnect) is held, deadline running, until
the session is restored, as the C++ SDK buffers it.
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
        # Requests made while reconnecting, by queue handle: (message, request), sent in order
        # once the session is restored; they outlive further drops (nothing of them went out).
        self.held: dict[int, tuple[ctrl.ControlMessage, PendingRequest]] = {}

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

    def hold(
        self,
        message: ctrl.ControlMessage,
        kind: str,
        queue_id: int,
        now: float,
        timeout: float | None = None,
    ) -> None:
        """Keep ``message`` for queue handle ``queue_id`` until :meth:`send_held`; its
        ``timeout`` runs from now, so it fails then if the session is not back."""
        if timeout is None:
            timeout = self._options.current.timeout(TIMEOUT_OF.get(kind, "request"))
        self.held[queue_id] = (message, PendingRequest(kind, now + timeout, queue_id, None))

    def send_held(self, now: float) -> None:
        """Send every held request, each with what is left of its timeout."""
        held, self.held = self.held, {}
        for message, request in held.values():
            assert request.queue_id is not None
            timeout = max(request.deadline - now, 0.0)
            self.send(message, request.kind, request.queue_id, request.op_id, now, timeout)

    def expired_held(self, now: float) -> list[PendingRequest]:
        """The held requests whose deadline passed, taken out."""
        expired = [request for _m, request in self.held.values() if request.deadline <= now]
        for request in expired:
            assert request.queue_id is not None
            del self.held[request.queue_id]
        return expired

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
        held = (request.deadline for _m, request in self.held.values())
        return min((*(r.deadline for r in self.pending.values()), *held), default=None)

    def clear(self) -> list[PendingRequest]:
        """Forget every request sent (the connection is gone); returns them, to fail their ops.
        Held requests stay held."""
        requests = list(self.pending.values())
        self.pending.clear()
        self.abandoned_opens.clear()
        return requests

    def __bool__(self) -> bool:
        return bool(self.pending)  # held requests wait for a connection, not for an answer
