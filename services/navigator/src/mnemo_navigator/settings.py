"""The navigator's configuration: one pydantic-settings class, read from `MNEMO_NAVIGATOR_…`.

`pinned_scopes` is the deployment's per-corpus scope templates (ARCHITECTURE §2), as JSON:
`MNEMO_NAVIGATOR_PINNED_SCOPES='{"Memories": "tenant_id == '"'"'${client.tenant_id}'"'"'"}'`.
A template may reference only `${client.…}` names: they bind from the verified token's `client`
claim and from nothing else.

The token keys, the HTTP limits, Kafka, tracing and the outbox relay are the kit's settings
(`mnemo_service`): `MNEMO_NAVIGATOR_TOKEN_SECRET` (or `MNEMO_TOKEN_SECRET`), `MNEMO_HTTP_…`,
`MNEMO_KAFKA_…`, `MNEMO_RELAY_DATABASE_URL`, `MNEMO_NAVIGATOR_RELAY_OUTBOX`.
"""

from __future__ import annotations

from typing import Literal

from mnemo_axon.where import parse_filter
from mnemo_axon.where.syntax import ParameterRef, StringValue
from mnemo_events.topics import AUDIT, FORGET, NAVIGATE_REQUESTED, PERSIST
from mnemo_service import AuthSettings, RelaySettings, ServiceSettings
from pydantic import Field, SecretStr, field_validator
from pydantic_settings import SettingsConfigDict

from mnemo_navigator.mcp_corpora import McpServer


class Settings(ServiceSettings, AuthSettings, RelaySettings):
    model_config = SettingsConfigDict(env_prefix="MNEMO_NAVIGATOR_", frozen=True, extra="ignore")

    port: int = Field(default=8080, ge=1, le=65535)
    database_url: SecretStr = SecretStr(
        "postgresql://mnemo_navigator:mnemo_navigator@127.0.0.1:25432/mnemo"
    )
    pool_size: int = Field(default=10, ge=2)

    pinned_scopes: dict[str, str] = Field(default_factory=dict)
    """Corpus id → scope template; see the module docstring."""
    audit_query_text: Literal["text", "digest"] = "text"
    """Whether audit events carry the query text or only its digest."""
    audit_topic: str = AUDIT
    """The topic the query audit events go to, through the outbox (a test's or a benchmark's own
    process gives its own, so its events never reach the stack's audit service)."""
    cache_max_bytes: int = Field(default=2 * 1024**3, ge=0)
    """Bound of the graph cache (0 turns it off). A million-document graph with short bodies
    counts about 1.15 GB with its term index and merge rows; see the README."""
    cache_tenant_share: float = Field(default=0.5, gt=0, le=1)
    """A tenant's fair share of `cache_max_bytes`: not a cap while the cache has room, but once
    it is full the least recently used graphs of tenants over their share go first, so a tenant
    flooding the cache with scopes evicts its own graphs, never those of a tenant within its share
    (1: plain LRU)."""
    cache_scopes_per_corpus: int = Field(default=64, ge=1)
    """How many scopes (distinct `where:` filters and pinned client scopes) of one corpus one
    tenant may have cached; one more evicts that tenant's least recently used scope of the corpus."""
    default_budget: int = Field(default=5, ge=1, le=1000)
    max_documents: int = Field(default=2_000_000, ge=1)
    max_edges: int = Field(default=10_000_000, ge=0)

    max_body_bytes: int = Field(default=1024**2, ge=1024)
    """Largest request body accepted (413 beyond it, refused from `Content-Length` or as the bytes
    arrive, before anything parses them). 1 MiB is far above any valid request."""
    prefetch_timeout_seconds: float = Field(default=5.0, gt=0, le=120)
    """The longest a route's prefetch waits for one gateway's answer (the call fails past it)."""
    gateway_url: str | None = None
    """Where callers reach this navigator (`mnemo apply --gateway-url`); default
    `http://HOST:PORT`. A prefetch sends the caller's token to urls under its `/v1/corpora/` only."""
    tenant_cache_seconds: float = Field(default=60.0, ge=0)
    """How long a tenant found in `mnemo.tenants` is believed to exist without asking again (a
    tenant not found is asked about on every request)."""
    max_navigations: int = Field(default=64, ge=1)
    """Store-corpus navigations in flight at most; one more over HTTP or MCP answers 503 `BUSY`
    with `Retry-After` at once (a Kafka request is never refused, but counts). Past what the CPU
    serves, a longer queue only makes every answer late."""
    compute_threads: int = Field(default=2, ge=1, le=64)
    """Worker threads for graph work: loads, refreshes, EPR, walks. Python runs one of them at a
    time (numpy's and scipy's kernels aside), so threads beyond the cores only cut that time finer
    and take the interpreter from the event loop, which answers requests and holds each scope's
    memory write while it runs (bench/README.md, issue 22's load runs). About the core count."""

    mcp_servers: dict[str, McpServer] = Field(default_factory=dict)
    """The MCP servers MCP-bound corpora name, by the name their declaration gives: a streamable
    HTTP `url` (with `headers`, e.g. credentials) or a stdio `command` (with `env`), as JSON:
    `MNEMO_NAVIGATOR_MCP_SERVERS='{"clinical-mcp.internal": {"url": "https://…/mcp"}}'`."""
    mcp_cache_seconds: float = Field(default=60.0, ge=0)
    """How long an MCP-bound corpus's resource listing and texts are reused before being read again."""
    mcp_timeout_seconds: float = Field(default=10.0, gt=0, le=300)
    """The longest listing and reading an MCP-bound corpus may take (a 502 naming the server past it)."""

    consume_requests: bool = True
    """Serve `mnemo.navigate.requested.v1` (off: HTTP only, no broker needed)."""
    requests_topic: str = NAVIGATE_REQUESTED
    """The topic of navigate requests (a test's own process gives its own, so it never competes
    with the stack's navigator for requests)."""
    group: str = "mnemo.navigator"
    """Kafka consumer group. The inbox always deduplicates as `mnemo.navigator`, whatever the group."""

    persist_topic: str = PERSIST
    """Where rows written over HTTP go, as persist events through the outbox (a test's own process
    gives its own topic, read by an ingest of its own)."""
    forget_topic: str = FORGET
    """Where forget commands sent over HTTP go (`DELETE /v1/stores/{store}/rows/{id}`), through the
    outbox, for ingest."""
    ingest_inbox: str = "mnemo.ingest"
    """The inbox name ingest deduplicates under: a write's `?wait=` waits for its ids there."""
    write_publish_seconds: float = Field(default=10.0, gt=0)
    """How long a write waits for the relay to publish its rows before answering 503 (the rows
    stay queued and are written all the same)."""

    @field_validator("pinned_scopes")
    @classmethod
    def _templates_bind_only_client_names(cls, value: dict[str, str]) -> dict[str, str]:
        for corpus, template in value.items():
            parsed = parse_filter(template)
            for condition in parsed.conditions:
                if not isinstance(condition.value, StringValue):
                    continue
                for part in condition.value.parts:
                    if isinstance(part, ParameterRef) and part.path[0] != "client":
                        raise ValueError(
                            f"pinned scope of {corpus!r}: ${{{part.name}}} is not a client name; "
                            "a pinned scope binds only ${client.…} names from the token"
                        )
        return value
