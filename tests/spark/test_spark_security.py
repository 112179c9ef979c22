"""One batch write and read through the data source against a simulator that requires BASIC
authentication and TLS: every executor's session gets the options."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme
from pybmq.errors import UsageError
from pybmq.sim.auth import AuthConfig
from pybmq.sim.config import BrokerConfig
from pybmq.sim.server import ThreadedBrokerSimulator
from pybmq.sim.tls import server_tls_context
from pybmq.spark.options import Security, Target

SECRET = "spark-secret"


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[dict[str, str]]:
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    paths = {name: tmp_path / f"{name}.pem" for name in ("ca", "cert", "key")}
    ca.cert_pem.write_to_path(str(paths["ca"]))
    cert.cert_chain_pems[0].write_to_path(str(paths["cert"]))
    cert.private_key_pem.write_to_path(str(paths["key"]))
    material = tmp_path / "material"
    material.write_text(f"erin:{SECRET}\n")
    config = BrokerConfig(auth=AuthConfig(basic={"erin": SECRET}, anonymous=False))
    tls = server_tls_context(str(paths["cert"]), str(paths["key"]))
    with ThreadedBrokerSimulator(config, tls=tls) as sim:
        yield {"broker": sim.url, "tlsCa": str(paths["ca"]), "authFile": str(material)}


@pytest.mark.spark
def test_batch_write_and_read_with_auth_and_tls(spark: Any, secured: dict[str, str]) -> None:
    queue = f"bmq://bmq.test.mem.priority/spark-sec-{uuid.uuid4().hex[:8]}"
    options = {**secured, "queue": queue, "authMechanism": "BASIC"}
    frame = spark.createDataFrame([(f"m{i}",) for i in range(40)], "payload string")
    frame.repartition(2).write.format("blazingmq").options(**options).mode("append").save()
    read = (
        spark.read.format("blazingmq")
        .options(**options, maxMessages="100", idleTimeoutMs="1500", confirm="true")
        .load()
        .collect()
    )
    assert sorted(bytes(row["payload"]) for row in read) == sorted(b"m%d" % i for i in range(40))


def test_security_options_are_checked_and_hide_material() -> None:
    base = {"queue": "bmq://bmq.test.mem.priority/q"}  # keys as Spark hands them: lower case
    with pytest.raises(UsageError):
        Target.parse({**base, "authfile": "x"})
    with pytest.raises(UsageError):
        Target.parse({**base, "tlscert": "c.pem", "tlskey": "k.pem"})
    target = Target.parse({**base, "authmechanism": "BASIC", "authmaterial": "u:" + SECRET})
    assert SECRET not in repr(target)
    provider = target.security.session_options()["credential_provider"]
    assert provider().data == b"u:" + SECRET.encode()
    assert Security().session_options() == {}
