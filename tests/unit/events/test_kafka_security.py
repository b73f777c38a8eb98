"""Kafka security settings: SASL and TLS become the options every client is built with, and a
configuration that would connect less securely than it says is refused before anything connects."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

import pytest
from faststream.security import BaseSecurity, SASLScram256, SASLScram512
from mnemo_events import broker as broker_module
from mnemo_events.security import broker_security, client_options, ssl_context
from mnemo_events.settings import KafkaSettings
from pydantic import ValidationError

pytestmark = pytest.mark.unit

SCRAM = {
    "security_protocol": "SASL_SSL",
    "sasl_username": "mnemo-ingest",
    "sasl_password": "s3cret-password",
}


def test_plaintext_is_the_default_and_carries_no_security() -> None:
    settings = KafkaSettings()
    assert broker_security(settings) is None
    assert ssl_context(settings) is None
    assert client_options(settings) == {"security_protocol": "PLAINTEXT"}


def test_sasl_ssl_with_scram_512_gives_the_broker_and_the_admin_client_the_same_credentials() -> (
    None
):
    settings = KafkaSettings.model_validate(SCRAM)
    security = broker_security(settings)
    assert isinstance(security, SASLScram512)
    assert (security.username, security.password, security.use_ssl) == (
        "mnemo-ingest",
        "s3cret-password",
        True,
    )
    assert isinstance(security.ssl_context, ssl.SSLContext)
    assert security.ssl_context.check_hostname
    options = client_options(settings)
    assert options["security_protocol"] == "SASL_SSL"
    assert options["sasl_mechanism"] == "SCRAM-SHA-512"
    assert (options["sasl_plain_username"], options["sasl_plain_password"]) == (
        "mnemo-ingest",
        "s3cret-password",
    )
    assert isinstance(options["ssl_context"], ssl.SSLContext)


def test_the_password_never_shows_in_the_settings_repr() -> None:
    assert "s3cret-password" not in repr(KafkaSettings.model_validate(SCRAM))


def test_the_environment_configures_scram_256_over_plaintext_sasl(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MNEMO_KAFKA_SECURITY_PROTOCOL", "SASL_PLAINTEXT")
    monkeypatch.setenv("MNEMO_KAFKA_SASL_MECHANISM", "SCRAM-SHA-256")
    monkeypatch.setenv("MNEMO_KAFKA_SASL_USERNAME", "u")
    monkeypatch.setenv("MNEMO_KAFKA_SASL_PASSWORD", "p")
    settings = KafkaSettings()
    security = broker_security(settings)
    assert isinstance(security, SASLScram256)
    assert security.use_ssl is False
    assert "ssl_context" not in client_options(settings)


def test_tls_alone_verifies_the_broker_against_the_given_ca(tmp_path: Path) -> None:
    # The system trust store stands in for a CA file here: the point is that the file is loaded.
    ca = ssl.get_default_verify_paths().cafile
    if ca is None:
        pytest.skip("no system CA bundle to load")
    settings = KafkaSettings(security_protocol="SSL", ssl_ca_file=ca, ssl_check_hostname=False)
    security = broker_security(settings)
    assert type(security) is BaseSecurity
    assert security.use_ssl
    assert security.ssl_context is not None
    assert security.ssl_context.check_hostname is False
    assert security.ssl_context.verify_mode == ssl.CERT_REQUIRED
    with pytest.raises(FileNotFoundError):
        ssl_context(KafkaSettings(security_protocol="SSL", ssl_ca_file=str(tmp_path / "none.pem")))


@pytest.mark.parametrize(
    ("given", "reason"),
    [
        ({"security_protocol": "SASL_SSL"}, "needs MNEMO_KAFKA_SASL_USERNAME"),
        ({"security_protocol": "SASL_SSL", "sasl_username": "u"}, "needs MNEMO_KAFKA_SASL"),
        ({"sasl_username": "u", "sasl_password": "p"}, "SASL credentials are set but"),
        ({"ssl_ca_file": "/ca.pem"}, "TLS files are set but"),
        (
            {"security_protocol": "SASL_PLAINTEXT", "ssl_ca_file": "/ca.pem", **SCRAM}
            | {"security_protocol": "SASL_PLAINTEXT"},
            "TLS files are set but",
        ),
        ({"security_protocol": "SSL", "ssl_cert_file": "/c.pem"}, "go together"),
        ({"security_protocol": "KERBEROS"}, "security_protocol"),
    ],
)
def test_a_half_secured_configuration_is_refused(given: dict[str, str], reason: str) -> None:
    with pytest.raises(ValidationError, match=reason):
        KafkaSettings.model_validate(given)


def test_every_broker_the_services_build_is_given_the_security(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    given: dict[str, Any] = {}

    def spy(*args: Any, **kwargs: Any) -> object:
        given.update(kwargs)
        return object()

    monkeypatch.setattr(broker_module, "KafkaBroker", spy)
    broker_module.create_broker(KafkaSettings.model_validate(SCRAM), client_id="t")
    assert isinstance(given["security"], SASLScram512)
    broker_module.create_broker(KafkaSettings(), client_id="t")
    assert given["security"] is None
