"""Postgres storage: tables, tenant-scoped units of work, store DDL, graph loading, reinforcement,
outbox, inbox.

Rows are reached only through `Store.tenant(tenant_id)`; see `unit_of_work`.
"""

from mnemo_store.errors import (
    CorpusStatusError,
    DeclarationRuleError,
    DestructiveChangeError,
    DuplicateTenantError,
    InvalidTenantNameError,
    InvalidValueError,
    LockTimeoutError,
    NotAStoreCorpusError,
    ReservedColumnError,
    RowLimitExceededError,
    StoreError,
    TenantTransactionClosedError,
    UnknownCorpusError,
    UnknownStoreError,
    UnknownTenantError,
)
from mnemo_store.loading import GraphArrays, LoadLimits
from mnemo_store.outbox import (
    EventPublisher,
    GroupingPublisher,
    OutboxEvent,
    OutboxMessage,
    OutboxRelay,
    PipelinedPublisher,
)
from mnemo_store.reinforcement import EdgeDelta
from mnemo_store.scope import Scope
from mnemo_store.store_corpus import StoreCorpus
from mnemo_store.unit_of_work import Store, TenantTransaction

__all__ = [
    "CorpusStatusError",
    "DeclarationRuleError",
    "DestructiveChangeError",
    "DuplicateTenantError",
    "EdgeDelta",
    "EventPublisher",
    "GraphArrays",
    "GroupingPublisher",
    "InvalidTenantNameError",
    "InvalidValueError",
    "LoadLimits",
    "LockTimeoutError",
    "NotAStoreCorpusError",
    "OutboxEvent",
    "OutboxMessage",
    "OutboxRelay",
    "PipelinedPublisher",
    "ReservedColumnError",
    "RowLimitExceededError",
    "Scope",
    "Store",
    "StoreCorpus",
    "StoreError",
    "TenantTransaction",
    "TenantTransactionClosedError",
    "UnknownCorpusError",
    "UnknownStoreError",
    "UnknownTenantError",
]
