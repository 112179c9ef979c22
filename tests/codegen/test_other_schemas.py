"""The other BlazingMQ schemas: a real single-node broker's config files decode into typed objects
with the generated mqbcfg / mqbconf JSON codecs and re-encode to equivalent JSON; every type of
mqbcfg, mqbconf, mqbcmd and bmqstm round-trips through JSON and BER; BER REALs are exact."""

from __future__ import annotations

import json
import math
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pybmq.codec import ber
from pybmq.codegen.model import Element
from pybmq.codegen.other_schemas import OTHER_SCHEMAS
from pybmq.codegen.xsd_loader import load_schema
from pybmq.errors import DecodeError, EncodeError
from pybmq.generated import (
    bmqstm,
    bmqstm_ber,
    bmqstm_json,
    mqbcfg,
    mqbcfg_ber,
    mqbcfg_json,
    mqbcmd,
    mqbcmd_ber,
    mqbcmd_json,
    mqbconf,
    mqbconf_ber,
    mqbconf_json,
)

from tests.helpers.ctrlmsg_strategies import ModelStrategies
from tests.helpers.paths import TESTS_DIR

CONFIG = TESTS_DIR / "vectors" / "broker-config"
SCHEMA_DIR = TESTS_DIR.parent / "schema"

# Members of the real files that the vendored schema does not define: like the broker (baljsn
# with skipUnknownElements), the decoder skips them, so re-encoding drops them.
UNKNOWN_TO_SCHEMA = {("clusters.json", "myClusters[0].partitionConfig.name")}


def _missing(original: Any, encoded: Any, path: str = "") -> list[tuple[str, Any]]:
    """Members of ``original`` absent from ``encoded``; asserts the shared ones are equal."""
    if isinstance(original, dict):
        assert isinstance(encoded, dict), path
        out: list[tuple[str, Any]] = []
        for key, value in original.items():
            here = f"{path}.{key}" if path else key
            if key in encoded:
                out += _missing(value, encoded[key], here)
            else:
                out.append((here, value))
        return out
    if isinstance(original, list):
        assert isinstance(encoded, list) and len(encoded) == len(original), path
        return [
            m
            for i, (a, b) in enumerate(zip(original, encoded, strict=True))
            for m in _missing(a, b, f"{path}[{i}]")
        ]
    assert encoded == original and type(encoded) is type(original), (path, original, encoded)
    return []


def _added(original: Any, encoded: Any) -> bool:
    return isinstance(encoded, dict) and any(
        k not in original or _added(original[k], v) for k, v in encoded.items()
    )


FILES = [
    ("bmqbrkrcfg.json", mqbcfg.Configuration, mqbcfg_json, mqbcfg_ber),
    ("clusters.json", mqbcfg.ClustersDefinition, mqbcfg_json, mqbcfg_ber),
] + [
    (f"domains/{p.name}", mqbconf.DomainVariant, mqbconf_json, mqbconf_ber)
    for p in sorted((CONFIG / "domains").glob("*.json"))
]


def test_all_seven_domains_are_vendored() -> None:
    assert len(FILES) == 2 + 7


@pytest.mark.parametrize(
    ("name", "cls", "json_codec", "ber_codec"), FILES, ids=[f[0] for f in FILES]
)
def test_config_file_decodes_and_reencodes_equivalently(
    name: str, cls: type, json_codec: ModuleType, ber_codec: ModuleType
) -> None:
    raw = (CONFIG / name).read_bytes()
    value = json_codec.decode_json(cls, raw)
    assert isinstance(value, cls)
    encoded = json_codec.encode_json(value)
    original, again = json.loads(raw), json.loads(encoded)
    # Everything the encoder writes is what the file said (no invented members, same values)...
    assert not _added(original, again)
    # ...and what it leaves out is an empty array (omitted, as baljsn does) or unknown to the schema.
    for path, dropped in _missing(original, again):
        assert dropped == [] or (name, path) in UNKNOWN_TO_SCHEMA, (path, dropped)
    assert json_codec.decode_json(cls, encoded) == value
    # The typed object also survives BER (REAL for the watermark ratios).
    assert ber_codec.decode_ber(cls, ber_codec.encode_ber(value)) == value


