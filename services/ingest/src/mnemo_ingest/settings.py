"""The ingest service's settings (`MNEMO_INGEST_…`, plus `MNEMO_KAFKA_…`, `MNEMO_HTTP_…` and the
relay's `MNEMO_RELAY_DATABASE_URL`)."""

from __future__ import annotations

from mnemo_events import AUDIT, DOCUMENT_PERSISTED
from mnemo_events.topics import FORGET
from mnemo_service import RelaySettings, ServiceSettings
from pydantic import Field, SecretStr
from pydantic_settings import SettingsConfigDict


class Settings(ServiceSettings, RelaySettings):
    model_config = SettingsConfigDict(env_prefix="MNEMO_INGEST_", frozen=True, extra="ignore")

    port: int = Field(default=8081, ge=1, le=65535)
    database_url: SecretStr = SecretStr(
        "postgresql://mnemo_ingest:mnemo_ingest@127.0.0.1:25432/mnemo"
    )
    """As the least-privilege role `mnemo_ingest` (`MNEMO_INGEST_DATABASE_URL`)."""
    pool_size: int = Field(default=8, ge=2)
    group: str = "mnemo.ingest"
    """Kafka consumer group. The inbox always deduplicates as `mnemo.ingest`, whatever the group."""
    topic: str = "mnemo.persist.v1"
    """The persist topic (tests give each run its own)."""
    forget_topic: str = FORGET
    """The forget commands' topic (tests give each run its own); consumed as `<group>.forget`."""
    persisted_topic: str = DOCUMENT_PERSISTED
    """Where `document.persisted` events go (through the outbox)."""
    audit_topic: str = AUDIT
    """Where the `store:<name>:persist` and `store:<name>:delete` audit events go (through the
    outbox)."""
    pending_hold_seconds: float = Field(default=300.0, gt=0)
    """How long an edge waits for its documents before it is dead-lettered."""
    pending_sweep_seconds: float = Field(default=5.0, gt=0)
