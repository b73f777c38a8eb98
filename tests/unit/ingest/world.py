"""A small ingest world in memory for the use-case tests: a memory corpus whose documents and edges
share a `space` scope column, two tenants, the in-memory adapters, and the `Ingest` use case over
them."""

from __future__ import annotations

import uuid
from typing import Any

from mnemo_axon.compiler import load_deployment
from mnemo_axon.ir import Deployment
from mnemo_ingest.fakes import MemoryDeadLetters, MemoryDirectory, MemoryIngestStore
from mnemo_ingest.use_cases import Command, Ingest, Refusal
from mnemo_store import OutboxEvent, StoreCorpus

DECLARATIONS = """
axonstore Docs {
    backend: postgresql
    schema { id: Text primary_key  space: Text not_null  title: Text not_null  body: Text }
}
axonstore Edges {
    backend: postgresql
    schema { from_id: Text not_null  to_id: Text not_null  etype: Text not_null
             weight: Float not_null  space: Text not_null }
}
axonstore Notes {
    backend: postgresql
    schema { id: Text primary_key  space: Text not_null  title: Text not_null  body: Text }
}
axonstore NoteLinks {
    backend: postgresql
    schema { from_id: Text not_null  to_id: Text not_null  etype: Text not_null
             weight: Float not_null  space: Text not_null }
}
corpus Memory from axonstore {
    documents: Docs(id, title, body)
    relations: Edges(from_id, to_id, etype, weight)
}
corpus Mirror from axonstore {
    documents: Docs(id, title, body)
    relations: NoteLinks(from_id, to_id, etype, weight)
}
corpus Notebook from axonstore {
    documents: Notes(id, title, body)
    relations: NoteLinks(from_id, to_id, etype, weight)
}
"""

DEPLOYMENT: Deployment = load_deployment(DECLARATIONS, "world.axon")
MEMORY = StoreCorpus.from_deployment(DEPLOYMENT, "Memory")
MIRROR = StoreCorpus.from_deployment(DEPLOYMENT, "Mirror")
NOTEBOOK = StoreCorpus.from_deployment(DEPLOYMENT, "Notebook")

TENANT = uuid.UUID("00000000-0000-4000-8000-00000000000a")
OTHER = uuid.UUID("00000000-0000-4000-8000-00000000000b")
CONSUMER = "mnemo.ingest"
PERSISTED = "test.persisted"
AUDIT = "test.audit"


class World:
    def __init__(self, *corpora: StoreCorpus) -> None:
        self.store = MemoryIngestStore()
        self.directory = MemoryDirectory(corpora or (MEMORY,), [TENANT, OTHER])
        self.dead = MemoryDeadLetters()
        self.ingest = Ingest(
            self.store,
            self.directory,
            self.dead,
            consumer=CONSUMER,
            persisted_topic=PERSISTED,
            audit_topic=AUDIT,
        )

    async def persist(self, *commands: Command) -> list[Refusal]:
        return await self.ingest.persist(commands)

    def rows(self, store: str, tenant: uuid.UUID = TENANT) -> list[dict[str, Any]]:
        return list(self.store.state(tenant).rows.get(store, []))

    def outbox(self, topic: str, tenant: uuid.UUID = TENANT) -> list[OutboxEvent]:
        return [e for e in self.store.state(tenant).outbox if e.topic == topic]

    def audits(self, tenant: uuid.UUID = TENANT) -> list[dict[str, Any]]:
        return [e.payload["data"]["record"] for e in self.outbox(AUDIT, tenant)]

    def pending(self, tenant: uuid.UUID = TENANT) -> list[Any]:
        return sorted(self.store.state(tenant).pending.values(), key=lambda e: e.pending_id)


def command(
    store: str,
    values: dict[str, Any],
    *,
    event_id: uuid.UUID | None = None,
    tenant: uuid.UUID = TENANT,
    producer: str = "agent",
    ref: object = None,
    trace_id: str | None = None,
    traceparent: str | None = None,
) -> Command:
    event_id = event_id or uuid.uuid4()
    return Command(
        ref=ref if ref is not None else f"ref-{event_id}",
        event_id=event_id,
        tenant=tenant,
        store=store,
        values=values,
        producer=producer,
        trace_id=trace_id,
        traceparent=traceparent,
    )


def doc(doc_id: str, space: str = "s1", **extra: Any) -> dict[str, Any]:
    return {"id": doc_id, "space": space, "title": f"Title {doc_id}", "body": "b", **extra}


def edge(
    source: str, target: str, space: str = "s1", etype: str = "cite", weight: float = 0.5
) -> dict[str, Any]:
    return {"from_id": source, "to_id": target, "etype": etype, "weight": weight, "space": space}
