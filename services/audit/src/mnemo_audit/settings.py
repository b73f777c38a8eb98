"""The audit service's configuration: environment variables `MNEMO_AUDIT_*` (and `MNEMO_KAFKA_*`)."""

from __future__ import annotations

from mnemo_auth import DEVELOPMENT_SECRET, TokenKeys
from mnemo_events import AUDIT
from mnemo_events.settings import KafkaSettings
from mnemo_telemetry.tracing import TracingSettings
from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from mnemo_audit.producers import DEFAULT_PRODUCERS, AuditKind


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MNEMO_AUDIT_", frozen=True, extra="ignore")

    host: str = "127.0.0.1"
    port: int = 8083
    database_url: str = "postgresql://mnemo_audit:mnemo_audit@127.0.0.1:25432/mnemo"
    """Connects as the audit role, the only one that may append to the audit log."""
    topic: str = AUDIT
    """The topic consumed (tests and benchmarks give their own)."""
    group: str = "mnemo.audit"
    producers: dict[str, frozenset[AuditKind]] = Field(
        default_factory=lambda: dict(DEFAULT_PRODUCERS)
    )
    """The producers whose audit events are appended, and the record kinds each may write
    (`MNEMO_AUDIT_PRODUCERS`, JSON: `{"mnemo.ingest": ["persist"], "mnemo.navigator": ["query"]}`).
    Any other event is dead-lettered with the reason."""
    pool_size: int = Field(default=4, ge=1)
    page_limit: int = Field(default=1000, ge=1)
    """Most rows one `GET /v1/audit` answers."""
    token_secret: str | None = Field(
        default=None,
        validation_alias=AliasChoices("MNEMO_AUDIT_TOKEN_SECRET", "MNEMO_TOKEN_SECRET"),
    )
    """HS256 key of bearer tokens; with no key of any kind, the local development key."""
    token_public_key: str | None = Field(
        default=None,
        validation_alias=AliasChoices("MNEMO_AUDIT_TOKEN_PUBLIC_KEY", "MNEMO_TOKEN_PUBLIC_KEY"),
    )
    jwks_url: str | None = Field(
        default=None, validation_alias=AliasChoices("MNEMO_AUDIT_JWKS_URL", "MNEMO_JWKS_URL")
    )
    kafka: KafkaSettings = Field(default_factory=KafkaSettings)
    tracing: TracingSettings = Field(default_factory=TracingSettings)
    """`MNEMO_OTLP_ENDPOINT`: where spans go (none: made, exported nowhere)."""

    def token_keys(self) -> TokenKeys:
        """The one key source configured (the local development key when none is)."""
        if self.jwks_url:
            return TokenKeys(jwks_url=self.jwks_url)
        if self.token_public_key:
            return TokenKeys(public_key=self.token_public_key)
        return TokenKeys(secret=self.token_secret or DEVELOPMENT_SECRET)
