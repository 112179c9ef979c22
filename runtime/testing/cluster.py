"""A replicated BlazingMQ cluster for tests: N real brokers (3 by default) and, optionally, a proxy
in front of them, on ephemeral 127.0.0.1 ports, each with its own storage and logs.

    with RealCluster(broker_executable()) as cluster:        # waits for an active leader
        session = Session(cluster.proxy_url)                  # or cluster.urls for `endpoints`
        cluster.kill(cluster.primary())                       # SIGKILL the primary under load
        cluster.start(node)                                   # and bring it back; waits again

Every node is a ``RealBroker`` with its configuration written by ``pybmq.testing.broker_config``
(the same test domains as a single broker, but in-memory priority and fan-out, which a cluster
cannot replicate, and with the strongly consistent ``.sc`` domains), in ``<folder>/node<i>``;
the proxy is in ``<folder>/proxy``. The cluster runs in legacy mode (the leader is the primary of
every partition), with the election shortened for tests (``ElectionTimings``): on 2 cores it is
active about 7 s after launch instead of upstream's 90 s.

Starting launches every broker at once, waits until each listens, then until every running member
agrees on an ACTIVE leader and ACTIVE primaries and sees every running member available (asked
with the admin command ``CLUSTERS CLUSTER <name> STATUS``). Every wait is bounded; ``ClusterStartError`` names the
console output and log folder of each broker, and what each member last said.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
import time
import weakref
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from pybmq.errors import PybmqError, UsageError
from pybmq.testing.broker_config import (
    TEST_DOMAINS,
    ClusterLayout,
    ClusterMember,
    ElectionTimings,
)
from pybmq.testing.cluster_status import (
    NodeView,
    ProxyView,
    admin_command,
    node_view,
    proxy_view,
)
from pybmq.testing.real_broker import BrokerStartError, RealBroker, broker_executable, free_port

__all__ = [
    "DEFAULT_CLUSTER_NAME",
    "ClusterNotReadyError",
    "ClusterStartError",
    "RealCluster",
    "running_cluster",
]

DEFAULT_CLUSTER_NAME = "pybmq"
# One admin command's bound (a busy node answers in milliseconds): RealCluster(ask_timeout=).
ASK_TIMEOUT = 5.0
_POLL = 0.2
# A domain every cluster serves: asking the proxy about it makes the proxy connect.
_ANY_DOMAIN = next(name for name, spec in TEST_DOMAINS.items() if spec.replicable)


# Clusters still open when the interpreter exits (an interrupted test run) are closed then: their
# brokers stopped and the folders they made removed. Registered after real_broker's own hook, so
# it runs before it (atexit runs last-in first).
_OPEN: weakref.WeakSet[RealCluster] = weakref.WeakSet()


@atexit.register
def _close_leftovers() -> None:
    for cluster in list(_OPEN):
        cluster.close()


class ClusterStartError(BrokerStartError):
    """A node did not start, or the cluster did not settle, within the bound."""


class ClusterNotReadyError(PybmqError):
    """The cluster has no settled leader and primary now (a failover in progress, or too few
    members running for a quorum)."""


@dataclass(frozen=True)
class _Seen:
    """What the last poll found: each member's view, or the error asking it."""

    views: dict[int, NodeView | str]

    def describe(self) -> str:
        return "; ".join(f"node {n}: {v}" for n, v in sorted(self.views.items()))


