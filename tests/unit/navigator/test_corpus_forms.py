"""The corpus forms' use case (`mnemo_navigator.corpus_forms.FormsNavigator`) on the in-memory
adapters: which form answers what, the refusals and what they say, the per-tenant and per-client
memory of a declared graph, the audit event of every request, and the embeddings-free ranking."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pytest
from mnemo_auth import Principal
from mnemo_axon import AxonSource, MappingDocumentDirectory, check_sources, load_deployment
from mnemo_navigator.corpus_forms import (
    FormsNavigator,
    NoRelationsError,
    RankedText,
    UnknownCollectionError,
    client_scope,
    rank,
)
from mnemo_navigator.errors import CorpusNotServedError, InvalidRequestError, UnknownTenantError
from mnemo_navigator.fakes import InMemoryCatalogue, InMemoryDeclaredCorpora, InMemoryStore
from mnemo_navigator.use_cases import (
    EMPTY_QUERY,
    Caller,
    NavigateRequest,
    Navigator,
    Policy,
    RetrieveRequest,
)
from mnemo_store import StoreCorpus
from mnemo_store.corpus_documents import CorpusDocument
from mnemo_store.graph_cache import GraphCache

DECLARATIONS = """
document Refunds { title: "Refund policy" content: "Refunds are paid within 30 days." }
document Privacy { title: "Privacy policy" content: "Personal data is kept one year." }
corpus Policies { documents: [Refunds, Privacy] }
corpus Sessions {
    documents: [a, b, c]
    relations: [cite(b, a, 0.9) contradict(c, a, 0.7) elaborate(c, b, 0.5)]
    adaptive: true
}
"""
SESSIONS = [
    CorpusDocument("a", "cache warm", "The cache keeps warm graphs."),
    CorpusDocument("b", "warm refresh", "Warm graphs cite the cache."),
    CorpusDocument("c", "cold cache", "The cache is cold after a restart."),
]


@dataclass
class World:
    forms: FormsNavigator
    catalogue: InMemoryCatalogue
    declared: InMemoryDeclaredCorpora
    tenant: uuid.UUID

    def caller(
        self, tenant: uuid.UUID | None = None, client: Mapping[str, str] | None = None
    ) -> Caller:
        return Caller(
            Principal(
                tenant=tenant or self.tenant,
                subject="agent",
                scopes=frozenset({"read"}),
                client=dict(client or {}),
            )
        )

    def audited(self, tenant: uuid.UUID | None = None) -> list[dict[str, Any]]:
        return [
            event.payload["data"]["record"] for event in self.declared.outbox(tenant or self.tenant)
        ]

    async def navigate(self, query: str, **fields: Any) -> Any:
        caller = self.caller(fields.pop("tenant", None), fields.pop("client", None))
        return await self.forms.navigate(caller, "Sessions", NavigateRequest(query, **fields))


def make_world() -> World:
    directory = MappingDocumentDirectory(("a.md", "b.md", "c.md"))
    result = check_sources([AxonSource("forms.axon", DECLARATIONS)], directory)
    assert result.deployment is not None, result.diagnostics
    deployment = result.deployment
    catalogue = InMemoryCatalogue()
    for name in ("Policies", "Sessions"):
        catalogue.register(deployment, name)
    declared = InMemoryDeclaredCorpora()
    declared.store(
        "Policies",
        deployment.fingerprint("Policies"),
        [
            CorpusDocument(
                "Refunds", "Refund policy", "Refunds are paid within 30 days.", "", ("billing",)
            ),
            CorpusDocument("Privacy", "Privacy policy", "Personal data is kept one year."),
        ],
    )
    declared.store("Sessions", deployment.fingerprint("Sessions"), SESSIONS)
    navigator = Navigator(InMemoryStore(), catalogue, GraphCache(1 << 20), Policy())
    forms = FormsNavigator(navigator, catalogue, declared)
    return World(forms, catalogue, declared, catalogue.add_tenant())


async def test_an_inline_corpus_retrieves_its_stored_documents_with_tags_and_an_audit_row() -> None:
    world = make_world()
    result = await world.forms.retrieve(
        world.caller(), "Policies", RetrieveRequest("when are refunds paid", k=2)
    )
    assert [item.id for item in result.items] == ["Refunds"]
    assert result.tags == {"Refunds": ("billing",)}
    assert result.source_uris["Refunds"] == "mnemo://corpora/Policies/documents/Refunds"
    [record] = world.audited()
    assert record["action"] == "corpus:Policies:query"
    assert record["k_returned"] == 1
    assert record["top_similarity"] == pytest.approx(result.items[0].similarity)


async def test_navigating_an_inline_corpus_says_it_has_no_relations_and_audits_nothing() -> None:
    world = make_world()
    with pytest.raises(NoRelationsError, match="no relations"):
        await world.forms.navigate(world.caller(), "Policies", NavigateRequest("refunds"))
    assert world.audited() == []


async def test_the_gateway_refuses_another_collection_naming_both_and_accepts_its_own() -> None:
    world = make_world()
    goal = {"utterance": "personal data"}
    for collection in ("", "Policies"):
        result = await world.forms.search(world.caller(), "Policies", goal, collection=collection)
        assert result.items[0].id == "Privacy"
    with pytest.raises(UnknownCollectionError, match=r"'Policies'.*'other'"):
        await world.forms.search(world.caller(), "Policies", goal, collection="other")


@pytest.mark.parametrize(
    ("fields", "refusal"),
    [
        ({"where": "x == 1"}, "no columns to filter"),
        ({"params": {"x": 1}}, "no columns to filter"),
        ({"seed": None}, EMPTY_QUERY.split(";")[0]),
    ],
)
async def test_bad_requests_on_a_declared_graph_are_refused_before_anything_is_written(
    fields: dict[str, Any], refusal: str
) -> None:
    world = make_world()
    with pytest.raises(InvalidRequestError, match=refusal):
        await world.navigate("" if "seed" in fields else "cache", **fields)
    assert world.audited() == []
    assert world.declared.weights(world.tenant) == {}


async def test_a_declared_graph_that_is_not_published_or_a_missing_tenant_is_refused() -> None:
    world = make_world()
    with pytest.raises(UnknownTenantError):
        await world.navigate("cache", tenant=uuid.uuid4())
    world.catalogue.set_status("Sessions", "draft")
    with pytest.raises(CorpusNotServedError, match="is draft"):
        await world.navigate("cache")


async def _learn(world: World, **who: Any) -> None:
    for query in ("cache", "warm graphs cite the cache", "zzz", "cache warm"):
        await world.navigate(query, seed="b", budget=2, direction="both", **who)


async def test_a_declared_graphs_memory_is_kept_per_tenant_and_per_end_client() -> None:
    world = make_world()
    other = world.catalogue.add_tenant()
    await _learn(world)
    await _learn(world, client={"tenant_id": "c1"})
    learned = world.declared.weights(world.tenant)
    scopes = {key[1] for key in learned}
    assert scopes == {"tenant", client_scope(world.caller(client={"tenant_id": "c1"}))}
    assert world.declared.weights(other) == {}
    answer = await world.navigate("cache warm", seed="b", budget=2, direction="both", tenant=other)
    declared = {0.9, 0.7, 0.5}
    assert all(hit.via.weight in declared for hit in answer.navigation.hits if hit.via)
    assert len(world.audited()) == 8


def test_ranking_is_by_the_querys_tokens_best_first_then_id_and_leaves_out_non_matches() -> None:
    documents = [
        RankedText("b", "refunds", "refunds refunds", 0.0, "u:b"),
        RankedText("a", "refunds", "refunds refunds", 0.0, "u:a"),
        RankedText("c", "privacy", "data", 0.0, "u:c"),
    ]
    ranked = rank("refunds policy", documents, k=5)
    assert [r.id for r in ranked] == ["a", "b"]
    assert all(0 < r.similarity < 1 for r in ranked)
    assert rank("", documents, k=5) == []
    assert rank("refunds", documents, k=1)[0].id == "a"


async def test_a_declared_corpus_is_paged_in_id_order_and_each_page_is_audited() -> None:
    world = make_world()
    first = await world.forms.documents(world.caller(), "Sessions", None, 2)
    assert [d.id for d in first.documents] == ["a", "b"]
    assert first.next_after == "b"
    assert first.documents[0].body == "The cache keeps warm graphs."
    assert first.source_uris["a"] == "mnemo://corpora/Sessions/documents/a"
    rest = await world.forms.documents(world.caller(), "Sessions", first.next_after, 2)
    assert [d.id for d in rest.documents] == ["c"]
    assert rest.next_after is None
    assert [(r["operation"], r["query"], r["returned_ids"]) for r in world.audited()] == [
        ("documents", "documents limit=2", ["a", "b"]),
        ("documents", "documents limit=2 after=b", ["c"]),
    ]
    assert world.audited(world.catalogue.add_tenant()) == []


STORE_DECLARATIONS = """
axonstore Docs {{ schema {{ id: Text primary_key  title: Text not_null  {extra} }} }}
axonstore Edges {{ schema {{ from_id: Text  to_id: Text  etype: Text  weight: Float }} }}
corpus Memory from axonstore {{
    documents: Docs(id, title)
    relations: Edges(from_id, to_id, etype, weight)
}}
"""


@pytest.mark.parametrize(("extra", "tagged"), [("category: Text", True), ("label: Text", False)])
async def test_a_store_corpus_search_carries_tags_only_when_its_store_declares_a_tag_column(
    extra: str, tagged: bool
) -> None:
    deployment = load_deployment(STORE_DECLARATIONS.format(extra=extra), "store.axon")
    corpus = StoreCorpus.from_deployment(deployment, "Memory")
    catalogue, store, declared = InMemoryCatalogue(), InMemoryStore(), InMemoryDeclaredCorpora()
    catalogue.register(deployment, "Memory")
    store.register(corpus)
    tenant, other = catalogue.add_tenant(), catalogue.add_tenant()
    store.write(tenant, corpus.documents, [{"id": "d1", "title": "overdraft fees"}])
    declared.tag(tenant, "Memory", "d1", ["billing"])
    declared.tag(other, "Memory", "d1", ["not-mine"])
    navigator = Navigator(store, catalogue, GraphCache(1 << 20), Policy())
    forms = FormsNavigator(navigator, catalogue, declared)
    caller = Caller(Principal(tenant=tenant, subject="agent", scopes=frozenset({"read"})))
    result = await forms.search(caller, "Memory", {"utterance": "overdraft"})
    assert [item.id for item in result.items] == ["d1"]
    assert result.tags == ({"d1": ("billing",)} if tagged else {})
