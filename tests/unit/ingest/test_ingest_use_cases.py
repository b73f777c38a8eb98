"""The ingest use case on the in-memory adapters: every decision it takes about a batch (writes,
refusals, duplicates, parked edges, dead letters, the events it announces), with no database."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from mnemo_axon.compiler import load_deployment
from mnemo_ingest.ports import StoreUse
from mnemo_ingest.use_cases import DIFFERENT_PAYLOAD, PRODUCER, Refusal

from tests.unit.ingest.world import (
    AUDIT,
    CONSUMER,
    MEMORY,
    MIRROR,
    NOTEBOOK,
    OTHER,
    PERSISTED,
    TENANT,
    World,
    command,
    doc,
    edge,
)

TRACE = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def reasons(refusals: list[Refusal]) -> dict[object, str]:
    return {r.ref: r.reason for r in refusals}


# ----------------------------------------------------------------------------------- documents


async def test_a_document_is_written_with_a_persisted_event_and_an_audit_event() -> None:
    world = World()
    sent = command("Docs", doc("a"), producer="agent-1", trace_id="t1", traceparent=TRACE)
    assert await world.persist(sent) == []
    assert world.rows("Docs") == [{"id": "a", "space": "s1", "title": "Title a", "body": "b"}]
    [persisted] = world.outbox(PERSISTED)
    assert persisted.event_id == uuid.uuid5(sent.event_id, "persisted:Memory")
    assert persisted.key == str(TENANT).encode()
    assert persisted.headers["traceparent"] == TRACE
    assert persisted.payload["data"] == {
        "corpus": "Memory",
        "store": "Docs",
        "id": "a",
        "values": doc("a"),
    }
    [audit] = world.audits()
    assert audit["action"] == "store:Docs:persist"
    assert audit["row_ids"] == ["a"]
    assert audit["source_event_ids"] == [str(sent.event_id)]
    assert (audit["principal"], audit["trace_id"]) == ("agent-1", "t1")
    assert world.outbox(AUDIT)[0].payload["producer"] == PRODUCER
    assert world.store.state(TENANT).revisions == {"Memory": 1}


async def test_a_document_read_by_two_corpora_gets_a_persisted_event_for_each() -> None:
    world = World(MEMORY, MIRROR)
    sent = command("Docs", doc("a"))
    assert await world.persist(sent) == []
    persisted = world.outbox(PERSISTED)
    assert sorted(e.payload["data"]["corpus"] for e in persisted) == ["Memory", "Mirror"]
    assert {e.event_id for e in persisted} == {
        uuid.uuid5(sent.event_id, "persisted:Memory"),
        uuid.uuid5(sent.event_id, "persisted:Mirror"),
    }
    assert len(world.audits()) == 1
    assert world.store.state(TENANT).revisions == {"Memory": 1, "Mirror": 1}


async def test_one_audit_event_per_store_names_every_source_and_producer_of_the_batch() -> None:
    world = World()
    first = command("Docs", doc("a"), producer="zeta", trace_id="t-first")
    second = command("Docs", doc("b"), producer="alpha", trace_id="t-second")
    assert await world.persist(first, second) == []
    [audit] = world.audits()
    assert audit["row_ids"] == ["a", "b"]
    assert audit["source_event_ids"] == sorted(str(c.event_id) for c in (first, second))
    assert audit["principal"] == "alpha,zeta"
    assert audit["trace_id"] == "t-first"


async def test_a_row_of_a_store_no_corpus_reads_is_audited_by_its_event_id() -> None:
    world = World()
    world.directory.replace_stores({"Docs": StoreUse(MEMORY.documents)})
    sent = command("Docs", doc("a"))
    assert await world.persist(sent) == []
    assert len(world.rows("Docs")) == 1
    assert world.outbox(PERSISTED) == []
    [audit] = world.audits()
    assert audit["row_ids"] == [str(sent.event_id)]


# ------------------------------------------------------------------------------------ refusals


async def test_every_command_of_a_tenant_erased_since_the_directory_saw_it_is_refused() -> None:
    world = World()
    assert await world.persist(command("Docs", doc("a"))) == []
    world.store.erased.add(TENANT)
    sent = [command("Docs", doc("b")), command("Docs", doc("c"))]
    refused = reasons(await world.persist(*sent))
    assert refused == {
        c.ref: f"tenant {TENANT} has been erased: nothing may be written for it" for c in sent
    }
    assert [r["id"] for r in world.rows("Docs")] == ["a"]


async def test_every_command_of_an_unknown_tenant_is_refused_and_nothing_is_written() -> None:
    world = World()
    stranger = uuid.uuid4()
    sent = [command("Docs", doc("a"), tenant=stranger), command("Docs", doc("b"), tenant=stranger)]
    refused = reasons(await world.persist(*sent, command("Docs", doc("c"))))
    assert refused == {c.ref: f"unknown tenant {stranger}" for c in sent}
    assert world.store.state(stranger).inbox == set()
    assert [r["id"] for r in world.rows("Docs")] == ["c"]


async def test_a_row_for_an_undeclared_store_is_refused_saying_how_to_declare_it() -> None:
    world = World()
    sent = command("Nowhere", doc("a"))
    [refusal] = await world.persist(sent)
    assert refusal.ref == sent.ref
    assert "unknown store 'Nowhere'" in refusal.reason
    assert "mnemo apply" in refusal.reason


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({**doc("a"), "colour": "red"}, "has no column 'colour'"),
        ({"id": "a", "space": "s1", "body": "b"}, "column 'title' is required"),
        ({**doc("a"), "title": None}, "null is not allowed"),
    ],
    ids=["undeclared-column", "missing-required-column", "null-in-not-null-column"],
)
async def test_a_row_whose_values_do_not_fit_the_store_is_refused_saying_why(
    values: dict[str, object], expected: str
) -> None:
    world = World()
    [refusal] = await world.persist(command("Docs", values))
    assert expected in refusal.reason
    assert world.rows("Docs") == []


async def test_an_edge_type_outside_the_relation_catalog_is_refused_g3() -> None:
    world = World()
    [refusal] = await world.persist(command("Edges", edge("a", "b", etype="likes")))
    assert "not in the relation catalog (G3)" in refusal.reason
    assert "cite" in refusal.reason


@pytest.mark.parametrize("weight", [0.0, -0.5, 1.5])
async def test_an_edge_weight_outside_zero_to_one_is_refused_g4(weight: float) -> None:
    world = World()
    [refusal] = await world.persist(command("Edges", edge("a", "b", weight=weight)))
    assert "outside (0, 1] (G4)" in refusal.reason


async def test_nothing_is_claimed_when_every_command_of_a_tenant_is_refused() -> None:
    world = World()
    sent = command("Docs", {"id": "a"})
    assert len(await world.persist(sent)) == 1
    assert world.store.state(TENANT).inbox == set()
    assert world.store.state(TENANT).outbox == []


# ---------------------------------------------------------------------------------- duplicates


async def test_the_same_event_twice_in_one_batch_is_written_once_and_not_refused() -> None:
    world = World()
    first = command("Docs", doc("a"))
    again = command("Docs", doc("a"), event_id=first.event_id, ref="again")
    assert await world.persist(first, again) == []
    assert len(world.rows("Docs")) == 1
    assert len(world.outbox(PERSISTED)) == 1


async def test_an_event_id_reused_in_one_batch_with_another_payload_is_refused() -> None:
    world = World()
    first = command("Docs", doc("a"))
    other = command("Docs", doc("b"), event_id=first.event_id, ref="other")
    [refusal] = await world.persist(first, other)
    assert refusal.ref == "other"
    assert refusal.reason.startswith(DIFFERENT_PAYLOAD)
    assert "earlier in this batch" in refusal.reason
    assert [r["id"] for r in world.rows("Docs")] == ["a"]


async def test_a_redelivered_event_is_skipped_quietly() -> None:
    world = World()
    sent = command("Docs", doc("a"))
    assert await world.persist(sent) == []
    assert await world.persist(command("Docs", doc("a"), event_id=sent.event_id)) == []
    assert len(world.rows("Docs")) == 1
    assert len(world.outbox(PERSISTED)) == 1
    assert len(world.audits()) == 1


async def test_an_event_id_processed_before_with_another_payload_is_refused() -> None:
    world = World()
    sent = command("Docs", doc("a"))
    await world.persist(sent)
    reused = command("Docs", doc("b"), event_id=sent.event_id, ref="reused")
    [refusal] = await world.persist(reused)
    assert refusal.ref == "reused"
    assert refusal.reason.startswith(DIFFERENT_PAYLOAD)
    assert "was processed before" in refusal.reason
    assert [r["id"] for r in world.rows("Docs")] == ["a"]


async def test_a_refused_first_message_does_not_hide_a_valid_second_with_the_same_id() -> None:
    world = World()
    bad = command("Docs", {"id": "a"}, ref="bad")
    good = command("Docs", doc("a"), event_id=bad.event_id, ref="good")
    assert [r.ref for r in await world.persist(bad, good)] == ["bad"]
    assert [r["id"] for r in world.rows("Docs")] == ["a"]


async def test_two_events_with_the_identical_row_write_it_once_and_claim_both() -> None:
    world = World()
    first, second = command("Docs", doc("a")), command("Docs", doc("a"))
    assert await world.persist(first, second) == []
    assert len(world.rows("Docs")) == 1
    [audit] = world.audits()
    assert audit["source_event_ids"] == [str(first.event_id)]  # the row's one write
    assert {(CONSUMER, c.event_id) for c in (first, second)} <= world.store.state(TENANT).inbox


async def test_a_row_whose_key_exists_fails_the_batch_and_leaves_nothing_behind() -> None:
    world = World()
    await world.persist(command("Docs", doc("a")))
    before = world.store.state(TENANT)
    duplicate = command("Docs", doc("a", title="another title"))
    with pytest.raises(Exception, match="duplicate key"):
        await world.persist(command("Docs", doc("b")), duplicate)
    after = world.store.state(TENANT)
    assert after is before
    assert (CONSUMER, duplicate.event_id) not in after.inbox
    assert [r["id"] for r in world.rows("Docs")] == ["a"]


async def test_each_tenant_of_a_batch_writes_only_its_own_rows_and_events() -> None:
    world = World()
    mine, theirs = command("Docs", doc("a")), command("Docs", doc("z"), tenant=OTHER)
    assert await world.persist(mine, theirs) == []
    assert [r["id"] for r in world.rows("Docs")] == ["a"]
    assert [r["id"] for r in world.rows("Docs", OTHER)] == ["z"]
    assert [e.key for e in world.outbox(PERSISTED, OTHER)] == [str(OTHER).encode()]
    # An edge in the other tenant does not see this tenant's documents: it waits.
    assert await world.persist(command("Edges", edge("a", "z"), tenant=OTHER)) == []
    assert world.rows("Edges", OTHER) == []
    assert world.pending(OTHER)[0].missing == ("a",)


# ------------------------------------------------------------------------------- edges and G2


async def test_an_edge_whose_documents_exist_in_its_scope_is_written_and_audited_by_its_ends() -> (
    None
):
    world = World()
    await world.persist(command("Docs", doc("a")), command("Docs", doc("b")))
    assert await world.persist(command("Edges", edge("a", "b"))) == []
    assert world.rows("Edges") == [edge("a", "b")]
    assert world.audits()[-1]["row_ids"] == ["a-cite->b"]
    assert world.pending() == []


async def test_an_edge_in_the_same_batch_as_its_documents_is_written_with_them() -> None:
    world = World()
    batch = [command("Edges", edge("a", "b")), command("Docs", doc("a")), command("Docs", doc("b"))]
    assert await world.persist(*batch) == []
    assert world.rows("Edges") == [edge("a", "b")]
    assert world.pending() == []


async def test_an_edge_whose_document_is_missing_waits_and_is_not_refused() -> None:
    world = World()
    await world.persist(command("Docs", doc("a")))
    sent = command("Edges", edge("a", "b"))
    assert await world.persist(sent) == []
    assert world.rows("Edges") == []
    [waiting] = world.pending()
    assert (waiting.event_id, waiting.store, waiting.missing) == (sent.event_id, "Edges", ("b",))
    assert waiting.values == edge("a", "b")
    assert world.audits()[-1]["action"] == "store:Docs:persist"  # no audit for the parked edge


async def test_a_waiting_edge_is_written_when_its_last_document_arrives() -> None:
    world = World()
    sent = command("Edges", edge("a", "b"))
    await world.persist(sent)
    await world.persist(command("Docs", doc("a")))
    assert world.rows("Edges") == []
    assert world.pending()[0].missing == ("b",)
    await world.persist(command("Docs", doc("b")))
    assert world.rows("Edges") == [edge("a", "b")]
    assert world.pending() == []
    edges_audit = [a for a in world.audits() if a["store"] == "Edges"]
    assert edges_audit[0]["source_event_ids"] == [str(sent.event_id)]
    assert edges_audit[0]["principal"] == PRODUCER


async def test_a_waiting_edge_still_missing_a_document_waits_again_from_its_first_arrival() -> None:
    world = World()
    await world.persist(command("Edges", edge("a", "b")))
    [first] = world.pending()
    await world.persist(command("Docs", doc("a")))
    [again] = world.pending()
    assert again.pending_id != first.pending_id
    assert again.received_at == first.received_at
    assert again.missing == ("b",)


async def test_an_edge_to_a_document_of_another_scope_is_refused_with_its_identical_repeat() -> (
    None
):
    world = World()
    await world.persist(command("Docs", doc("a", "s1")), command("Docs", doc("b", "s2")))
    first = command("Edges", edge("a", "b", "s1"), ref="first")
    repeat = command("Edges", edge("a", "b", "s1"), ref="repeat")
    refused = reasons(await world.persist(first, repeat))
    assert "is outside the edge's scope: its space is s2, the edge's is s1" in refused["first"]
    assert refused["repeat"].startswith(refused["first"])
    assert f"the same row as event {first.event_id}" in refused["repeat"]
    assert world.rows("Edges") == []
    assert world.pending() == []


async def test_a_waiting_edge_whose_document_arrives_in_another_scope_is_dead_lettered() -> None:
    world = World()
    sent = command("Edges", edge("a", "b", "s1"))
    await world.persist(command("Docs", doc("a", "s1")), sent)
    assert await world.persist(command("Docs", doc("b", "s2"))) == []
    assert world.rows("Edges") == []
    assert world.pending() == []
    [dead] = world.dead.edges
    assert (dead.tenant, dead.edge.event_id) == (TENANT, sent.event_id)
    assert "outside the edge's scope" in dead.reason


@pytest.mark.parametrize("withdrawn", ["undeclared", "read-by-no-corpus"])
async def test_a_waiting_edge_whose_store_is_no_longer_a_relations_store_is_dead_lettered(
    withdrawn: str,
) -> None:
    world = World()
    await world.persist(command("Edges", edge("a", "b")))
    uses = {"Docs": StoreUse(MEMORY.documents, ((MEMORY, "documents"),))}
    if withdrawn == "read-by-no-corpus":
        uses["Edges"] = StoreUse(MEMORY.relations)
    world.directory.replace_stores(uses)
    assert await world.persist(command("Docs", doc("a"))) == []
    [dead] = world.dead.edges
    assert dead.reason == "store 'Edges' is no longer a relations store"
    assert world.pending() == []


async def test_a_waiting_edge_whose_values_no_longer_fit_its_store_is_dead_lettered() -> None:
    world = World()
    await world.persist(command("Edges", edge("a", "b")))
    changed = load_deployment(
        """
        axonstore Edges {
            backend: postgresql
            schema { from_id: Text not_null  to_id: Text not_null  etype: Text not_null
                     weight: Float not_null  space: Text not_null  why: Text not_null }
        }
        """,
        "changed.axon",
    ).store("Edges")
    assert changed is not None
    uses = {
        "Docs": StoreUse(MEMORY.documents, ((MEMORY, "documents"),)),
        "Edges": StoreUse(changed, ((MEMORY, "relations"),)),
    }
    world.directory.replace_stores(uses)
    await world.persist(command("Docs", doc("a")))
    [dead] = world.dead.edges
    assert "column 'why' is required" in dead.reason


async def test_the_sweep_dead_letters_only_edges_older_than_the_hold_in_every_tenant() -> None:
    world = World()
    await world.persist(
        command("Edges", edge("a", "b")), command("Edges", edge("x", "y"), tenant=OTHER)
    )
    assert await world.ingest.sweep_expired(timedelta(hours=1)) == 0
    assert len(world.pending()) == len(world.pending(OTHER)) == 1
    assert await world.ingest.sweep_expired(timedelta(0)) == 2
    assert world.pending() == world.pending(OTHER) == []
    assert sorted(d.tenant for d in world.dead.edges) == sorted([TENANT, OTHER])
    reason = next(d.reason for d in world.dead.edges if d.tenant == TENANT)
    assert reason == "edge waited 0 s for document(s) a, b, which never arrived (G2)"


async def test_the_edge_store_of_one_corpus_writes_only_with_that_corpus_documents() -> None:
    world = World(MEMORY, NOTEBOOK)
    await world.persist(command("Docs", doc("a")), command("Docs", doc("b")))
    assert await world.persist(command("NoteLinks", edge("a", "b"))) == []
    assert world.rows("NoteLinks") == []
    assert world.pending()[0].missing == ("a", "b")


def test_row_identity_tells_rows_apart_by_column_type_and_value() -> None:
    from mnemo_ingest.use_cases import _row_identity

    assert _row_identity({"id": "a", "v": 1}) == _row_identity({"id": "a", "v": 1})
    assert _row_identity({"id": "a", "v": 1}) != _row_identity({"id": "a", "v": True})
    assert _row_identity({"id": "a", "v": 1}) != _row_identity({"id": "a", "v": 1.0})
    assert _row_identity({"id": "a", "v": 1}) != _row_identity({"id": "a", "w": 1})
    # A JSON object or array value: canonical JSON, key order aside.
    assert _row_identity({"v": {"x": 1, "y": [2]}}) == _row_identity({"v": {"y": [2], "x": 1}})
    assert _row_identity({"v": {"x": 1}}) != _row_identity({"v": {"x": 2}})
