"""One contract for the declared corpora's port (`mnemo_navigator.corpus_forms.DeclaredCorpora`),
run over the Postgres adapter (as the navigator's role, under row-level security) and the
in-memory one the use-case tests use: documents by corpus version, ranked by a query, the memory overlay per tenant
and scope with its clamped relative steps, outcomes in sequence, nothing kept from a failed unit
of work."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

import asyncpg
import pytest
from mnemo_navigator.corpus_forms import DeclaredCorpora, PostgresDeclaredCorpora
from mnemo_navigator.fakes import InMemoryDeclaredCorpora
from mnemo_store.corpus_documents import CorpusDocument, WeightUpdate, store_corpus_documents

from tests.integration.navigator.conftest import NewTenant, navigator_dsn

DOCUMENTS = [CorpusDocument("b", "B", "two"), CorpusDocument("a", "A", "one", "cat", ("t",), "u:a")]


@dataclass
class Subject:
    port: DeclaredCorpora
    corpus: str
    tenants: tuple[uuid.UUID, uuid.UUID]


@pytest.fixture(params=["postgres", "memory"])
async def subject(
    request: pytest.FixtureRequest,
    app_dsn: str,
    owner_connection: asyncpg.Connection,
    new_tenant: NewTenant,
) -> AsyncIterator[Subject]:
    corpus = f"Contract_{uuid.uuid4().hex[:8]}"
    tenants = (await new_tenant(), await new_tenant())
    if request.param == "memory":
        port = InMemoryDeclaredCorpora()
        port.store(corpus, "old", [CorpusDocument("z", "Z", "gone")])
        port.store(corpus, "v1", DOCUMENTS)
        yield Subject(port, corpus, tenants)
        return
    await store_corpus_documents(owner_connection, corpus, "old", [CorpusDocument("z", "Z", "x")])
    await store_corpus_documents(owner_connection, corpus, "v1", DOCUMENTS)
    pool = await asyncpg.create_pool(navigator_dsn(app_dsn), min_size=1, max_size=4)
    try:
        yield Subject(PostgresDeclaredCorpora(pool), corpus, tenants)
    finally:
        await pool.close()
        await owner_connection.execute(
            "DELETE FROM mnemo.corpus_documents WHERE corpus_id = $1", corpus
        )
        for tenant in tenants:
            async with owner_connection.transaction():
                await owner_connection.execute(
                    "SELECT set_config('mnemo.tenant', $1, true)", str(tenant)
                )
                await owner_connection.execute(
                    "DELETE FROM mnemo.declared_edge_weights WHERE corpus_id = $1", corpus
                )


async def test_the_documents_of_the_version_asked_are_read_in_id_order(subject: Subject) -> None:
    documents = await subject.port.documents(subject.corpus, "v1")
    assert [d.doc_id for d in documents] == ["a", "b"]
    assert documents[0] == CorpusDocument("a", "A", "one", "cat", ("t",), "u:a")
    assert await subject.port.documents(subject.corpus, "old") == []


async def test_ranked_answers_the_matching_documents_of_the_version_or_none_without_any(
    subject: Subject,
) -> None:
    found = await subject.port.ranked(subject.corpus, "v1", "two", 5)
    assert found is not None
    [(document, similarity)] = found
    assert document == DOCUMENTS[0]
    assert 0 < similarity < 1
    assert await subject.port.ranked(subject.corpus, "v1", "nothing here", 5) == []
    assert await subject.port.ranked(subject.corpus, "v1", "", 5) == []
    assert await subject.port.ranked(subject.corpus, "old", "gone", 5) is None


async def test_each_reinforcement_is_one_clamped_step_from_the_declared_weight(
    subject: Subject,
) -> None:
    tenant, _ = subject.tenants
    steps = [0.3, 0.3, -2.0, 0.0005]
    for delta in steps:
        async with subject.port.tenant(tenant) as work:
            await work.reinforce(subject.corpus, "s", [WeightUpdate("a", "b", "cite", 0.6, delta)])
    async with subject.port.tenant(tenant) as work:
        overlay = await work.overlay(subject.corpus, "s")
    # 0.6 → 0.9 → 1.0 (capped) → 0.001 (floored) → 0.0015.
    assert overlay == pytest.approx({("a", "b", "cite"): 0.0015})


async def test_one_tenants_overlay_and_outcomes_are_invisible_to_another_and_to_other_scopes(
    subject: Subject,
) -> None:
    first, second = subject.tenants
    async with subject.port.tenant(first) as work:
        await work.reinforce(subject.corpus, "s", [WeightUpdate("a", "b", "cite", 0.5, 0.1)])
        await work.record_outcome(subject.corpus, "s", 1, "q", ["a", "b"], [], 0.5)
    async with subject.port.tenant(second) as work:
        assert await work.overlay(subject.corpus, "s") == {}
        assert await work.recent_outcomes(subject.corpus, "s", 10) == []
    async with subject.port.tenant(first) as work:
        assert await work.overlay(subject.corpus, "other") == {}
        assert [o.sequence for o in await work.recent_outcomes(subject.corpus, "s", 10)] == [1]


async def test_outcomes_come_back_oldest_first_within_the_horizon(subject: Subject) -> None:
    tenant, _ = subject.tenants
    async with subject.port.tenant(tenant) as work:
        for sequence in (1, 2, 3):
            await work.record_outcome(
                subject.corpus, "s", sequence, f"q{sequence}", ["a"], [], sequence / 10
            )
    async with subject.port.tenant(tenant) as work:
        recent = await work.recent_outcomes(subject.corpus, "s", 2)
    assert [(o.sequence, o.score) for o in recent] == [(2, 0.2), (3, 0.3)]


async def test_a_unit_of_work_that_fails_keeps_nothing(subject: Subject) -> None:
    tenant, _ = subject.tenants

    class BoomError(Exception):
        pass

    with pytest.raises(BoomError):
        async with subject.port.tenant(tenant) as work:
            await work.reinforce(subject.corpus, "s", [WeightUpdate("a", "b", "cite", 0.5, 0.1)])
            raise BoomError
    async with subject.port.tenant(tenant) as work:
        assert await work.overlay(subject.corpus, "s") == {}
