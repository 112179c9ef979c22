"""What a cluster says about itself: ``CLUSTERS CLUSTER <name> STATUS`` asked over an admin
connection, decoded with the generated ``mqbcmd`` types, and read as who leads, who is primary of
each partition and which nodes are available.

    view = node_view("tcp://127.0.0.1:40123", "pybmq")
    view.leader, view.leader_active, view.primaries      # 2, True, (2,)

A member answers a ``clusterStatus`` (its elector's view, every partition's primary, each node's
status); a proxy answers a ``clusterProxyStatus`` (the node it forwards to) once it has made its
proxy of the cluster, which it does on the first use of one of its domains. Nodes are named as
the broker writes them, ``[name, id]``; the views keep the ids.

The admin connection is blocking and short-lived (one command, bounded in time): the engine is
``pybmq.client.admin.AdminEngine``, as ``pybmq admin`` drives it from asyncio.
"""

from __future__ import annotations

import re
import socket
import time
from dataclasses import dataclass

from pybmq.client.admin import AdminEngine
from pybmq.errors import PybmqError, RequestTimeoutError, SessionStoppedError
from pybmq.generated import mqbcmd, mqbcmd_json
from pybmq.uri import parse_broker_url

__all__ = [
    "ClusterStatusError",
    "NodeView",
    "ProxyView",
    "admin_command",
    "cluster_status",
    "node_id",
    "node_view",
    "proxy_view",
]

_NODE = re.compile(r"\[(?P<name>.*), (?P<id>-?\d+)\]")
_READ = 1 << 16


class ClusterStatusError(PybmqError):
    """The broker answered the status command with an error, or with no status."""


def node_id(description: str | None) -> int | None:
    """``[node2, 2]`` -> 2; None for none (the broker writes ``** none **``, or nothing)."""
    match = _NODE.fullmatch(description or "")
    return int(match["id"]) if match else None


@dataclass(frozen=True)
class NodeView:
    """One member's view of its cluster."""

    node_id: int | None  # the member that answered
    leader: int | None
    leader_active: bool
    primaries: tuple[int | None, ...]  # per partition
    primaries_active: tuple[bool, ...]
    available: frozenset[int]  # the nodes it sees available, itself included
    healthy: bool  # its cluster monitor's verdict, made at intervals (not needed to serve)

    @classmethod
    def of(cls, status: mqbcmd.ClusterStatus) -> NodeView:
        """Read a member's decoded ``clusterStatus``."""
        elector = status.elector_info
        partitions = status.partitions_info.partitions
        return cls(
            node_id=node_id(status.self_node_description),
            leader=node_id(elector.leader_node),
            leader_active=elector.leader_status == mqbcmd.LeaderStatus.ACTIVE,
            primaries=tuple(node_id(p.primary_node) for p in partitions),
            primaries_active=tuple(
                p.primary_status == mqbcmd.PrimaryStatus.ACTIVE for p in partitions
            ),
            available=_available(status.node_statuses),
            healthy=status.is_healthy,
        )

    @property
    def settled(self) -> bool:
        """An active leader, every partition with an active primary, and itself available."""
        return (
            self.leader is not None
            and self.leader_active
            and bool(self.primaries)
            and all(p is not None for p in self.primaries)
            and all(self.primaries_active)
            and self.node_id in self.available
        )


@dataclass(frozen=True)
class ProxyView:
    """A proxy's view of the cluster it fronts."""

    active_node: int | None  # the member it forwards to
    available: frozenset[int]
    healthy: bool  # as for a member: its monitor's verdict, at intervals

    @classmethod
    def of(cls, status: mqbcmd.ClusterProxyStatus) -> ProxyView:
        """Read a proxy's decoded ``clusterProxyStatus``."""
        return cls(
            active_node=node_id(status.active_node_description),
            available=_available(status.node_statuses),
            healthy=status.is_healthy,
        )


def _available(statuses: mqbcmd.NodeStatuses) -> frozenset[int]:
    return frozenset(
        ident
        for node in statuses.nodes
        if node.status == mqbcmd.NodeStatus.E_AVAILABLE
        and (ident := node_id(node.description)) is not None
    )


def admin_command(url: str, command: str, timeout: float = 10.0) -> str:
    """Send one admin command to the broker at ``url`` and return its answer's text, within
    ``timeout`` seconds in all (RequestTimeoutError after; SessionStoppedError if the broker
    cannot be reached or hangs up)."""
    host, port = parse_broker_url(url)
    deadline = time.monotonic() + timeout
    engine = AdminEngine(now=time.monotonic())
    engine.command(command)
    try:
        with socket.create_connection((host, port), timeout) as sock:
            while True:
                sock.sendall(engine.data_to_send())
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RequestTimeoutError(f"no answer to {command!r} from {url} in {timeout}s")
                sock.settimeout(left)
                data = sock.recv(_READ)
                if not data:
                    raise engine.closed_error()
                answers = engine.receive_data(data, time.monotonic())
                if answers:
                    return answers[0].text
    except TimeoutError:
        raise RequestTimeoutError(f"no answer to {command!r} from {url} in {timeout}s") from None
    except OSError as exc:
        raise SessionStoppedError(f"{url}: {exc}") from None


def cluster_status(
    url: str, cluster: str, timeout: float = 10.0
) -> mqbcmd.ClusterStatus | mqbcmd.ClusterProxyStatus:
    """The ``STATUS`` of ``cluster`` as the broker at ``url`` sees it: a member's, or a
    proxy's. ClusterStatusError if it answers an error (a proxy before its first use of the
    cluster: "cluster ... not found")."""
    text = admin_command(url, f"ENCODING JSON_COMPACT CLUSTERS CLUSTER {cluster} STATUS", timeout)
    try:
        result = mqbcmd_json.decode_json(mqbcmd.Result, text)
    except PybmqError as exc:
        raise ClusterStatusError(f"{url}: not a status: {text[:200]!r} ({exc})") from None
    if result.error is not None:
        raise ClusterStatusError(f"{url}: {result.error.message}")
    status = result.cluster_status or result.cluster_proxy_status
    if status is None:
        raise ClusterStatusError(f"{url}: not a status: {result.selection}")
    return status


def node_view(url: str, cluster: str, timeout: float = 10.0) -> NodeView:
    """A member's view (ClusterStatusError if ``url`` is a proxy's)."""
    status = cluster_status(url, cluster, timeout)
    if not isinstance(status, mqbcmd.ClusterStatus):
        raise ClusterStatusError(f"{url} is a proxy of {cluster}, not a member")
    return NodeView.of(status)


def proxy_view(url: str, cluster: str, timeout: float = 10.0) -> ProxyView:
    """A proxy's view (ClusterStatusError if ``url`` is a member's)."""
    status = cluster_status(url, cluster, timeout)
    if not isinstance(status, mqbcmd.ClusterProxyStatus):
        raise ClusterStatusError(f"{url} is a member of {cluster}, not a proxy")
    return ProxyView.of(status)
