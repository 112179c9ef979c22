"""The real broker's test configuration, as ``pybmq.testing.broker_config`` writes it: files the
generated codecs read back, the test domains, loopback only, storage and logs in the folder."""

from __future__ import annotations

import json
from pathlib import Path

from pybmq.generated import mqbcfg, mqbcfg_json, mqbconf, mqbconf_json
from pybmq.testing.broker_config import (
    FANOUT_APPS,
    TEST_DOMAINS,
    BrokerSettings,
    write_config_dir,
)


def _written(tmp_path: Path, **options: object) -> tuple[Path, BrokerSettings]:
    settings = BrokerSettings(port=31999, folder=tmp_path, **options)  # type: ignore[arg-type]
    return write_config_dir(settings), settings


def test_files_decode_with_the_generated_codecs(tmp_path: Path) -> None:
    config, settings = _written(tmp_path)
    broker = mqbcfg_json.decode_json(
        mqbcfg.Configuration, (config / "bmqbrkrcfg.json").read_bytes()
    )
    tcp = broker.app_config.network_interfaces.tcp_interface
    assert tcp is not None and tcp.port == 31999
    assert [(x.address, x.port) for x in tcp.listeners] == [("127.0.0.1", 31999)]
    assert broker.task_config.log_controller.file_name.startswith(str(settings.logs))
    assert broker.app_config.stats.printer.file.startswith(str(settings.logs))
    assert broker.app_config.authentication.authenticators == []
    clusters = mqbcfg_json.decode_json(
        mqbcfg.ClustersDefinition, (config / "clusters.json").read_bytes()
    )
    (cluster,) = clusters.my_clusters
    assert cluster.nodes[0].transport.tcp is not None
    assert cluster.nodes[0].transport.tcp.endpoint == "tcp://localhost:31999"
    assert cluster.partition_config.location == str(settings.storage)
    assert settings.storage.is_dir() and (settings.storage / "archive").is_dir()
    assert settings.logs.is_dir()


def test_the_eight_test_domains(tmp_path: Path) -> None:
    config, _ = _written(tmp_path)
    names = sorted(p.stem for p in (config / "domains").glob("*.json"))
    assert names == sorted(TEST_DOMAINS) and len(names) == 8
    for name in names:
        variant = mqbconf_json.decode_json(
            mqbconf.DomainVariant, (config / "domains" / f"{name}.json").read_bytes()
        )
        assert variant.definition is not None
        assert variant.definition.location == "local"
        domain = variant.definition.parameters
        strong = name.endswith(".sc")
        assert domain.mode.selection == name.removesuffix(".sc").rsplit(".", 1)[1]
        storage = domain.storage.config.selection
        assert storage == ("file_backed" if ".persistent." in name else "in_memory")
        assert domain.consistency.selection == ("strong" if strong else "eventual")
        if domain.mode.fanout is not None:
            assert tuple(domain.mode.fanout.app_i_ds) == FANOUT_APPS == ("foo", "bar", "baz")


def test_basic_authentication_settings(tmp_path: Path) -> None:
    config, _ = _written(tmp_path, basic_users={"alice": "S3cret"})
    raw = json.loads((config / "bmqbrkrcfg.json").read_bytes())["appConfig"]["authentication"]
    assert raw["authenticators"] == [
        {
            "name": "BasicAuthenticator",
            "settings": [{"key": "alice", "value": {"stringVal": "S3cret"}}],
        }
    ]
    assert raw["anonymousCredential"] == {"disallow": {}}
    config, _ = _written(tmp_path / "open", basic_users={"alice": "x"}, allow_anonymous=True)
    raw = json.loads((config / "bmqbrkrcfg.json").read_bytes())["appConfig"]["authentication"]
    assert "anonymousCredential" not in raw
