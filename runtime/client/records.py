"""The records the client engine keeps per request, post and queue, and its protocol constants."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from pybmq._version import __version__
from pybmq.client.dedup import DedupWindow
from pybmq.client.fsm import (
    HEALTH_TRANSITIONS,
    QUEUE_TRANSITIONS,
    REMOTE_QUEUE_TRANSITIONS,
    HealthInput,
    HealthState,
    QueueInput,
    QueueState,
    RemoteQueueInput,
    RemoteQueueState,
    step,
)
from pybmq.client.options import QueueOptions
from pybmq.client.stats import QueueCounters
from pybmq.generated.wire_codec import (
    PROTOCOL_VERSION as PROTOCOL_VERSION,  # the engine's parts take it from here
)
from pybmq.generated.wire_codec import (
    CompressionAlgorithmType,
    QueueFlags,
)
from pybmq.wire.properties import MessageProperties

__all__ = [
    "CONFIGURE_RESPONSES",
    "EXPECTED_RESPONSE",
    "FEATURES_MPS",
    "FEATURE_CONFIGURE_STREAM",
    "FLAG_ACK",
    "FLAG_READ",
    "FLAG_WRITE",
    "SDK_VERSION",
    "ZLIB",
    "AckBatch",
    "PendingPut",
    "PendingRequest",
    "PutRun",
    "QueueRecord",
    "Req",
    "Sent",
]

# sdkVersion as the C++ SDK writes it: major*10000 + minor*100 + patch.
SDK_VERSION = int("".join(f"{int(p):02d}" for p in __version__.split(".")[:3]))
FEATURES_MPS = "MPS:MESSAGE_PROPERTIES_EX"

# bmqt::QueueFlags bits, as plain ints (IntFlag arithmetic is slow on the hot path).
FLAG_READ = int(QueueFlags.READ)
FLAG_WRITE = int(QueueFlags.WRITE)
FLAG_ACK = int(QueueFlags.ACK)
ZLIB = CompressionAlgorithmType.ZLIB


class Req:
    """Why a control request was sent, so its response (or its timeout) lands in the right place."""

    OPEN = "openQueue"
    CONFIGURE_OPEN = "configureStream (open)"
    CONFIGURE = "configureStream"
    CONFIGURE_CLOSE = "configureStream (close)"
    CLOSE = "closeQueue"
    CLOSE_ABANDONED = "closeQueue (after a late open)"
    DISCONNECT = "disconnect"
    REOPEN = "openQueue (reopen)"
    REOPEN_CONFIGURE = "configureStream (reopen)"
    SUSPEND = "configureStream (suspend)"
    RESUME = "configureStream (resume)"


CONFIGURE_RESPONSES = ("configure_stream_response", "configure_queue_stream_response")
EXPECTED_RESPONSE: dict[str, tuple[str, ...]] = {
    Req.OPEN: ("open_queue_response",),
    Req.CONFIGURE_OPEN: CONFIGURE_RESPONSES,
    Req.CONFIGURE: CONFIGURE_RESPONSES,
    Req.CONFIGURE_CLOSE: CONFIGURE_RESPONSES,
    Req.CLOSE: ("close_queue_response",),
    Req.CLOSE_ABANDONED: ("close_queue_response",),
    Req.DISCONNECT: ("disconnect_response",),
    Req.REOPEN: ("open_queue_response",),
    Req.REOPEN_CONFIGURE: CONFIGURE_RESPONSES,
    Req.SUSPEND: CONFIGURE_RESPONSES,
    Req.RESUME: CONFIGURE_RESPONSES,
}
# A broker listing this feature takes ConfigureStream (subscriptions); older ones only
# ConfigureQueueStream (flat flow-control parameters).
FEATURE_CONFIGURE_STREAM = "CONFIGURE_STREAM"


@dataclass(slots=True)
class PendingRequest:
    kind: str
    deadline: float
    queue_id: int | None
    op_id: int | None


class PutRun:
    """Posts buffered for the next PUT event that leave in one builder call: to one queue, with
    one properties object, the same ACK request and the same compression decision. A post that
    shares all four with the run before it joins it (a loop posting to one queue makes one run),
    and a batch of ``post_many`` is one. Once sent, the run keeps only what a retransmission
    needs of it (its queue, properties and flags), not its payloads."""

    __slots__ = ("ack", "compress", "guids", "payloads", "properties", "queue_id")

    def __init__(
        self,
        queue_id: int,
        properties: MessageProperties | None,
        ack: bool,
        compress: bool,
        guids: list[bytes],
        payloads: list[bytes],
    ) -> None:
        self.queue_id = queue_id  # the queue handle
        self.properties = properties
        self.ack = ack  # the broker is asked for an ACK of each
        self.compress = compress
        self.guids = guids
        self.payloads = payloads

    def takes(
        self, queue_id: int, properties: MessageProperties | None, ack: bool, compress: bool
    ) -> bool:
        """Whether a post with these may join the run."""
        return (
            self.queue_id == queue_id
            and self.properties is properties
            and self.ack == ack
            and self.compress == compress
        )

    def sent(self) -> None:
        """Its PUT event left: the payloads are no longer held here."""
        self.guids = []
        self.payloads = []


class Sent(NamedTuple):
    """What a retransmission of one post needs beside its run: its GUID and its payload."""

    guid: bytes
    payload: bytes


class PendingPut:
    """One unacknowledged post; kept small because there can be millions in flight."""

    __slots__ = ("batch", "context", "run", "sent")

    def __init__(self, run: PutRun, context: object, sent: Sent | None) -> None:
        self.run = run  # its queue, properties and flags
        self.context = context
        self.sent = sent  # kept to retransmit it (same GUID) after a reconnect
        self.batch: AckBatch | None = None  # set when the post leaves in a PUT event


class AckBatch:
    """The posts that left in one flush share one ACK deadline. ``remaining`` counts those still
    unacknowledged, so a fully acknowledged batch is dropped at once instead of holding its
    GUIDs until the deadline. ``kept`` is the payload bytes kept for retransmission: they
    count against the byte budget until the batch's last ACK (one subtraction per batch, not
    one per ACK)."""

    __slots__ = ("deadline", "guids", "kept", "remaining")

    def __init__(self, deadline: float, guids: list[bytes], kept: int = 0) -> None:
        self.deadline = deadline
        self.guids = guids
        self.remaining = len(guids)
        self.kept = kept


class QueueRecord:
    """What the engine knows about one open(ing) queue: our state and the broker's last known."""

    __slots__ = (
        "app_id",
        "base_uri",
        "counters",
        "dedup",
        "deferred_options",
        "flags",
        "health",
        "op_id",
        "op_timeout",
        "options",
        "qid",
        "queue_id",
        "remote",
        "state",
        "sub_id",
        "subscription_ids",
        "uri",
    )

    def __init__(
        self, queue_id: int, qid: int, uri: str, app_id: str | None, sub_id: int, flags: int
    ) -> None:
        self.queue_id = queue_id  # our handle for this open; unique in the session
        self.qid = qid  # the wire queue id: shared by every appId of one queue URI
        self.base_uri = uri
        # What goes on the wire (and what users see): the URI with its ?id= when there is one.
        uri = f"{uri}?id={app_id}" if app_id is not None else uri
        self.uri = uri
        self.app_id = app_id
        self.sub_id = sub_id
        self.flags = flags
        self.options = QueueOptions()
        self.state = QueueState.CLOSED
        self.remote = RemoteQueueState.CLOSED
        self.op_id: int | None = None  # the user operation waiting on this queue, if any
        # That operation's own timeout for each of its requests (None: the session's).
        self.op_timeout: float | None = None
        self.subscription_ids: list[int] = []
        self.health = HealthState.ACTIVE
        self.counters = QueueCounters()  # stats: messages and bytes in and out, latencies
        # A configure made while suspended: kept, and sent when the queue resumes.
        self.deferred_options: QueueOptions | None = None
        # The GUIDs recently delivered (``options.dedup_window``; None: off), kept across
        # reconnects: the consumer (re)builds it from ``options`` as PUSHes come.
        self.dedup: DedupWindow | None = None

    @property
    def readable(self) -> bool:
        return bool(self.flags & FLAG_READ)

    @property
    def writable(self) -> bool:
        return bool(self.flags & FLAG_WRITE)

    def step(self, event: QueueInput) -> None:
        self.state = step(f"queue {self.uri}", QUEUE_TRANSITIONS, self.state, event)

    def remote_step(self, event: RemoteQueueInput) -> None:
        self.remote = step(
            f"queue {self.uri} (broker side)", REMOTE_QUEUE_TRANSITIONS, self.remote, event
        )

    def health_step(self, event: HealthInput) -> None:
        self.health = step(f"queue {self.uri} health", HEALTH_TRANSITIONS, self.health, event)

    @property
    def request_timeout(self) -> float | None:
        """How long each request of the user operation in flight may wait for its answer (None:
        the session's timeout for its kind)."""
        return self.op_timeout if self.op_id is not None else None

    @property
    def suspended(self) -> bool:
        return self.health is not HealthState.ACTIVE

    def __repr__(self) -> str:
        return f"<Queue {self.queue_id} {self.uri} {self.state.value}/{self.remote.value}>"
