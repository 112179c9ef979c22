"""Which queues the simulator knows, and how each routes messages: decided by the domain name.

A real broker reads domain configs; the simulator keeps one rule so tests need no setup: the last
label of the domain picks the routing mode, like the domains of BlazingMQ's own examples
(``bmq.test.mem.priority``, ``bmq.test.mem.fanout``, ``bmq.test.mem.broadcast``). Any other
domain does not exist, and opening a queue in it fails the way a broker fails an unknown domain.
"""

from __future__ import annotations

import enum

from pybmq.generated import bmqp_ctrlmsg as ctrl

__all__ = [
    "AT_MOST_ONCE",
    "DELIVER_ALL",
    "DELIVER_CONSUMER_PRIORITY",
    "FANOUT_APP_IDS",
    "HAS_MULTIPLE_SUB_STREAMS",
    "ROUTING_FLAGS",
    "RoutingMode",
    "routing_mode",
]

# The appIds every fan-out queue is configured with (as in the upstream example domain).
FANOUT_APP_IDS: tuple[str, ...] = ("foo", "bar", "baz")


class RoutingMode(enum.Enum):
    PRIORITY = "priority"  # highest-priority consumers, round-robin among them
    FANOUT = "fanout"  # one copy per appId; each appId behaves like a priority queue
    BROADCAST = "broadcast"  # every current consumer of the highest priority, at most once


# RoutingConfigurationFlags (bmqp_ctrlmsg.xsd): each flag's bit is 1 << its bdem:id.
_FLAG = ctrl.RoutingConfigurationFlags
AT_MOST_ONCE = 1 << _FLAG.E_AT_MOST_ONCE
DELIVER_CONSUMER_PRIORITY = 1 << _FLAG.E_DELIVER_CONSUMER_PRIORITY
DELIVER_ALL = 1 << _FLAG.E_DELIVER_ALL
HAS_MULTIPLE_SUB_STREAMS = 1 << _FLAG.E_HAS_MULTIPLE_SUB_STREAMS

ROUTING_FLAGS = {
    RoutingMode.PRIORITY: DELIVER_CONSUMER_PRIORITY,
    RoutingMode.FANOUT: DELIVER_CONSUMER_PRIORITY | HAS_MULTIPLE_SUB_STREAMS,
    RoutingMode.BROADCAST: AT_MOST_ONCE | DELIVER_ALL | DELIVER_CONSUMER_PRIORITY,
}


def routing_mode(domain: str) -> RoutingMode | None:
    """The routing mode a domain name selects, or None for a domain that does not exist. A
    last label ``sc`` (strong consistency, as in ``bmq.test.persistent.priority.sc``) is passed
    over: it asks a cluster for replication, which the simulator has none of."""
    last = domain.removesuffix(".sc").rsplit(".", 1)[-1]
    for mode in RoutingMode:
        if last == mode.value:
            return mode
    return None
