"""Kafka settings shared by every service: one pydantic-settings class, read from `MNEMO_KAFKA_…`.

A service's own settings class holds one of these (`kafka: KafkaSettings = Field(default_factory=
KafkaSettings)`), so the environment is read when the service builds its settings, never at import.

Security: `MNEMO_KAFKA_SECURITY_PROTOCOL` (`PLAINTEXT`, `SSL`, `SASL_PLAINTEXT`, `SASL_SSL`), SASL
credentials (`MNEMO_KAFKA_SASL_MECHANISM`, default SCRAM-SHA-512, `MNEMO_KAFKA_SASL_USERNAME`,
`MNEMO_KAFKA_SASL_PASSWORD`) and TLS files (`MNEMO_KAFKA_SSL_CA_FILE`, and for mutual TLS
`MNEMO_KAFKA_SSL_CERT_FILE` with `MNEMO_KAFKA_SSL_KEY_FILE`). A setting that the protocol would
ignore is refused, so a half-secured configuration never connects in the clear.
"""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

SecurityProtocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
SaslMechanism = Literal["SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"]


class KafkaSettings(BaseSettings):
    """Where the broker is, how topics are created, and how consumers retry and dead-letter."""

    model_config = SettingsConfigDict(env_prefix="MNEMO_KAFKA_", frozen=True, extra="ignore")

    bootstrap: str = "127.0.0.1:29092"
    """Comma-separated `host:port` list (`MNEMO_KAFKA_BOOTSTRAP`)."""
    partitions: int = Field(default=6, ge=1)
    """Partitions of every topic Mnemo creates (tenants spread over them by key)."""
    replication_factor: int = Field(default=1, ge=1)
    retention_ms: int = Field(default=7 * 24 * 3600 * 1000, ge=-1)
    """Retention of the event topics; -1 keeps forever."""
    dead_letter_retention_ms: int = Field(default=30 * 24 * 3600 * 1000, ge=-1)
    """Retention of the `<topic>.dlt` topics (longer: someone has to read them)."""
    max_attempts: int = Field(default=5, ge=1)
    """A message whose handler keeps failing is dead-lettered after this many attempts."""
    retry_backoff_seconds: float = Field(default=0.2, gt=0)
    """First pause between attempts; doubles each time, capped by `retry_backoff_max_seconds`."""
    retry_backoff_max_seconds: float = Field(default=5.0, gt=0)
    batch_max_records: int = Field(default=500, ge=1)
    """Most records a batch consumer takes at once."""
    batch_timeout_ms: int = Field(default=200, ge=1)
    max_partition_fetch_bytes: int = Field(default=256 * 1024, ge=1024)
    """Most bytes one fetch takes from one partition. The client hands out a partition's fetched
    records before the next partition's, so this bounds how long a busy partition's backlog can
    keep the others of the same consumer waiting (the client's 1 MiB default let one backlog hold
    every other partition for thousands of records); a larger producer batch is still fetched.
    It also bounds a busy partition's batches: a partition is fetched again only once its records
    are handled, so at 64 KiB (about a hundred persist records) ingest spent more time between
    batches than in them and fell behind 100 documents a second with their edges (bench/README.md,
    "Ingest held to a hundred records a batch")."""
    graceful_timeout_seconds: float = Field(default=8.0, gt=0)
    """How long a stopping consumer waits for the batch in hand (SIGTERM must end within 10 s)."""
    request_timeout_ms: int = Field(default=10_000, ge=1000)

    security_protocol: SecurityProtocol = "PLAINTEXT"
    sasl_mechanism: SaslMechanism = "SCRAM-SHA-512"
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None
    ssl_ca_file: str | None = None
    """PEM file of the CA(s) that signed the broker certificates (none: the system's trust store)."""
    ssl_cert_file: str | None = None
    """PEM client certificate, for brokers that authenticate clients by TLS (with `ssl_key_file`)."""
    ssl_key_file: str | None = None
    ssl_check_hostname: bool = True
    provision_topics: bool = True
    """Whether a service creates the topics it uses at start-up. Off where an operator (or
    `python -m mnemo_events.provisioning` with an administrator's credentials) creates them and
    each service's principal may only read and write its own topics."""

    @model_validator(mode="after")
    def _consistent_security(self) -> Self:
        sasl = self.security_protocol.startswith("SASL_")
        tls = self.security_protocol.endswith("SSL")
        if sasl and not (self.sasl_username and self.sasl_password):
            raise ValueError(
                f"security protocol {self.security_protocol} needs MNEMO_KAFKA_SASL_USERNAME "
                "and MNEMO_KAFKA_SASL_PASSWORD"
            )
        if not sasl and (self.sasl_username or self.sasl_password):
            raise ValueError(
                "SASL credentials are set but MNEMO_KAFKA_SECURITY_PROTOCOL is "
                f"{self.security_protocol}: set SASL_SSL (or SASL_PLAINTEXT)"
            )
        tls_files = [self.ssl_ca_file, self.ssl_cert_file, self.ssl_key_file]
        if not tls and any(tls_files):
            raise ValueError(
                "TLS files are set but MNEMO_KAFKA_SECURITY_PROTOCOL is "
                f"{self.security_protocol}: set SSL or SASL_SSL"
            )
        if bool(self.ssl_cert_file) != bool(self.ssl_key_file):
            raise ValueError("MNEMO_KAFKA_SSL_CERT_FILE and MNEMO_KAFKA_SSL_KEY_FILE go together")
        return self
