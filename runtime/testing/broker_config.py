"""The configuration of a BlazingMQ broker for tests, built from the typed ``mqbcfg`` and ``mqbconf``
bindings (never pasted JSON), so a schema change shows up here as a type error.

``write_config_dir`` writes what the broker reads at start: ``bmqbrkrcfg.json``, ``clusters.json``
and ``domains/<name>.json`` for the test domains (the simulator's three routing modes, in memory and
file-backed, and the file-backed ones with strong consistency, ``.sc``). Storage and logs live in the
folder given; sizes are tuned for 2 cores and for the suites' largest messages rather than for
production.

A broker is one of three roles: a single node (its own one-node cluster, the default), a member of
a replicated cluster (``BrokerSettings.cluster`` and ``node_id``), or a proxy in front of one
(``cluster`` without ``node_id``). Every member of a cluster gets the same cluster definition
(legacy mode: the elected leader is the primary of every partition, as in upstream's
``docker/cluster`` example) with the election shortened for tests (``ElectionTimings``); a proxy
lists the same nodes as a proxy cluster and serves the same domains.

A single node may also listen for TLS (``BrokerSettings.tls``, a ``TlsListener``): a second
listener marked ``tls`` beside the plain one and the ``tlsConfig`` naming its PEM files, what
a broker built with TLS support (upstream pull request #1600) serves TLS 1.3 with.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from pybmq.errors import UsageError
from pybmq.generated import mqbcfg, mqbcfg_json, mqbconf, mqbconf_json

__all__ = [
    "CLUSTER",
    "FANOUT_APPS",
    "TEST_DOMAINS",
    "BrokerSettings",
    "ClusterLayout",
    "ClusterMember",
    "DomainSpec",
    "ElectionTimings",
    "TlsListener",
    "broker_configuration",
    "cluster_definition",
    "domain_definition",
    "domains_of",
    "write_config_dir",
]

FANOUT_APPS: tuple[str, ...] = ("foo", "bar", "baz")
CLUSTER = "local"


class DomainSpec(NamedTuple):
    """How a test domain routes and stores: ``mode`` is priority, fanout or broadcast (what
    pybmq's simulator serves); ``strong``: strong consistency (a PUT is ACKed once a quorum of
    the cluster's replicas stored it), else eventual."""

    mode: str
    file_backed: bool
    strong: bool = False

    @property
    def replicable(self) -> bool:
        """Whether a cluster of several nodes serves it: a clustered queue kept in memory must
        be a broadcast one (the broker refuses to open any other, ``E_UNKNOWN``)."""
        return self.file_backed or self.mode == "broadcast"


TEST_DOMAINS: dict[str, DomainSpec] = {
    f"bmq.test.{storage}.{mode}": DomainSpec(mode, storage == "persistent")
    for storage in ("mem", "persistent")
    for mode in ("priority", "fanout", "broadcast")
} | {
    f"bmq.test.persistent.{mode}.sc": DomainSpec(mode, True, strong=True)
    for mode in ("priority", "fanout")
}


@dataclass(frozen=True)
class ElectionTimings:
    """How fast a test cluster elects a leader and gets going, in milliseconds.

    Upstream's defaults (``mqbcfg.ElectorConfig``, ``StorageSyncConfig``) are for production: a
    leader becomes ACTIVE ``leader_sync_delay_ms`` (80 s) after its election, to give every node
    time to come up, and a starting node waits ``startup_wait_ms`` (60 s) for a primary's sync
    point. On one host every node is up within seconds, so both are short here; the delay stays
    longer than the startup wait, which recovery needs (a node recovers locally, then declares
    itself available, before the leader syncs). Failure detection stays as upstream's (a killed
    node's peers see its connections close at once)."""

    initial_wait_ms: int = 2000  # a follower's wait for a leader's heartbeat before an election
    max_random_wait_ms: int = 1000  # added at random, so two nodes rarely run at once
    scouting_result_timeout_ms: int = 2000
    election_result_timeout_ms: int = 2000
    heartbeat_broadcast_period_ms: int = 1000
    heartbeat_check_period_ms: int = 500
    heartbeat_miss_count: int = 10
    leader_sync_delay_ms: int = 3000  # upstream: 80000
    startup_wait_ms: int = 1500  # upstream: 60000

    def __post_init__(self) -> None:
        # The two orderings the broker's configuration notes require.
        if self.initial_wait_ms <= self.max_random_wait_ms:
            raise UsageError("initial_wait_ms must be longer than max_random_wait_ms")
        if self.leader_sync_delay_ms <= self.startup_wait_ms:
            raise UsageError("leader_sync_delay_ms must be longer than startup_wait_ms")

    def elector(self) -> mqbcfg.ElectorConfig:
        return mqbcfg.ElectorConfig(
            initial_wait_timeout_ms=self.initial_wait_ms,
            max_random_wait_timeout_ms=self.max_random_wait_ms,
            scouting_result_timeout_ms=self.scouting_result_timeout_ms,
            election_result_timeout_ms=self.election_result_timeout_ms,
            heartbeat_broadcast_period_ms=self.heartbeat_broadcast_period_ms,
            heartbeat_check_period_ms=self.heartbeat_check_period_ms,
            heartbeat_miss_count=self.heartbeat_miss_count,
            quorum=0,  # a majority of the nodes
            leader_sync_delay_ms=self.leader_sync_delay_ms,
        )


@dataclass(frozen=True)
class ClusterMember:
    """One node of a cluster: its id, its name (the broker's host name, which is how a broker
    finds itself among the nodes) and its port on 127.0.0.1."""

    node_id: int
    name: str
    port: int

    @property
    def endpoint(self) -> str:
        return f"tcp://127.0.0.1:{self.port}"


@dataclass(frozen=True)
class ClusterLayout:
    """A replicated cluster: its name (the domains' location), its members and timings."""

    name: str
    members: tuple[ClusterMember, ...]
    timings: ElectionTimings = field(default_factory=ElectionTimings)
    partitions: int = 1

    def member(self, node_id: int) -> ClusterMember:
        for member in self.members:
            if member.node_id == node_id:
                return member
        raise UsageError(f"cluster {self.name} has no node {node_id}")


@dataclass(frozen=True)
class TlsListener:
    """A TLS listener beside the plain one: its port and the PEM files of the broker's
    ``tlsConfig`` (its certificate and unencrypted key, and a CA bundle). ``versions`` is the
    broker's list as written (it serves TLS 1.3 whatever the list names)."""

    port: int
    ca: Path
    certificate: Path
    key: Path
    versions: str = "TLSv1.3"

    def config(self) -> mqbcfg.TlsConfig:
        return mqbcfg.TlsConfig(
            certificate_authority=str(self.ca),
            certificate=str(self.certificate),
            key=str(self.key),
            versions=self.versions,
        )


@dataclass(frozen=True)
class BrokerSettings:
    """What a test may choose about the broker; the rest is fixed by ``broker_configuration``."""

    port: int
    folder: Path  # logs/, storage/ and the config files go under it
    # BASIC users (name -> password); empty: no authenticator, every client is let in.
    basic_users: dict[str, str] = field(default_factory=dict)
    # With users: whether a client that does not authenticate is still let in (anonymously).
    allow_anonymous: bool = False
    # Per-queue limits, as large as the simulator's defaults so the same tests pass on both.
    queue_messages: int = 1_000_000
    queue_bytes: int = 256 * 1024 * 1024
    console_severity: str = "ERROR"
    # The broker sends a heartbeat after this long without traffic, and drops a client that
    # stays silent for ``heartbeat_intervals`` of them.
    heartbeat_interval_ms: int = 3000
    heartbeat_intervals: int = 10
    # The cluster this broker is a member of (``node_id`` set: its port must be that member's)
    # or the proxy of (``node_id`` None); None: a single node, its own one-node cluster.
    cluster: ClusterLayout | None = None
    node_id: int | None = None
    # A TLS listener beside the plain one (a single node only; needs a broker built with TLS).
    tls: TlsListener | None = None

    def __post_init__(self) -> None:
        if self.tls is not None:
            if self.cluster is not None:
                raise UsageError("a TLS listener is for a single node, not a cluster's members")
            if self.tls.port == self.port:
                raise UsageError("the TLS listener needs a port of its own")
        if self.cluster is None:
            if self.node_id is not None:
                raise UsageError("node_id is for a member of a cluster")
        elif self.node_id is not None and self.cluster.member(self.node_id).port != self.port:
            raise UsageError(f"node {self.node_id} listens on its member's port")

    @property
    def is_proxy(self) -> bool:
        return self.cluster is not None and self.node_id is None

    @property
    def host_name(self) -> str:
        """What the broker calls itself: a member's node name; a proxy's or a single node's is
        ``localhost`` (the single node's one node has that name)."""
        if self.cluster is not None and self.node_id is not None:
            return self.cluster.member(self.node_id).name
        return "localhost"

    @property
    def cluster_name(self) -> str:
        return CLUSTER if self.cluster is None else self.cluster.name

    @property
    def logs(self) -> Path:
        return self.folder / "logs"

    @property
    def storage(self) -> Path:
        return self.folder / "storage"

    @property
    def config_dir(self) -> Path:
        return self.folder / "config"


def _processors(count: int) -> mqbcfg.DispatcherProcessorConfig:
    return mqbcfg.DispatcherProcessorConfig(
        num_processors=count,
        processor_config=mqbcfg.DispatcherProcessorParameters(
            queue_size=500_000, queue_size_low_watermark=100_000, queue_size_high_watermark=200_000
        ),
    )


def _authentication(settings: BrokerSettings) -> mqbcfg.AuthenticatorConfig:
    if not settings.basic_users:
        return mqbcfg.AuthenticatorConfig()
    users = [
        mqbcfg.PluginSettingKeyValue(key=name, value=mqbcfg.PluginSettingValue(string_val=secret))
        for name, secret in settings.basic_users.items()
    ]
    return mqbcfg.AuthenticatorConfig(
        authenticators=[
            mqbcfg.AuthenticatorPluginConfig(name="BasicAuthenticator", settings=users)
        ],
        anonymous_credential=(
            None
            if settings.allow_anonymous
            else mqbcfg.AnonymousCredential(disallow=mqbcfg.Disallow())
        ),
    )


def _listeners(settings: BrokerSettings) -> list[mqbcfg.TcpInterfaceListener]:
    """Loopback only (a test broker is nobody else's business): the plain port, and the TLS
    one when asked for (a broker with listeners ignores ``tcpInterface.port``)."""
    plain = mqbcfg.TcpInterfaceListener(
        name="TCPInterface", address="127.0.0.1", port=settings.port
    )
    if settings.tls is None:
        return [plain]
    secure = mqbcfg.TcpInterfaceListener(
        name="TLSInterface", address="127.0.0.1", port=settings.tls.port, tls=True
    )
    return [plain, secure]


def broker_configuration(settings: BrokerSettings) -> mqbcfg.Configuration:
    """``bmqbrkrcfg.json``: few threads (CI has 2 cores), logs under the folder, no stats printing."""
    logs = settings.logs
    log_format = "%d (%t) %s %F:%l %m\n"
    return mqbcfg.Configuration(
        task_config=mqbcfg.TaskConfig(
            allocator_type=mqbcfg.AllocatorType.NEWDELETE,
            allocation_limit=34359738368,
            log_controller=mqbcfg.LogController(
                file_name=str(logs / "logs.%T.%p"),
                file_max_age_days=1,
                rotation_bytes=268435456,
                logfile_format=log_format,
                console_format=log_format,
                logging_verbosity="INFO",
                console_severity_threshold=settings.console_severity,
                categories=["BMQBRKR:INFO:green", "BMQ*:INFO:green", "MQB*:INFO:green"],
                syslog=mqbcfg.SyslogConfig(app_name="BMQ", log_format=log_format),
            ),
        ),
        app_config=mqbcfg.AppConfig(
            broker_instance_name="pybmq-test",
            broker_version=999999,
            config_version=999999,
            etc_dir=str(settings.config_dir),
            host_name=settings.host_name,
            host_data_center="UNSPECIFIED",
            logs_observer_max_size=1000,
            dispatcher_config=mqbcfg.DispatcherConfig(
                sessions=_processors(1), queues=_processors(2), clusters=_processors(1)
            ),
            stats=mqbcfg.StatsConfig(
                snapshot_interval=1,
                printer=mqbcfg.StatsPrinterConfig(
                    print_interval=0, file=str(logs / "stat.%T.%p"), max_age_days=1
                ),
            ),
            network_interfaces=mqbcfg.NetworkInterfaces(
                heartbeats=mqbcfg.Heartbeat(
                    client=settings.heartbeat_intervals,
                    downstream_broker=10,
                    upstream_broker=10,
                    cluster_peer=10,
                ),
                tcp_interface=mqbcfg.TcpInterfaceConfig(
                    name="TCPInterface",
                    port=settings.port,
                    io_threads=1,
                    max_connections=1000,
                    low_watermark=4194304,
                    high_watermark=1073741824,
                    node_low_watermark=5242880,
                    node_high_watermark=10485760,
                    heartbeat_interval_ms=settings.heartbeat_interval_ms,
                    listeners=_listeners(settings),
                ),
            ),
            bmqconf_config=mqbcfg.BmqconfConfig(cache_ttl_seconds=30),
            authentication=_authentication(settings),
            tls_config=None if settings.tls is None else settings.tls.config(),
        ),
    )


def _partitions(settings: BrokerSettings, count: int) -> mqbcfg.PartitionConfig:
    """``count`` partitions under the folder, not preallocated; a member's recovery waits only
    the layout's ``startup_wait_ms`` for a primary's sync point."""
    storage = settings.storage
    sync = mqbcfg.StorageSyncConfig()
    if settings.cluster is not None:
        sync = mqbcfg.StorageSyncConfig(
            startup_wait_duration_ms=settings.cluster.timings.startup_wait_ms
        )
    return mqbcfg.PartitionConfig(
        num_partitions=count,
        location=str(storage),
        archive_location=str(storage / "archive"),
        # Room for the suites' largest message (63 MiB) several times over; the files are not
        # preallocated, so this costs no disk until used.
        max_data_file_size=1024 * 1024 * 1024,
        max_journal_file_size=64 * 1024 * 1024,
        max_qlist_file_size=8 * 1024 * 1024,
        max_csl_file_size=8 * 1024 * 1024,
        flush_at_shutdown=True,
        sync_config=sync,
    )


def _node(node_id: int, name: str, endpoint: str) -> mqbcfg.ClusterNode:
    return mqbcfg.ClusterNode(
        id=node_id,
        name=name,
        data_center="UNSPECIFIED",
        transport=mqbcfg.ClusterNodeConnection(
            tcp=mqbcfg.TcpClusterNodeConnection(endpoint=endpoint)
        ),
    )


def cluster_definition(settings: BrokerSettings) -> mqbcfg.ClustersDefinition:
    """``clusters.json``. A single node: its one-node cluster on the settings' port, one
    partition. A member: the whole cluster, legacy mode (no CSL, no FSM workflow; the leader is
    the primary of every partition), the layout's election timings. A proxy: the cluster's nodes
    as its one proxy cluster."""
    layout = settings.cluster
    if layout is None:
        return mqbcfg.ClustersDefinition(
            my_clusters=[
                mqbcfg.ClusterDefinition(
                    name=CLUSTER,
                    nodes=[_node(0, "localhost", f"tcp://localhost:{settings.port}")],
                    partition_config=_partitions(settings, 1),
                )
            ],
        )
    nodes = [_node(m.node_id, m.name, m.endpoint) for m in layout.members]
    if settings.is_proxy:
        return mqbcfg.ClustersDefinition(
            proxy_clusters=[mqbcfg.ClusterProxyDefinition(name=layout.name, nodes=nodes)]
        )
    return mqbcfg.ClustersDefinition(
        my_clusters=[
            mqbcfg.ClusterDefinition(
                name=layout.name,
                nodes=nodes,
                partition_config=_partitions(settings, layout.partitions),
                master_assignment=mqbcfg.MasterAssignmentAlgorithm.E_LEADER_IS_MASTER_ALL,
                elector=layout.timings.elector(),
                cluster_attributes=mqbcfg.ClusterAttributes(
                    is_csl_mode_enabled=False, is_fsm_workflow=False
                ),
            )
        ],
    )


def domain_definition(spec: DomainSpec, settings: BrokerSettings) -> mqbconf.DomainVariant:
    """One test domain: ``spec.mode`` is priority, fanout (apps foo, bar, baz) or broadcast."""
    mode, file_backed = spec.mode, spec.file_backed
    queue_mode = mqbconf.QueueMode(
        priority=mqbconf.QueueModePriority() if mode == "priority" else None,
        fanout=mqbconf.QueueModeFanout(app_i_ds=list(FANOUT_APPS)) if mode == "fanout" else None,
        broadcast=mqbconf.QueueModeBroadcast() if mode == "broadcast" else None,
    )
    storage = mqbconf.Storage(
        file_backed=mqbconf.FileBackedStorage() if file_backed else None,
        in_memory=None if file_backed else mqbconf.InMemoryStorage(),
    )
    queue = mqbconf.Limits(messages=settings.queue_messages, bytes=settings.queue_bytes)
    domain = mqbconf.Limits(messages=2 * settings.queue_messages, bytes=2 * settings.queue_bytes)
    return mqbconf.DomainVariant(
        definition=mqbconf.DomainDefinition(
            location=settings.cluster_name,
            parameters=mqbconf.Domain(
                mode=queue_mode,
                storage=mqbconf.StorageDefinition(
                    config=storage, domain_limits=domain, queue_limits=queue
                ),
                message_ttl=300,
                deduplication_time_ms=300000,
                consistency=(
                    mqbconf.Consistency(strong=mqbconf.QueueConsistencyStrong())
                    if spec.strong
                    else mqbconf.Consistency(eventual=mqbconf.QueueConsistencyEventual())
                ),
            ),
        )
    )


def domains_of(settings: BrokerSettings) -> dict[str, DomainSpec]:
    """The test domains the broker serves: all of them on a single node; in a cluster (and its
    proxy), those it can replicate."""
    if settings.cluster is None:
        return dict(TEST_DOMAINS)
    return {name: spec for name, spec in TEST_DOMAINS.items() if spec.replicable}


def write_config_dir(settings: BrokerSettings) -> Path:
    """Write the three kinds of file and create the folders the broker expects; return the
    config folder (what the broker executable takes as its argument)."""
    config = settings.config_dir
    for folder in (config / "domains", settings.logs, settings.storage / "archive"):
        folder.mkdir(parents=True, exist_ok=True)
    (config / "bmqbrkrcfg.json").write_bytes(
        mqbcfg_json.encode_json(broker_configuration(settings))
    )
    (config / "clusters.json").write_bytes(mqbcfg_json.encode_json(cluster_definition(settings)))
    for name, spec in domains_of(settings).items():
        (config / "domains" / f"{name}.json").write_bytes(
            mqbconf_json.encode_json(domain_definition(spec, settings))
        )
    return config
