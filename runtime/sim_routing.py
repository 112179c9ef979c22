"""Which queues the simulator knows, and how each routes messages: decided by the domain name.

A real broker reads domain configs; the simulator keeps one rule so tests need no setup: the last
label of the domain picks the routing mode, like the domains of BlazingMQ's own examples
(``bmq.test.mem.priority``, ``bmq.test.mem.fanout``, ``bmq.test.mem.broadcast``). Any other
domain does not exist, and opening a queue in it fails the way a broker fails an unknown domain.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

# The appIds every fan-out queue is configured with (as in the upstream example domain).
FANOUT_APP_IDS: tuple[str, ...] = ("foo", "bar", "baz")
DEFAULT_APP_ID = "__default"

_URI = re.compile(
    r"^bmq://(?P<domain>[A-Za-z0-9_.\-]+?)(?:~(?P<tier>[A-Za-z0-9_\-]+))?/"
    r"(?P<queue>[A-Za-z0-9_.~\-]+)(?:\?id=(?P<app>[A-Za-z0-9_.\-]+))?$"
)


class RoutingMode(enum.Enum):
    PRIORITY = "priority"  # highest-priority consumers, round-robin among them
    FANOUT = "fanout"  # one copy per appId; each appId behaves like a priority queue
    BROADCAST = "broadcast"  # every current consumer of the highest priority, at most once


# RoutingConfigurationFlags (bmqp_ctrlmsg.xsd): bit = 1 << bdem:id.
AT_MOST_ONCE = 1 << 0
DELIVER_CONSUMER_PRIORITY = 1 << 1
DELIVER_ALL = 1 << 2
HAS_MULTIPLE_SUB_STREAMS = 1 << 3

ROUTING_FLAGS = {
    RoutingMode.PRIORITY: DELIVER_CONSUMER_PRIORITY,
    RoutingMode.FANOUT: DELIVER_CONSUMER_PRIORITY | HAS_MULTIPLE_SUB_STREAMS,
    RoutingMode.BROADCAST: AT_MOST_ONCE | DELIVER_ALL | DELIVER_CONSUMER_PRIORITY,
}


@dataclass(frozen=True)
class QueueUri:
    """A parsed ``bmq://domain[~tier]/queue[?id=appId]``."""

    text: str
    domain: str
    queue: str
    app_id: str | None

    @property
    def canonical(self) -> str:
        """The queue's identity: domain and name, without tier or appId."""
        return f"bmq://{self.domain}/{self.queue}"


def parse_queue_uri(text: str) -> QueueUri | None:
    """The parts of a queue URI, or None when it is not one."""
    match = _URI.match(text)
    if match is None:
        return None
    return QueueUri(text, match["domain"], match["queue"], match["app"])


def routing_mode(domain: str) -> RoutingMode | None:
    """The routing mode a domain name selects, or None for a domain that does not exist."""
    last = domain.rsplit(".", 1)[-1]
    for mode in RoutingMode:
        if last == mode.value:
            return mode
    return None
