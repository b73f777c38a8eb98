"""The edge classifier's settings (`MNEMO_CLASSIFIER_…`, plus `MNEMO_KAFKA_…` and `MNEMO_HTTP_…`)."""

from __future__ import annotations

from typing import Literal

from mnemo_events import DOCUMENT_PERSISTED, PERSIST
from mnemo_service import ServiceSettings
from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import SettingsConfigDict


class Settings(ServiceSettings):
    model_config = SettingsConfigDict(
        env_prefix="MNEMO_CLASSIFIER_", frozen=True, extra="ignore", populate_by_name=True
    )

    port: int = Field(
        default=8082,
        validation_alias=AliasChoices("MNEMO_CLASSIFIER_PORT", "MNEMO_EDGE_CLASSIFIER_PORT"),
    )
    """`MNEMO_EDGE_CLASSIFIER_PORT` is the name `make up` and the local Prometheus use."""
    database_url: SecretStr = SecretStr(
        "postgresql://mnemo_classifier:mnemo_classifier@127.0.0.1:25432/mnemo"
    )
    """As the read-only role `mnemo_classifier` (`MNEMO_CLASSIFIER_DATABASE_URL`)."""
    group: str = "mnemo.edge-classifier"
    topic: str = DOCUMENT_PERSISTED
    """The topic consumed (tests and benchmarks give their own)."""
    persist_topic: str = PERSIST
    """Where the edges go, as persist commands for ingest."""
    pool_size: int = Field(default=4, ge=1)
    classifier: Literal["lexical", "llm"] = "lexical"
    index_max_bytes: int = Field(default=1 << 30, ge=0)
    """Memory for the in-memory candidate indexes of the (tenant, corpus, scope)s served (least
    recently used out first); a scope larger than this is read from Postgres per event (0: every
    scope is). The scope of a corpus's documents is not a setting: it is the columns its documents
    and edges stores share (`StoreCorpus.scope_columns`, as ingest keeps edges in scope)."""
    candidate_limit: int = Field(default=1000, ge=1, le=100_000)
    """Most candidates read per document: a safety bound. The candidates are the documents the
    classifier could join to the new one (titles it mentions, holders of its title, id and rare
    names), not a ranked sample; a document past the bound is missed."""
    max_links: int = Field(default=10, ge=1)
    keys_cache_size: int = Field(default=20_000, ge=0)
    """Documents whose classifier reading (`document_keys`) is kept for reuse (0: none)."""
    llm_base_url: str = "http://127.0.0.1:11434/v1"
    llm_model: str = "gpt-4o-mini"
    llm_api_key: SecretStr = SecretStr("")
    llm_timeout_seconds: float = Field(default=30.0, gt=0)
