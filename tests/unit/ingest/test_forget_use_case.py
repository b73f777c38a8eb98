"""Forgetting a document on the in-memory adapters: what goes with it (edges in every corpus's
relations store, parked edges, outcomes), what stays (other documents, other tenants, rows outside
the match), the revisions it moves, the audit record it leaves, and what it refuses."""

from __future__ import annotations

import uuid

from mnemo_ingest.use_cases import DIFFERENT_PAYLOAD, PRODUCER, Forget, ForgetCommand

from tests.unit.ingest.world import (
    AUDIT,
    CONSUMER,
    MEMORY,
    MIRROR,
    NOTEBOOK,
    OTHER,
    TENANT,
    World,
    command,
    doc,
    edge,
)


def forget(world: World) -> Forget:
    return Forget(world.store, world.directory, consumer=CONSUMER, audit_topic=AUDIT)


def order(
    document_id: str,
    *,
    store: str = "Docs",
    tenant: uuid.UUID = TENANT,
    match: dict[str, str] | None = None,
    event_id: uuid.UUID | None = None,
) -> ForgetCommand:
    event_id = event_id or uuid.uuid4()
    return ForgetCommand(
        ref=f"ref-{event_id}",
        event_id=event_id,
        tenant=tenant,
        store=store,
        document_id=document_id,
        producer="agent-7",
        match=match or {},
    )


async def seeded(world: World) -> None:
    refused = await world.persist(
        command("Docs", doc("a")),
        command("Docs", doc("b")),
        command("Docs", doc("c", "s2")),
        command("Edges", edge("a", "b")),
        command("Edges", edge("b", "a")),
        command("NoteLinks", edge("a", "b")),
        command("Edges", edge("a", "later")),  # parked: waits for "later"
        command("Docs", doc("a"), tenant=OTHER),
    )
    assert refused == []


async def test_a_document_goes_with_every_edge_touching_it_its_parked_edges_and_outcomes() -> None:
    world = World(MEMORY, MIRROR)
    await seeded(world)
    state = world.store.state(TENANT)
    state.outcomes += [("Memory", ("b", "a")), ("Memory", ("b",)), ("Mirror", ("a",))]
    revisions = dict(state.revisions)
    done, refused = await forget(world).forget([order("a")])
    assert refused == []
    assert [(f.document_id, f.edges, f.pending, f.outcomes) for f in done] == [("a", 3, 1, 2)]
    state = world.store.state(TENANT)
    assert [r["id"] for r in world.rows("Docs")] == ["b", "c"]
    assert world.rows("Edges") == []
    assert world.rows("NoteLinks") == []
    assert world.pending() == []
    assert state.outcomes == [("Memory", ("b",))]
    assert all(state.revisions[c] == revisions[c] + 1 for c in ("Memory", "Mirror"))
    # The other tenant's "a" is another document: untouched.
    assert [r["id"] for r in world.rows("Docs", OTHER)] == ["a"]


async def test_the_delete_audit_record_names_who_and_what_never_the_content() -> None:
    world = World(MEMORY, MIRROR)
    await seeded(world)
    event = uuid.uuid4()
    await forget(world).forget([order("a", event_id=event)])
    record = world.audits()[-1]
    assert record["action"] == "store:Docs:delete"
    assert record["kind"] == "delete"
    assert record["row_ids"] == ["a"]
    assert record["principal"] == "agent-7"
    assert record["source_event_ids"] == [str(event)]
    assert (record["edges_removed"], record["pending_removed"]) == (3, 1)
    assert "Title a" not in str(record)
    audit = world.outbox(AUDIT)[-1]
    assert audit.payload["producer"] == PRODUCER


async def test_a_redelivered_forget_does_nothing_twice_and_a_reused_id_is_refused() -> None:
    world = World(MEMORY, MIRROR)
    await seeded(world)
    event = uuid.uuid4()
    done, _ = await forget(world).forget([order("a", event_id=event)])
    assert len(done) == 1
    audits = len(world.audits())
    assert await forget(world).forget([order("a", event_id=event)]) == ([], [])
    assert len(world.audits()) == audits
    _, refused = await forget(world).forget([order("b", event_id=event)])
    assert DIFFERENT_PAYLOAD in refused[0].reason
    assert [r["id"] for r in world.rows("Docs")] == ["b", "c"]


async def test_a_document_outside_the_match_or_of_another_tenant_is_refused_and_nothing_goes() -> (
    None
):
    world = World(MEMORY, MIRROR)
    await seeded(world)
    before = {s: world.rows(s) for s in ("Docs", "Edges")}
    revisions = dict(world.store.state(TENANT).revisions)
    _, refused = await forget(world).forget(
        [order("c", match={"space": "s1"}), order("zz"), order("a", tenant=uuid.uuid4())]
    )
    assert len(refused) == 3
    assert "no document 'c' in store 'Docs'" in refused[0].reason
    assert "within the given match" in refused[0].reason
    assert "no document 'zz'" in refused[1].reason
    assert "unknown tenant" in refused[2].reason
    assert {s: world.rows(s) for s in ("Docs", "Edges")} == before
    assert dict(world.store.state(TENANT).revisions) == revisions
    assert [a["action"] for a in world.audits()].count("store:Docs:delete") == 0
    # The refused command's claim went with its unit of work: the same id may try again.
    retry = order("c", match={"space": "s2"}, event_id=world_event(refused[0].ref))
    done, refused = await forget(world).forget([retry])
    assert refused == []
    assert [f.document_id for f in done] == ["c"]


def world_event(ref: object) -> uuid.UUID:
    return uuid.UUID(str(ref).removeprefix("ref-"))


async def test_a_store_that_holds_no_documents_or_a_match_on_an_unknown_column_is_refused() -> None:
    world = World(MEMORY, NOTEBOOK)
    await seeded(world)
    _, refused = await forget(world).forget(
        [order("a", store="Edges"), order("a", store="Nope"), order("a", match={"nope": "x"})]
    )
    assert "holds no documents" in refused[0].reason
    assert "holds no documents" in refused[1].reason
    assert "no column(s) nope" in refused[2].reason
    assert [r["id"] for r in world.rows("Docs")] == ["a", "b", "c"]
