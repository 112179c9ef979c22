"""The test brokers' TLS mode: the configuration (a plain and a TLS listener, the ``tlsConfig``
naming the PEM files, through the generated types), the test certificates, the fixtures and
``running_broker`` with ``tls=True``, a broker whose certificate cannot be read (the real one
aborts at start: a typed error naming its output), and the skip without a TLS-capable build."""

from __future__ import annotations

import datetime
import ssl
from pathlib import Path

import pybmq
import pytest
from cryptography import x509
from pybmq.errors import UsageError
from pybmq.generated import mqbcfg, mqbcfg_json
from pybmq.testing.broker_config import (
    BrokerSettings,
    ClusterLayout,
    ClusterMember,
    TlsListener,
    write_config_dir,
)
from pybmq.testing.brokers import BrokerHandle, BrokerUnavailable, running_broker
from pybmq.testing.certificates import SERVER_NAMES, TestCertificates
from pybmq.testing.real_broker import (
    BROKER_TLS_BIN_ENV,
    BrokerStartError,
    RealBroker,
    broker_executable,
)

pytestmark = [pytest.mark.timeout(120), pytest.mark.tls]


def listener(folder: Path, port: int = 31998) -> TlsListener:
    certificates = TestCertificates.make(folder / "certs")
    return TlsListener(port, certificates.ca, certificates.certificate, certificates.key)


def test_a_plain_and_a_tls_listener_and_the_tls_config(tmp_path: Path) -> None:
    tls = listener(tmp_path)
    config = write_config_dir(BrokerSettings(port=31999, folder=tmp_path, tls=tls))
    broker = mqbcfg_json.decode_json(
        mqbcfg.Configuration, (config / "bmqbrkrcfg.json").read_bytes()
    )
    tcp = broker.app_config.network_interfaces.tcp_interface
    assert tcp is not None
    assert [(x.address, x.port, x.tls) for x in tcp.listeners] == [
        ("127.0.0.1", 31999, False),
        ("127.0.0.1", 31998, True),
    ]
    assert broker.app_config.tls_config == mqbcfg.TlsConfig(
        certificate_authority=str(tls.ca),
        certificate=str(tls.certificate),
        key=str(tls.key),
        versions="TLSv1.3",
    )
    plain = write_config_dir(BrokerSettings(port=31999, folder=tmp_path / "plain"))
    assert b"tlsConfig" not in (plain / "bmqbrkrcfg.json").read_bytes()


def test_tls_is_for_a_single_node_on_a_port_of_its_own(tmp_path: Path) -> None:
    tls = listener(tmp_path)
    with pytest.raises(UsageError, match="port of its own"):
        BrokerSettings(port=31998, folder=tmp_path, tls=tls)
    layout = ClusterLayout("c", (ClusterMember(1, "n1", 31990),))
    with pytest.raises(UsageError, match="single node"):
        BrokerSettings(port=31990, folder=tmp_path, cluster=layout, node_id=1, tls=tls)


def test_certificates_for_localhost_valid_now_or_expired(tmp_path: Path) -> None:
    now = datetime.datetime.now(datetime.timezone.utc)
    fresh = TestCertificates.make(tmp_path / "fresh")
    expired = TestCertificates.make(tmp_path / "expired", expired=True)
    for made, valid in ((fresh, True), (expired, False)):
        certificate = x509.load_pem_x509_certificate(made.certificate.read_bytes())
        assert (certificate.not_valid_before_utc <= now <= certificate.not_valid_after_utc) is valid
        names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName)
        shown = [str(v) for v in names.value.get_values_for_type(x509.DNSName)] + [
            str(v) for v in names.value.get_values_for_type(x509.IPAddress)
        ]
        assert shown == list(SERVER_NAMES)
        ssl.create_default_context(cafile=str(made.ca)).load_cert_chain(
            str(made.certificate), str(made.key)
        )


def test_without_a_tls_build_the_real_kind_is_unavailable_and_says_which_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(BROKER_TLS_BIN_ENV, raising=False)
    assert broker_executable(tls=True) is None
    with (
        pytest.raises(BrokerUnavailable, match=BROKER_TLS_BIN_ENV),
        running_broker("real", tls=True),
    ):
        pass


def test_a_broker_without_tls_says_so(tmp_path: Path) -> None:
    broker = RealBroker("/bin/true", tmp_path)
    with pytest.raises(UsageError, match="no TLS listener"):
        _ = broker.tls_url


def test_a_certificate_the_broker_cannot_read_aborts_it_at_start(tmp_path: Path) -> None:
    executable = broker_executable(tls=True)
    if executable is None:
        pytest.skip(f"no TLS-capable broker: set {BROKER_TLS_BIN_ENV}")
    tls = listener(tmp_path)
    missing = TlsListener(tls.port, tls.ca, tmp_path / "gone.pem", tls.key)
    with (
        pytest.raises(BrokerStartError, match=r"exited|did not listen"),
        RealBroker(executable, tmp_path / "broker", tls=missing, start_timeout=30),
    ):
        pass


@pytest.mark.bmq_broker(tls=True)
def test_the_any_broker_fixture_with_tls(bmq_any_broker: BrokerHandle) -> None:
    assert bmq_any_broker.tls_url is not None and bmq_any_broker.tls_ca is not None
    options = pybmq.SessionOptions(tls_ca=str(bmq_any_broker.tls_ca))
    uri = f"bmq://bmq.test.mem.priority/fixture-{bmq_any_broker.kind}"
    with pybmq.Session(bmq_any_broker.tls_url, options=options) as session:
        queue = session.open_queue(uri, read=True, write=True)
        assert queue.post(b"fixture over tls").ok
        assert next(iter(queue)).payload == b"fixture over tls"


@pytest.mark.bmq_broker(tls=True)
def test_the_real_broker_fixture_with_tls(bmq_real_broker: RealBroker) -> None:
    assert bmq_real_broker.tls_port != bmq_real_broker.port
    assert bmq_real_broker.tls_ca.is_file()
    assert (bmq_real_broker.folder / "certs" / "server.pem").is_file()