def load(name: str, cls: type, codec: ModuleType) -> Any:
    return codec.decode_json(cls, (CONFIG / name).read_bytes())


def test_broker_config_fields() -> None:
    config = load("bmqbrkrcfg.json", mqbcfg.Configuration, mqbcfg_json)
    assert config.task_config.allocator_type is mqbcfg.AllocatorType.STACKTRACETEST
    assert config.task_config.allocation_limit == 34359738368
    assert config.task_config.log_controller.logfile_format == "%d (%t) %s %F:%l %m\n\n"
    app = config.app_config
    assert (app.broker_instance_name, app.host_name, app.broker_version) == (
        "default",
        "earth",
        999999,
    )
    assert app.network_interfaces.tcp_interface.port == 30114
    assert app.network_interfaces.heartbeats.client == 10
    assert app.dispatcher_config.queues.num_processors == 8
    assert app.dispatcher_config.sessions.processor_config.queue_size == 500000
    assert app.stats.printer.max_age_days == 3


def test_clusters_fields() -> None:
    clusters = load("clusters.json", mqbcfg.ClustersDefinition, mqbcfg_json)
    (local,) = clusters.my_clusters
    assert local.name == "local"
    (node,) = local.nodes
    assert (node.id, node.name, node.data_center) == (0, "localhost", "UNSPECIFIED")
    assert node.transport.tcp.endpoint == "tcp://localhost:30114"
    assert local.partition_config.num_partitions == 1
    assert local.partition_config.max_data_file_size == 268435456
    assert local.partition_config.flush_at_shutdown is True
    assert local.cluster_attributes.is_csl_mode_enabled is False
    assert clusters.proxy_clusters == []


def test_domain_fields() -> None:
    fanout = load("domains/bmq.test.mem.fanout.json", mqbconf.DomainVariant, mqbconf_json)
    domain = fanout.definition.parameters
    assert fanout.definition.location == "local"
    assert domain.mode.fanout is not None and domain.mode.fanout.app_i_ds == ["foo", "bar", "baz"]
    assert domain.storage.config.in_memory is not None
    assert domain.storage.domain_limits.bytes == 2097152
    assert domain.storage.queue_limits.messages_watermark_ratio == 0.8
    assert domain.consistency.eventual is not None and domain.deduplication_time_ms == 300000
    strong = load(
        "domains/bmq.test.persistent.priority.sc.json", mqbconf.DomainVariant, mqbconf_json
    )
    parameters = strong.definition.parameters
    assert parameters.consistency.strong is not None and parameters.mode.priority is not None
    assert parameters.storage.config.file_backed is not None


def test_unknown_member_of_the_real_config_is_skipped() -> None:
    raw = json.loads((CONFIG / "clusters.json").read_bytes())
    assert raw["myClusters"][0]["partitionConfig"]["name"] == "local"
    assert "name" not in {f for f in mqbcfg.PartitionConfig.__dataclass_fields__}


# -- every type of the four schemas round-trips --------------------------------------------------


class _Strategies(ModelStrategies):
    """The control-message strategies, plus the two kinds only these schemas use."""

    def _value(self, element: Element) -> st.SearchStrategy[Any]:
        kind = self.bindings.kind(element)
        if kind == "float":
            return st.floats(allow_nan=False, allow_infinity=False)
        if kind == "temporal":
            return st.sampled_from(["2024-02-29T23:59:59.123+00:00", "2026-11-22", "07:55:00"])
        return super()._value(element)


MODULES = {
    "mqbcfg": (mqbcfg, mqbcfg_json, mqbcfg_ber),
    "mqbconf": (mqbconf, mqbconf_json, mqbconf_ber),
    "mqbcmd": (mqbcmd, mqbcmd_json, mqbcmd_ber),
    "bmqstm": (bmqstm, bmqstm_json, bmqstm_ber),
}
assert set(MODULES) == set(OTHER_SCHEMAS)
STRATEGIES = {
    name: _Strategies(load_schema(SCHEMA_DIR / f"{name}.xsd"), mods[0])
    for name, mods in MODULES.items()
}
CASES = [(name, t.name) for name, s in STRATEGIES.items() for t in s.schema.complex_types]


