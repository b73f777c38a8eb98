"""Kafka settings shared by every service: one pydantic-settings class, read from `MNEMO_KAFKA_…`.

A service's own settings class holds one of these (`kafka: KafkaSettings = Field(default_factory=
KafkaSettings)`), so the environment is read when the service builds its settings, never at import.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


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
    max_partition_fetch_bytes: int = Field(default=64 * 1024, ge=1024)
    """Most bytes one fetch takes from one partition. The client hands out a partition's fetched
    records before the next partition's, so this bounds how long a busy partition's backlog can
    keep the others of the same consumer waiting (the client's 1 MiB default let one backlog hold
    every other partition for thousands of records); a larger producer batch is still fetched."""
    graceful_timeout_seconds: float = Field(default=8.0, gt=0)
    """How long a stopping consumer waits for the batch in hand (SIGTERM must end within 10 s)."""
    request_timeout_ms: int = Field(default=10_000, ge=1000)
