"""The configuration of a single-node BlazingMQ broker for tests, built from the typed ``mqbcfg`` and
``mqbconf`` bindings (never pasted JSON), so a schema change shows up here as a type error.

``write_config_dir`` writes what the broker reads at start: ``bmqbrkrcfg.json``, ``clusters.json``
and ``domains/<name>.json`` for the test domains (the simulator's three routing modes, in memory and
file-backed). Storage and logs live in the folder given; sizes are tuned for 2 cores and for the
suites' largest messages rather than for production.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pybmq.generated import mqbcfg, mqbcfg_json, mqbconf, mqbconf_json

__all__ = [
    "CLUSTER",
    "FANOUT_APPS",
    "TEST_DOMAINS",
    "BrokerSettings",
    "broker_configuration",
    "cluster_definition",
    "domain_definition",
    "write_config_dir",
]

FANOUT_APPS: tuple[str, ...] = ("foo", "bar", "baz")
CLUSTER = "local"
# Domain name -> (routing mode, file-backed). The modes are what pybmq's simulator serves.
TEST_DOMAINS: dict[str, tuple[str, bool]] = {
    f"bmq.test.{storage}.{mode}": (mode, storage == "persistent")
    for storage in ("mem", "persistent")
    for mode in ("priority", "fanout", "broadcast")
}


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
            host_name="localhost",
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
                    # Loopback only: a test broker is nobody else's business.
                    listeners=[
                        mqbcfg.TcpInterfaceListener(
                            name="TCPInterface", address="127.0.0.1", port=settings.port
                        )
                    ],
                ),
            ),
            bmqconf_config=mqbcfg.BmqconfConfig(cache_ttl_seconds=30),
            authentication=_authentication(settings),
        ),
    )


def cluster_definition(settings: BrokerSettings) -> mqbcfg.ClustersDefinition:
    """``clusters.json``: one node on the settings' port; one partition under the folder."""
    storage = settings.storage
    return mqbcfg.ClustersDefinition(
        my_clusters=[
            mqbcfg.ClusterDefinition(
                name=CLUSTER,
                nodes=[
                    mqbcfg.ClusterNode(
                        id=0,
                        name="localhost",
                        data_center="UNSPECIFIED",
                        transport=mqbcfg.ClusterNodeConnection(
                            tcp=mqbcfg.TcpClusterNodeConnection(
                                endpoint=f"tcp://localhost:{settings.port}"
                            )
                        ),
                    )
                ],
                partition_config=mqbcfg.PartitionConfig(
                    num_partitions=1,
                    location=str(storage),
                    archive_location=str(storage / "archive"),
                    # Room for the suites' largest message (63 MiB) several times over; the
                    # files are not preallocated, so this costs no disk until used.
                    max_data_file_size=1024 * 1024 * 1024,
                    max_journal_file_size=64 * 1024 * 1024,
                    max_qlist_file_size=8 * 1024 * 1024,
                    max_csl_file_size=8 * 1024 * 1024,
                    flush_at_shutdown=True,
                ),
            )
        ],
    )


def domain_definition(
    mode: str, file_backed: bool, settings: BrokerSettings
) -> mqbconf.DomainVariant:
    """One test domain: ``mode`` is priority, fanout (apps foo, bar, baz) or broadcast."""
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
            location=CLUSTER,
            parameters=mqbconf.Domain(
                mode=queue_mode,
                storage=mqbconf.StorageDefinition(
                    config=storage, domain_limits=domain, queue_limits=queue
                ),
                message_ttl=300,
                deduplication_time_ms=300000,
                consistency=mqbconf.Consistency(eventual=mqbconf.QueueConsistencyEventual()),
            ),
        )
    )


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
    for name, (mode, file_backed) in TEST_DOMAINS.items():
        (config / "domains" / f"{name}.json").write_bytes(
            mqbconf_json.encode_json(domain_definition(mode, file_backed, settings))
        )
    return config