@pytest.mark.parametrize(("schema", "type_name"), CASES, ids=[f"{s}.{t}" for s, t in CASES])
@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_every_type_roundtrips(schema: str, type_name: str, data: st.DataObject) -> None:
    _, json_codec, ber_codec = MODULES[schema]
    value = data.draw(STRATEGIES[schema].for_type(type_name))
    cls = type(value)
    as_json = json_codec.encode_json(value)
    assert json_codec.decode_json(cls, as_json) == value
    as_ber = ber_codec.encode_ber(value)
    assert ber_codec.decode_ber(cls, as_ber) == value
    assert ber_codec.encode_ber(ber_codec.decode_ber(cls, as_ber)) == as_ber


def test_type_counts() -> None:
    counts = {name: len(s.schema.complex_types) for name, s in STRATEGIES.items()}
    assert all(counts.values()) and sum(counts.values()) == len(CASES)


# -- REAL and floats -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "content"),
    [
        (0.0, ""),
        (1.0, "800001"),  # mantissa 1, exponent 0
        (0.5, "80ff01"),  # 1 * 2^-1
        (-2.0, "c00101"),  # sign bit, 1 * 2^1
        (3.0, "800003"),
        (0.8, "80cc0ccccccccccccd"),  # 0x0ccccccccccccd * 2^-52 (odd mantissa), the nearest double
        (math.inf, "40"),
        (-math.inf, "41"),
        (255.0, "800000ff"),  # top bit set: a 00 octet keeps the mantissa positive (balber)
        (5e-324, "81fbce01"),  # the smallest subnormal: 1 * 2^-1074, two exponent octets
        (-0.0, ""),  # balber writes every zero as empty content
    ],
)
def test_real_encoding(value: float, content: str) -> None:
    assert ber.real_content(value).hex() == content
    back = ber._real_value(bytes.fromhex(content))
    assert back == value
    if value != 0.0:
        assert math.copysign(1, back) == math.copysign(1, value)
    assert ber._real_value(b"\x43") == 0.0 and math.copysign(1, ber._real_value(b"\x43")) < 0


def test_real_decoding_other_forms() -> None:
    assert math.isnan(ber._real_value(b"\x42"))
    assert ber._real_value(bytes.fromhex("900103")) == 3 * 8.0  # base 8: 3 * 8^1
    assert ber._real_value(bytes.fromhex("a0ff01")) == 1 / 16  # base 16
    assert ber._real_value(bytes.fromhex("840003")) == 6.0  # scale factor 1: 3 * 2^1
    assert ber._real_value(b"\x03" + b"1.5E1") == 15.0  # decimal NR3
    for bad in (b"\xb0\x00\x01", b"\x83", b"\x44", b"\x81\x00"):
        with pytest.raises((ValueError, OverflowError)):
            ber._real_value(bad)


def test_float_errors_are_typed() -> None:
    limits = mqbconf.Limits(messages_watermark_ratio=math.nan)
    with pytest.raises(EncodeError):
        mqbconf_json.encode_json(limits)
    with pytest.raises(EncodeError):
        mqbconf_json.encode_json(mqbconf.Limits(bytes_watermark_ratio="high"))  # type: ignore[arg-type]
    with pytest.raises(DecodeError, match="expected a number"):
        mqbconf_json.decode_json(mqbconf.Limits, b'{"bytesWatermarkRatio": true}')
    assert (
        mqbconf_json.decode_json(
            mqbconf.Limits, b'{"bytesWatermarkRatio": "0.5"}'
        ).bytes_watermark_ratio
        == 0.5
    )
    good = mqbconf_ber.encode_ber(mqbconf.Limits(bytes_watermark_ratio=0.25))
    broken = good.replace(bytes.fromhex("8303" + "80fe01"), bytes.fromhex("8301" + "83"))
    assert broken != good
    with pytest.raises(DecodeError, match="invalid REAL"):
        mqbconf_ber.decode_ber(mqbconf.Limits, broken)
