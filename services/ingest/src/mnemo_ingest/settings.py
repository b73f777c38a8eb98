"""The ingest service's settings (`MNEMO_INGEST_…`, plus `MNEMO_KAFKA_…` and the relay's URL)."""

from __future__ import annotations

from mnemo_events import AUDIT, DOCUMENT_PERSISTED
from mnemo_events.settings import KafkaSettings
from mnemo_telemetry.tracing import TracingSettings
from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class IngestSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MNEMO_INGEST_", frozen=True, extra="ignore")

    host: str = "127.0.0.1"
    port: int = 8081
    database_url: str = "postgresql://mnemo_ingest:mnemo_ingest@127.0.0.1:25432/mnemo"
    """As the least-privilege role `mnemo_ingest` (`MNEMO_INGEST_DATABASE_URL`)."""
    relay_database_url: str = Field(
        default="postgresql://mnemo_relay:mnemo_relay@127.0.0.1:25432/mnemo",
        validation_alias=AliasChoices(
            "MNEMO_RELAY_DATABASE_URL", "MNEMO_INGEST_RELAY_DATABASE_URL"
        ),
    )
    """The outbox relay connects as `mnemo_relay`, whose policy reaches the outbox only."""
    group: str = "mnemo.ingest"
    """Kafka consumer group. The inbox always deduplicates as `mnemo.ingest`, whatever the group."""
    topic: str = "mnemo.persist.v1"
    """The persist topic (tests give each run its own)."""
    persisted_topic: str = DOCUMENT_PERSISTED
    """Where `document.persisted` events go (through the outbox)."""
    audit_topic: str = AUDIT
    """Where the `store:<name>:persist` audit events go (through the outbox)."""
    pool_size: int = Field(default=8, ge=2)
    pending_hold_seconds: float = Field(default=300.0, gt=0)
    """How long an edge waits for its documents before it is dead-lettered."""
    pending_sweep_seconds: float = Field(default=5.0, gt=0)
    relay_batch_size: int = Field(default=500, ge=1)
    log_level: str = "INFO"
    kafka: KafkaSettings = Field(default_factory=KafkaSettings)
    tracing: TracingSettings = Field(default_factory=TracingSettings)
    """`MNEMO_OTLP_ENDPOINT`: where spans go (none: made, exported nowhere)."""