class RealCluster:
    """``nodes`` brokers forming cluster ``name`` and, with ``proxy``, one proxy broker.

    ``settings``: fields of ``BrokerSettings`` shared by every broker (``queue_messages``,
    ``heartbeat_interval_ms``, ``console_severity``, ...). ``ready_timeout`` bounds each wait
    for a settled cluster (start, restart of a node, ``wait_ready``), ``ask_timeout`` each
    status command."""

    def __init__(
        self,
        executable: str | os.PathLike[str],
        folder: str | os.PathLike[str] | None = None,
        *,
        nodes: int = 3,
        proxy: bool = True,
        name: str = DEFAULT_CLUSTER_NAME,
        partitions: int = 1,
        timings: ElectionTimings | None = None,
        start_timeout: float = 60.0,
        ready_timeout: float = 60.0,
        ask_timeout: float = ASK_TIMEOUT,
        proxy_port: int | None = None,
        **settings: Any,
    ) -> None:
        if nodes < 1:
            raise UsageError(f"a cluster has at least one node, not {nodes}")
        self._own_folder = folder is None
        self.folder = (
            Path(tempfile.mkdtemp(prefix="pybmq-cluster-")) if folder is None else Path(folder)
        )
        self.layout = ClusterLayout(
            name=name,
            members=tuple(
                ClusterMember(node_id=i, name=f"node{i}", port=free_port())
                for i in range(1, nodes + 1)
            ),
            timings=timings or ElectionTimings(),
            partitions=partitions,
        )
        self.ready_timeout = ready_timeout
        self.ask_timeout = ask_timeout
        _OPEN.add(self)
        self._meant_up: set[RealBroker] = set()  # started here, not since killed or stopped
        common = {"start_timeout": start_timeout, **settings}
        self.nodes: dict[int, RealBroker] = {
            m.node_id: RealBroker(
                executable,
                self.folder / m.name,
                port=m.port,
                cluster=self.layout,
                node_id=m.node_id,
                **common,
            )
            for m in self.layout.members
        }
        self.proxy: RealBroker | None = (
            RealBroker(
                executable, self.folder / "proxy", port=proxy_port, cluster=self.layout, **common
            )
            if proxy
            else None
        )

    # -- addresses -------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The cluster's name: its domains' location, and what admin commands name it by."""
        return self.layout.name

    @property
    def urls(self) -> tuple[str, ...]:
        """Every member's URL, in node id order: a session's URI and ``endpoints``."""
        return tuple(node.url for _, node in sorted(self.nodes.items()))

    @property
    def proxy_url(self) -> str:
        """The proxy's URL (UsageError for a cluster made without one)."""
        if self.proxy is None:
            raise UsageError("this cluster has no proxy (RealCluster(proxy=True))")
        return self.proxy.url

    @property
    def url(self) -> str:
        """Where a client connects: the proxy's URL, or the first node's without a proxy."""
        return self.proxy.url if self.proxy is not None else self.urls[0]

    @property
    def running(self) -> bool:
        """Every broker started here (and not since killed or stopped) is still running."""
        return bool(self._meant_up) and all(broker.running for broker in self._meant_up)

    def node(self, node_id: int) -> RealBroker:
        """The member with this node id (1 to ``nodes``)."""
        try:
            return self.nodes[node_id]
        except KeyError:
            raise UsageError(f"cluster {self.name} has no node {node_id}") from None

    def node_id(self, node: RealBroker | int) -> int:
        """The node id of a member, given as itself or its id (UsageError for a stranger)."""
        if isinstance(node, int):
            self.node(node)
            return node
        for ident, candidate in self.nodes.items():
            if candidate is node:
                return ident
        raise UsageError(f"{node.url} is not a member of cluster {self.name}")

    def _brokers(self) -> list[RealBroker]:
        brokers = [node for _, node in sorted(self.nodes.items())]
        return [*brokers, self.proxy] if self.proxy is not None else brokers

    # -- what the cluster says -------------------------------------------------------------------

    def view(self, node: RealBroker | int) -> NodeView:
        """What ``node`` says of the cluster now (its ``CLUSTERS CLUSTER <name> STATUS``)."""
        return node_view(self.node(self.node_id(node)).url, self.name, self.ask_timeout)

    def proxy_view(self) -> ProxyView:
        """What the proxy says of the cluster (after its first use of one of the domains)."""
        return proxy_view(self.proxy_url, self.name, self.ask_timeout)

    def _poll(self, deadline: float | None = None) -> tuple[NodeView | None, _Seen]:
        """The agreed view of the running members if they agree that the cluster is settled;
        the members are asked at once, each within ``ask_timeout`` and none past
        ``deadline``."""
        ask = self.ask_timeout
        if deadline is not None:
            ask = min(ask, max(deadline - time.monotonic(), 0.1))

        def asked(node: RealBroker) -> NodeView | str:
            try:
                return node_view(node.url, self.name, ask)
            except PybmqError as exc:
                return f"{type(exc).__name__}: {exc}"

        running = {i: node for i, node in sorted(self.nodes.items()) if node.running}
        with ThreadPoolExecutor(max(len(running), 1), thread_name_prefix="pybmq-poll") as pool:
            views = dict(zip(running, pool.map(asked, running.values()), strict=True))
        seen = _Seen(views)
        found = [v for v in views.values() if isinstance(v, NodeView)]
        if not found or len(found) != len(views):
            return None, seen
        first = found[0]
        # And each sees every running member available: a node just restarted is back once the
        # others know it, not only once it knows itself.
        agreed = all(
            v.settled
            and (v.leader, v.primaries) == (first.leader, first.primaries)
            and v.available >= running.keys()
            for v in found
        )
        members_up = first.leader in running and all(p in running for p in first.primaries)
        return (first if agreed and members_up else None), seen

    def settled_view(self, timeout: float | None = None) -> NodeView:
        """The running members' agreed view, asked within ``timeout`` (``ask_timeout``);
        ClusterNotReadyError if they do not agree now (or do not answer)."""
        bound = self.ask_timeout if timeout is None else timeout
        view, seen = self._poll(time.monotonic() + bound)
        if view is None:
            raise ClusterNotReadyError(f"cluster {self.name} is not settled: {seen.describe()}")
        return view

    def leader(self) -> RealBroker:
        """The member the running members agree leads (ClusterNotReadyError if none now)."""
        leader = self.settled_view().leader
        assert leader is not None  # settled
        return self.node(leader)

    def primary(self, partition: int = 0) -> RealBroker:
        """The member that is the ACTIVE primary of ``partition`` now (in legacy mode, the
        leader); ClusterNotReadyError if there is none the running members agree on."""
        primaries = self.settled_view().primaries
        if not 0 <= partition < len(primaries):
            raise UsageError(f"cluster {self.name} has {len(primaries)} partitions")
        ident = primaries[partition]
        assert ident is not None  # settled
        return self.node(ident)

    def wait_ready(self, timeout: float | None = None) -> NodeView:
        """Wait until the running members agree on an ACTIVE leader and ACTIVE primaries and
        each sees every running member available; ClusterStartError after ``timeout``
        (``ready_timeout``)."""
        bound = self.ready_timeout if timeout is None else timeout
        deadline = time.monotonic() + bound
        seen = _Seen({})
        while True:
            for broker in self._meant_up:
                if not broker.running:
                    status = broker.exit_status
                    raise self._failure(f"{broker.folder.name} exited (status {status})", seen)
            view, seen = self._poll(deadline)
            if view is not None:
                return view
            if time.monotonic() >= deadline:
                raise self._failure(f"did not settle within {bound:g} s", seen)
            time.sleep(_POLL)

    def wait_proxy_ready(self, timeout: float | None = None) -> ProxyView:
        """Make the proxy set up its proxy of the cluster (it does so on the first use of one
        of the cluster's domains: here an admin command about one), then wait until it
        forwards to a running member; ClusterStartError after ``timeout``."""
        proxy = self.proxy
        if proxy is None:
            raise UsageError("this cluster has no proxy (RealCluster(proxy=True))")
        bound = self.ready_timeout if timeout is None else timeout
        deadline = time.monotonic() + bound
        with contextlib.suppress(PybmqError):  # its answer does not matter, only that it asked
            ask = min(self.ask_timeout, bound)
            admin_command(proxy.url, f"DOMAINS DOMAIN {_ANY_DOMAIN} INFOS", ask)
        last = "no answer yet"
        while True:
            ask = min(self.ask_timeout, max(deadline - time.monotonic(), 0.1))
            try:
                view = proxy_view(proxy.url, self.name, ask)
            except PybmqError as exc:
                last = f"{type(exc).__name__}: {exc}"
            else:
                active = view.active_node
                # Not ``healthy``: the proxy's cluster monitor says so only at its next check
                # (10 s later), though it forwards at once.
                if active is not None and active in view.available and self.node(active).running:
                    return view
                last = str(view)
            if not proxy.running:
                raise self._failure(f"proxy exited (status {proxy.exit_status})", _Seen({}))
            if time.monotonic() >= deadline:
                raise self._failure(
                    f"proxy found no active member within {bound:g} s (last: {last})", _Seen({})
                )
            time.sleep(_POLL)

    def _failure(self, why: str, seen: _Seen) -> ClusterStartError:
        where = "\n".join(
            f"  {broker.folder.name}: console {broker.console}, logs {broker.settings.logs}"
            for broker in self._brokers()
        )
        return ClusterStartError(
            f"cluster {self.name} {why}; last status: {seen.describe() or 'none'}\n{where}"
        )

    # -- processes -------------------------------------------------------------------------------

    def start(self, node: RealBroker | int | None = None, *, wait: bool = True) -> RealCluster:
        """Start every broker not running (or only ``node``), then (with ``wait``) wait until
        each listens and the cluster is settled again."""
        brokers = self._brokers() if node is None else [self.node(self.node_id(node))]
        launched = [b.start(wait=False) for b in brokers if not b.running]
        self._meant_up.update(launched)
        try:
            for broker in launched:
                broker.wait_started()
            if wait:
                self.wait_ready()
                if self.proxy is not None and self.proxy in launched:
                    self.wait_proxy_ready()
        except BrokerStartError as exc:
            if isinstance(exc, ClusterStartError):
                raise
            raise ClusterStartError(f"cluster {self.name}: {exc}") from None
        return self

    def kill(self, node: RealBroker | int) -> RealBroker:
        """SIGKILL ``node`` (a crash: no shutdown, its storage stays for its restart)."""
        broker = self.node(self.node_id(node))
        self._meant_up.discard(broker)
        broker.kill()
        return broker

    def stop_node(self, node: RealBroker | int) -> RealBroker:
        """Stop ``node`` cleanly (SIGTERM)."""
        broker = self.node(self.node_id(node))
        self._meant_up.discard(broker)
        broker.stop()
        return broker

    def restart(self, node: RealBroker | int) -> RealBroker:
        """Stop ``node`` cleanly and start it again; waits until the cluster is settled."""
        self.stop_node(node)
        self.start(node)
        return self.node(self.node_id(node))

    def stop(self) -> None:
        """Stop every broker: the proxy first, then the members (each in its own bounded
        time, SIGKILL after)."""
        self._meant_up.clear()
        for broker in reversed(self._brokers()):
            broker.stop()

    def close(self) -> None:
        """Stop every broker; remove the folder if this object made it."""
        _OPEN.discard(self)
        try:
            self.stop()
        finally:
            if self._own_folder:
                shutil.rmtree(self.folder, ignore_errors=True)

    def summary(self) -> dict[str, Any]:
        """What a person running the cluster needs, as JSON-able values: each broker's URL,
        process id and folder, and the leader when the cluster is settled."""
        try:
            leader: int | None = self.settled_view(timeout=1.0).leader
        except ClusterNotReadyError:
            leader = None
        return {
            "cluster": self.name,
            "leader": leader,
            "nodes": [
                {"id": ident, "url": b.url, "pid": b.pid, "folder": str(b.folder)}
                for ident, b in sorted(self.nodes.items())
            ],
            "proxy": (
                None
                if self.proxy is None
                else {
                    "url": self.proxy.url,
                    "pid": self.proxy.pid,
                    "folder": str(self.proxy.folder),
                }
            ),
        }

    def __enter__(self) -> RealCluster:
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


@contextlib.contextmanager
def running_cluster(
    nodes: int = 3, *, proxy: bool = True, executable: str | None = None, **options: Any
) -> Iterator[RealCluster]:
    """A settled cluster for the block, stopped after; ``BrokerUnavailable`` when
    ``$BMQ_BROKER_BIN`` names no broker (and no ``executable`` is given)."""
    from pybmq.testing.brokers import NO_BROKER_REASON, BrokerUnavailable

    executable = executable or broker_executable()
    if executable is None:
        raise BrokerUnavailable(NO_BROKER_REASON)
    with RealCluster(executable, nodes=nodes, proxy=proxy, **options) as cluster:
        yield cluster
