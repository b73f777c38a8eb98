"""The audit service's configuration: environment variables `MNEMO_AUDIT_*` (and `MNEMO_KAFKA_*`,
`MNEMO_HTTP_*`; the token keys also as `MNEMO_TOKEN_SECRET`, `MNEMO_TOKEN_PUBLIC_KEY`,
`MNEMO_JWKS_URL`)."""

from __future__ import annotations

from mnemo_events import AUDIT
from mnemo_events.audit_checkpoints import CHECKPOINTS
from mnemo_service import AuthSettings, ServiceSettings
from pydantic import Field, SecretStr
from pydantic_settings import SettingsConfigDict

from mnemo_audit.producers import DEFAULT_PRODUCERS, AuditKind


class Settings(ServiceSettings, AuthSettings):
    model_config = SettingsConfigDict(env_prefix="MNEMO_AUDIT_", frozen=True, extra="ignore")

    port: int = Field(default=8083, ge=1, le=65535)
    database_url: SecretStr = SecretStr(
        "postgresql://mnemo_audit:mnemo_audit@127.0.0.1:25432/mnemo"
    )
    """Connects as the audit role, the only one that may append to the audit log."""
    pool_size: int = Field(default=4, ge=1)
    topic: str = AUDIT
    """The topic consumed (tests and benchmarks give their own)."""
    group: str = "mnemo.audit"
    producers: dict[str, frozenset[AuditKind]] = Field(
        default_factory=lambda: dict(DEFAULT_PRODUCERS)
    )
    """The producers whose audit events are appended, and the record kinds each may write
    (`MNEMO_AUDIT_PRODUCERS`, JSON: `{"mnemo.ingest": ["persist"], "mnemo.navigator": ["query"]}`).
    Any other event is dead-lettered with the reason."""
    page_limit: int = Field(default=1000, ge=1)
    """Most rows one `GET /v1/audit` answers."""
    checkpoint_topic: str = CHECKPOINTS
    """The compacted topic the chains' head checkpoints go to (`mnemo audit verify --checkpoints`)."""
    checkpoint_interval_seconds: float = Field(default=10.0, gt=0)
    """How often the heads of the chains that grew are published: rows appended since the last
    checkpoint can be cut or rewritten unseen, so this bounds that window."""
