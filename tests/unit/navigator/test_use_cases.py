"""The navigator's use cases on the in-memory adapters (`mnemo_navigator.fakes`): every decision
they take, with no Postgres: refusals, pinned scopes, cache phases, budgets, memory, audit."""

from __future__ import annotations

import asyncio
import hashlib
import random
import uuid
from collections.abc import AsyncIterator, Hashable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from mnemo_auth import InsufficientScopeError, Principal
from mnemo_axon.compiler import load_deployment
from mnemo_mdn import DEFAULT_PARAMS
from mnemo_navigator.errors import (
    CorpusNotServedError,
    InvalidRequestError,
    NavigatorBusyError,
    ScopeForbiddenError,
    UnknownCorpusError,
    UnknownTenantError,
)
from mnemo_navigator.fakes import (
    InMemoryCatalogue,
    InMemoryGraphReads,
    InMemoryMemory,
    InMemoryStore,
)
from mnemo_navigator.ports import CorpusEntry
from mnemo_navigator.turns import KeyedTurns
from mnemo_navigator.use_cases import (
    MAX_QUERY_CHARS,
    Caller,
    Claim,
    NavigateRequest,
    Navigator,
    Policy,
    RetrieveRequest,
)
from mnemo_store import StoreCorpus
from mnemo_store.graph_cache import GraphCache

DECLARATIONS = """
axonstore Docs {{
    schema {{ id: Text primary_key  tenant_id: Text not_null  title: Text not_null  body: Text }}
}}
axonstore Edges {{
    schema {{ from_id: Text not_null  to_id: Text not_null  etype: Text not_null
             weight: Float not_null  tenant_id: Text not_null }}
}}
corpus Notes from axonstore {{
    documents: Docs(id, title, body)
    relations: Edges(from_id, to_id, etype, weight)
    adaptive: {adaptive}
}}
"""
PINNED = "tenant_id == '${client.tenant_id}'"
DOCS: list[Mapping[str, object]] = [
    {"id": "a", "tenant_id": "c1", "title": "alpha liability", "body": None},
    {"id": "b", "tenant_id": "c1", "title": "beta cap", "body": None},
    {"id": "c", "tenant_id": "c1", "title": "gamma notice", "body": None},
    {"id": "d", "tenant_id": "c2", "title": "alpha other", "body": None},
]
EDGES: list[Mapping[str, object]] = [
    {"from_id": "a", "to_id": "b", "etype": "cite", "weight": 0.5, "tenant_id": "c1"},
    {"from_id": "a", "to_id": "c", "etype": "cite", "weight": 0.5, "tenant_id": "c1"},
]


@dataclass
class World:
    store: InMemoryStore
    catalogue: InMemoryCatalogue
    corpus: StoreCorpus
    navigator: Navigator
    tenant: uuid.UUID

    @property
    def name(self) -> str:
        return self.corpus.name

    def caller(
        self, *, client: Mapping[str, str] | None = None, scopes: Sequence[str] = ("read",)
    ) -> Caller:
        principal = Principal(
            tenant=self.tenant, subject="agent", scopes=frozenset(scopes), client=client or {}
        )
        return Caller(principal)

    def audits(self) -> list[dict[str, Any]]:
        return [event.payload["data"]["record"] for event in self.store.outbox(self.tenant)]

    def write(self, documents: Sequence[Mapping[str, object]]) -> None:
        self.store.write(self.tenant, self.corpus.documents, documents)

    async def navigate(self, query: str = "alpha beta", **request: Any) -> Any:
        request.setdefault("seed", "a")
        request.setdefault("budget", 2)
        client = request.pop("client", None)
        return await self.navigator.navigate(
            self.caller(client=client), self.name, NavigateRequest(query, **request)
        )


def make_world(
    *,
    adaptive: bool = True,
    pinned: bool = True,
    cache_bytes: int = 64 << 20,
    **policy: Any,
) -> World:
    deployment = load_deployment(
        DECLARATIONS.format(adaptive="true" if adaptive else "false"), "notes.axon"
    )
    corpus = StoreCorpus.from_deployment(deployment, "Notes")
    store, catalogue = InMemoryStore(), InMemoryCatalogue()
    store.register(corpus)
    catalogue.register(deployment, corpus.name)
    tenant = catalogue.add_tenant()
    store.write(tenant, corpus.documents, DOCS)
    store.write(tenant, corpus.relations, EDGES)
    navigator = Navigator(
        store,
        catalogue,
        GraphCache(cache_bytes),
        Policy(pinned_scopes={corpus.name: PINNED} if pinned else {}, **policy),
    )
    return World(store, catalogue, corpus, navigator, tenant)


# ----------------------------------------------------------------------------------- admission


async def test_a_token_without_the_read_scope_is_refused_before_anything_is_read() -> None:
    world = make_world()
    with pytest.raises(InsufficientScopeError):
        await world.navigator.navigate(
            world.caller(scopes=("write",)), world.name, NavigateRequest("alpha")
        )
    assert world.catalogue.tenant_lookups == 0
    assert world.audits() == []


async def test_a_token_of_a_tenant_that_does_not_exist_is_refused_and_leaves_nothing() -> None:
    world = make_world()
    world.catalogue.remove_tenant(world.tenant)
    with pytest.raises(UnknownTenantError, match="mnemo tenant list"):
        await world.navigate()
    with pytest.raises(UnknownTenantError):
        await world.navigator.retrieve(world.caller(), world.name, RetrieveRequest("alpha"))
    assert world.audits() == []
    assert world.store.outcomes(world.tenant, world.name) == []


async def test_an_existing_tenant_is_believed_for_a_while_and_a_missing_one_asked_every_time() -> (
    None
):
    world = make_world()
    for _ in range(3):
        await world.navigator.admit(world.caller().principal)
    assert world.catalogue.tenant_lookups == 1
    stranger = Principal(tenant=uuid.uuid4(), subject="agent", scopes=frozenset({"read"}))
    for _ in range(2):
        with pytest.raises(UnknownTenantError):
            await world.navigator.admit(stranger)
    assert world.catalogue.tenant_lookups == 3
    forgetful = make_world(tenant_cache_seconds=0.0)
    for _ in range(2):
        await forgetful.navigator.admit(forgetful.caller().principal)
    assert forgetful.catalogue.tenant_lookups == 2


# -------------------------------------------------------------------------------------- corpus


async def test_a_corpus_nobody_registered_is_unknown() -> None:
    world = make_world()
    with pytest.raises(UnknownCorpusError, match="'Elsewhere'"):
        await world.navigator.navigate(world.caller(), "Elsewhere", NavigateRequest("alpha"))


async def test_a_corpus_that_is_not_published_is_not_served_and_the_error_says_how_to_publish() -> (
    None
):
    world = make_world()
    world.catalogue.set_status(world.name, "draft")
    with pytest.raises(CorpusNotServedError, match=r"is draft.*mnemo corpus publish Notes"):
        await world.navigate()


async def test_a_corpus_that_is_not_a_store_corpus_is_not_served() -> None:
    world = make_world()
    world.catalogue.add(CorpusEntry("Files", "published", "documents", {"documents": []}))
    with pytest.raises(CorpusNotServedError, match="navigator serves store corpora"):
        await world.navigator.navigate(world.caller(), "Files", NavigateRequest("alpha"))


async def test_a_new_definition_of_a_corpus_replaces_the_one_parsed_before() -> None:
    world = make_world(adaptive=True)
    assert (await world.navigator.served_corpus(world.name)).adaptive
    assert await world.navigator.served_corpus(world.name) is await world.navigator.served_corpus(
        world.name
    )
    redeclared = load_deployment(DECLARATIONS.format(adaptive="false"), "notes.axon")
    world.catalogue.register(redeclared, world.name)
    assert not (await world.navigator.served_corpus(world.name)).adaptive


# --------------------------------------------------------------------------------------- scope


async def test_a_client_token_on_a_corpus_without_a_pinned_scope_is_forbidden() -> None:
    world = make_world(pinned=False)
    with pytest.raises(ScopeForbiddenError, match="has no pinned scope"):
        await world.navigate(client={"tenant_id": "c1"})
    assert world.audits() == []


async def test_a_client_claim_that_cannot_bind_the_pinned_scope_is_forbidden() -> None:
    world = make_world()
    with pytest.raises(ScopeForbiddenError, match="cannot be bound from this token"):
        await world.navigate(client={"region": "eu"})


async def test_a_filter_on_an_unknown_column_is_an_invalid_request_naming_the_filter() -> None:
    world = make_world()
    with pytest.raises(InvalidRequestError, match=r"where: .*colour"):
        await world.navigate(where="colour == 'red'")
    with pytest.raises(InvalidRequestError, match="where: "):
        await world.navigate(where="colour == 'red'", client={"tenant_id": "c1"})


@pytest.mark.parametrize(
    ("where", "params"),
    [
        (None, {}),
        ("tenant_id == 'c2'", {}),
        ("tenant_id == 'c2' OR tenant_id == 'c1'", {}),
        ("tenant_id == '${client.tenant_id}'", {"client": {"tenant_id": "c2"}}),
        ("id == 'd' OR title LIKE '%'", {}),
    ],
)
async def test_a_pinned_scope_cannot_be_widened_by_where_or_by_request_parameters(
    where: str | None, params: Mapping[str, object]
) -> None:
    world = make_world()
    caller = world.caller(client={"tenant_id": "c1"})
    found = await world.navigator.retrieve(
        caller, world.name, RetrieveRequest("alpha other", k=10, where=where, params=params)
    )
    assert {item.id for item in found.items} <= {"a"}  # never d, the other client's
    assert world.audits()[-1]["client"] == {"tenant_id": "c1"}


async def test_a_pinned_scope_is_one_scope_with_the_same_filter_sent_as_where_and_narrows_apart() -> (
    None
):
    world = make_world()
    confined = world.caller(client={"tenant_id": "c1"}).principal
    pinned_scope, pinned_digest = world.navigator.scope_for(confined, world.corpus, None, {})
    _, as_where = world.navigator.scope_for(
        world.caller().principal, world.corpus, "tenant_id == 'c1'", {}
    )
    _, narrowed = world.navigator.scope_for(confined, world.corpus, "id == 'a'", {})
    _, unpinned_narrowed = world.navigator.scope_for(
        world.caller().principal, world.corpus, "id == 'a'", {}
    )
    assert pinned_scope.pinned == PINNED
    assert pinned_scope.pinned_params == {"client": {"tenant_id": "c1"}}
    assert pinned_digest == as_where  # the same rows: one cached graph, one memory
    assert len({pinned_digest, narrowed, unpinned_narrowed}) == 3


# ------------------------------------------------------------------------------------- queries


async def test_a_query_longer_than_the_limit_is_refused_before_anything_is_read() -> None:
    world = make_world()
    with pytest.raises(InvalidRequestError, match=f"query: {MAX_QUERY_CHARS + 1} characters"):
        await world.navigate("x" * (MAX_QUERY_CHARS + 1))
    with pytest.raises(InvalidRequestError, match="goal: "):
        await world.navigator.search(
            world.caller(), world.name, {"utterance": "x" * (MAX_QUERY_CHARS + 1)}
        )
    assert world.audits() == []


async def test_a_query_holding_a_lone_surrogate_is_refused_naming_where_it_is() -> None:
    world = make_world()
    with pytest.raises(InvalidRequestError, match="at character 6"):
        await world.navigate("alpha \ud800")


async def test_an_empty_query_explores_from_the_seed_document() -> None:
    world = make_world(adaptive=False)
    answer = await world.navigate("", seed="a", budget=3, client={"tenant_id": "c1"})
    assert answer.navigation.path[0] == "a"
    assert set(answer.navigation.path) <= {"a", "b", "c"}


@pytest.mark.parametrize("query", ["", "   "])
async def test_an_empty_query_without_a_seed_is_refused_saying_what_to_give(query: str) -> None:
    world = make_world()
    with pytest.raises(InvalidRequestError, match="query: empty; give the text to look for"):
        await world.navigate(query, seed=None)
    assert world.audits() == []


# ---------------------------------------------------------------------------------- the cache


async def test_the_first_navigation_misses_the_cache_and_the_next_one_hits_it() -> None:
    world = make_world(adaptive=False)
    first = await world.navigate()
    second = await world.navigate()
    assert (first.cache, second.cache) == ("miss", "hit")
    assert second.revision == first.revision
    assert second.navigation.path == first.navigation.path


async def test_a_write_since_the_cached_graph_is_refreshed_into_it() -> None:
    world = make_world(adaptive=False)
    first = await world.navigate()
    world.write([{"id": "e", "tenant_id": "c1", "title": "epsilon alpha", "body": None}])
    second = await world.navigate("epsilon", seed=None)
    assert second.cache == "refresh"
    assert second.revision == first.revision + 1
    assert second.navigation.path[0] == "e"
    assert (await world.navigate()).cache == "hit"


async def test_a_deletion_since_the_cached_graph_reloads_it_in_full() -> None:
    world = make_world(adaptive=False)
    await world.navigate()
    world.store.delete(world.tenant, world.corpus.relations, lambda row: row["to_id"] == "c")
    again = await world.navigate()
    assert again.cache == "miss"


class HeldReads:
    """The in-memory graph reads, counted, with the first load held after its rows are read (its
    snapshot) until the `arrivals`-th revision read (`marks`) (then the requests that began meanwhile have
    all missed the cache and wait for that build), or for good when not `release`."""

    def __init__(
        self, monkeypatch: pytest.MonkeyPatch, arrivals: int, *, release: bool = True
    ) -> None:
        self.loads = self.refreshes = self.revisions = 0
        self.held, self.arrived = asyncio.Event(), asyncio.Event()
        self._counted = asyncio.Condition()
        gate = asyncio.Event()
        load, refresh, marks = (
            InMemoryGraphReads.load,
            InMemoryGraphReads.refresh,
            InMemoryGraphReads.marks,
        )

        async def counted_marks(reads: InMemoryGraphReads, corpus_id: str) -> tuple[int, int]:
            self.revisions += 1
            async with self._counted:
                self._counted.notify_all()
            if self.revisions == arrivals:
                self.arrived.set()
                if release:
                    gate.set()
            return await marks(reads, corpus_id)

        async def held_load(reads: InMemoryGraphReads, *args: Any) -> Any:
            self.loads += 1
            rows = await load(reads, *args)
            if self.loads == 1:
                self.held.set()
                await gate.wait()
            return rows

        async def counted_refresh(reads: InMemoryGraphReads, *args: Any) -> Any:
            self.refreshes += 1
            return await refresh(reads, *args)

        monkeypatch.setattr(InMemoryGraphReads, "marks", counted_marks)
        monkeypatch.setattr(InMemoryGraphReads, "load", held_load)
        monkeypatch.setattr(InMemoryGraphReads, "refresh", counted_refresh)

    async def until_revisions(self, count: int) -> None:
        """Until `count` revision reads have begun."""
        async with self._counted:
            await self._counted.wait_for(lambda: self.revisions >= count)


async def test_navigations_missing_the_cache_together_wait_for_one_build(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = make_world(adaptive=False)
    reads = HeldReads(monkeypatch, arrivals=4)
    answers = await asyncio.gather(*(world.navigate() for _ in range(4)))
    assert reads.loads == 1
    assert [a.cache for a in answers] == ["miss", "hit", "hit", "hit"]
    assert {a.navigation.path for a in answers} == {answers[0].navigation.path}
    assert all("wait" in a.timings for a in answers[1:])


@pytest.mark.parametrize("later_count", [1, 2])
async def test_navigations_begun_after_a_builds_snapshot_share_the_next_build_instead(
    monkeypatch: pytest.MonkeyPatch, later_count: int
) -> None:
    world = make_world(adaptive=False)
    reads = HeldReads(monkeypatch, arrivals=1 + later_count)
    first = asyncio.create_task(world.navigate())
    await reads.held.wait()  # its rows are read: the write below is not among them
    world.write([{"id": "e", "tenant_id": "c1", "title": "epsilon alpha", "body": None}])
    later = await asyncio.gather(
        *(world.navigate("epsilon", seed=None) for _ in range(later_count))
    )
    assert (await first).cache == "miss"
    assert (reads.loads, reads.refreshes) == (1, 1)
    assert [a.cache for a in later] == ["refresh"] + ["hit"] * (later_count - 1)
    assert {a.revision for a in later} == {(await first).revision + 1}
    assert all(a.navigation.path[0] == "e" for a in later)


async def test_when_the_build_they_wait_for_fails_the_waiters_build_once_themselves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = make_world(adaptive=False)
    reads = HeldReads(monkeypatch, arrivals=3, release=False)
    first = asyncio.create_task(world.navigate())
    waiting = [asyncio.create_task(world.navigate()) for _ in range(2)]
    await reads.arrived.wait()
    first.cancel()
    answers = await asyncio.gather(*waiting)
    assert first.cancelled()
    assert reads.loads == 2
    assert [a.cache for a in answers] == ["miss", "hit"]


async def test_past_the_navigations_it_takes_the_navigator_answers_busy_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = make_world(adaptive=False, max_navigations=2)
    reads = HeldReads(monkeypatch, arrivals=2, release=False)
    held = [asyncio.create_task(world.navigate()) for _ in range(2)]
    await reads.arrived.wait()  # both in flight: one builds, the other waits for it
    with pytest.raises(NavigatorBusyError, match="2 navigations in flight") as refused:
        await world.navigate()
    assert "MNEMO_NAVIGATOR_MAX_NAVIGATIONS" in str(refused.value)
    assert (reads.revisions, world.audits()) == (2, [])  # refused before anything was read
    consumer = asyncio.create_task(  # the Kafka consumer's requests are never refused
        world.navigator.navigate(
            world.caller(), world.name, NavigateRequest("alpha", seed="a"), bounded=False
        )
    )
    # It went in: its revision read began, and it waits for the held build like the others.
    await asyncio.wait_for(reads.until_revisions(3), 5)
    assert not consumer.done()
    held.append(consumer)
    for task in held:
        task.cancel()
    await asyncio.gather(*held, return_exceptions=True)
    answers = await asyncio.gather(world.navigate(), world.navigate())  # their places are free
    assert [a.cache for a in answers] == ["miss", "hit"]


async def test_without_a_cache_every_navigation_loads_the_graph() -> None:
    world = make_world(adaptive=False, cache_bytes=0)
    assert [(await world.navigate()).cache for _ in range(2)] == ["off", "off"]


async def test_the_navigators_own_reinforcement_keeps_the_cached_graph_current() -> None:
    world = make_world(adaptive=True)
    first = await world.navigate("alpha beta")  # full coverage: the scope's baseline
    weaker = await world.navigate("alpha beta gamma")  # below the baseline: a->b weakens
    assert weaker.cache == "hit"
    weights = {
        (r["from_id"], r["to_id"]): r["weight"]
        for r in world.store.rows(world.tenant, world.corpus.relations)
    }
    assert weights[("a", "b")] < 0.5  # type: ignore[operator]  # a Float column holds floats
    third = await world.navigate("alpha beta")
    assert third.revision == first.revision + 1
    assert third.cache == "hit"  # moved forward by the same update, not reloaded


async def test_each_client_scope_has_its_own_cached_graph() -> None:
    world = make_world(adaptive=False)
    c1 = await world.navigate(client={"tenant_id": "c1"})
    c2 = await world.navigate("alpha other", seed="d", client={"tenant_id": "c2"})
    assert (c1.cache, c2.cache) == ("miss", "miss")
    assert c1.scope_digest != c2.scope_digest
    assert "d" not in c1.navigation.path
    assert set(c2.navigation.path) == {"d"}
    assert (await world.navigate(client={"tenant_id": "c1"})).cache == "hit"


# -------------------------------------------------------------------------------------- budget


async def test_a_navigation_without_a_budget_selects_the_policys_default_number() -> None:
    world = make_world(adaptive=False, default_budget=3)
    assert len((await world.navigate("alpha beta gamma", budget=None)).navigation.path) == 3
    assert len((await world.navigate("alpha beta gamma", budget=2)).navigation.path) == 2


@pytest.mark.parametrize("request_fields", [{"budget": -1}, {"seed": "nowhere"}])
async def test_a_budget_below_one_or_an_unknown_seed_is_an_invalid_request_and_not_audited(
    request_fields: dict[str, Any],
) -> None:
    world = make_world()
    with pytest.raises(InvalidRequestError):
        await world.navigate(**request_fields)
    assert world.audits() == []
    assert world.store.outcomes(world.tenant, world.name) == []


# -------------------------------------------------------------------------------------- memory


async def test_an_adaptive_corpus_remembers_each_navigation_in_sequence_per_scope() -> None:
    world = make_world(adaptive=True)
    await world.navigate()
    await world.navigate()
    await world.navigate(client={"tenant_id": "c1"})
    outcomes = world.store.outcomes(world.tenant, world.name)
    assert [o.sequence for o in outcomes] == [1, 2, 1]
    assert outcomes[0].path == ("a", "b")


async def test_a_corpus_that_is_not_adaptive_remembers_nothing_and_moves_no_weight() -> None:
    world = make_world(adaptive=False)
    await world.navigate("alpha beta")
    await world.navigate("alpha beta gamma")
    assert world.store.outcomes(world.tenant, world.name) == []
    assert {r["weight"] for r in world.store.rows(world.tenant, world.corpus.relations)} == {0.5}
    assert len(world.audits()) == 2


async def test_a_redelivered_request_is_answered_again_but_remembered_and_audited_once() -> None:
    world = make_world(adaptive=True)
    claim = Claim("navigator", uuid.uuid4())
    request = NavigateRequest("alpha beta gamma", seed="a", budget=2)
    first = await world.navigator.navigate(world.caller(), world.name, request, claim=claim)
    again = await world.navigator.navigate(world.caller(), world.name, request, claim=claim)
    assert (first.remembered, again.remembered) == (True, False)
    assert again.navigation.path == first.navigation.path
    assert len(world.store.outcomes(world.tenant, world.name)) == 1
    assert len(world.audits()) == 1


class CountedOutcomeReads:
    """The in-memory outcome reads: per read, the sequence it read from and the rows it found."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.reads: list[tuple[int, int]] = []
        read = InMemoryMemory.recent_outcomes

        async def counted(
            memory: InMemoryMemory, corpus_id: str, digest: str, horizon: int, *, since: int = 0
        ) -> Any:
            found = await read(memory, corpus_id, digest, horizon, since=since)
            self.reads.append((since, len(found)))
            return found

        monkeypatch.setattr(InMemoryMemory, "recent_outcomes", counted)


async def test_a_navigation_reads_only_the_outcomes_remembered_since_its_scopes_last(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = make_world(adaptive=True)
    reads = CountedOutcomeReads(monkeypatch)
    for _ in range(6):
        await world.navigate()
    # Whole while nothing is kept; then from the last outcome kept on: it and the one since.
    assert reads.reads == [(0, 0), (0, 1), (1, 2), (2, 2), (3, 2), (4, 2)]
    await world.navigate(client={"tenant_id": "c1"})  # another scope: its own, read whole
    assert reads.reads[-1] == (0, 0)


async def test_after_a_forget_the_next_navigation_reads_its_scope_whole_without_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = make_world(adaptive=True)
    reads = CountedOutcomeReads(monkeypatch)
    paths = [(await world.navigate(query, seed=None)).navigation.path for query in QUERIES]
    assert any("c" in path for path in paths)
    assert not all("c" in path for path in paths)
    world.store.forget(world.tenant, world.corpus, "c")
    await world.navigate("alpha beta", seed=None)
    kept = [p for p in paths if "c" not in p]
    assert reads.reads[-1] == (0, len(kept))  # the reset mark moved: read whole
    outcomes = world.store.outcomes(world.tenant, world.name)
    assert [o.path for o in outcomes[: len(kept)]] == kept


QUERIES = ["alpha beta", "gamma notice", "beta cap", "alpha liability gamma"]


@pytest.mark.parametrize("seed", range(6))
async def test_navigations_answer_as_if_each_read_its_scopes_outcomes_whole(seed: int) -> None:
    """The same writes, forgets and navigations (two scopes) on a navigator keeping its scopes'
    outcomes and on one reading them whole every time: every answer is the same."""
    kept, whole = make_world(adaptive=True), make_world(adaptive=True, history_max_outcomes=0)
    rng = random.Random(seed)
    present = {"a", "b", "c"}
    for step in range(40):
        roll = rng.random()
        if roll < 0.08 and present:
            forgotten = rng.choice(sorted(present))
            present.discard(forgotten)
            for world in (kept, whole):
                world.store.forget(world.tenant, world.corpus, forgotten)
        elif roll < 0.16:
            added = {
                "id": f"n{step}",
                "tenant_id": "c1",
                "title": rng.choice(QUERIES),
                "body": None,
            }
            present.add(str(added["id"]))
            for world in (kept, whole):
                world.write([added])
        else:
            query, client = rng.choice(QUERIES), rng.choice([None, {"tenant_id": "c1"}])
            answers = [
                await world.navigate(query, seed=None, client=client) for world in (kept, whole)
            ]
            assert answers[0].navigation == answers[1].navigation, step
    assert kept.store.outcomes(kept.tenant, kept.name) == whole.store.outcomes(
        whole.tenant, whole.name
    )


# --------------------------------------------------------------------------------------- audit


async def test_every_operation_queues_exactly_one_audit_event_describing_it() -> None:
    world = make_world()
    caller = world.caller()
    await world.navigate()
    await world.navigator.retrieve(caller, world.name, RetrieveRequest("gamma", k=3))
    await world.navigator.search(caller, world.name, {"topic": "beta"})
    await world.navigator.documents(caller, world.name, "a", 2)
    records = world.audits()
    assert [r["operation"] for r in records] == ["navigate", "retrieve", "search", "documents"]
    assert [r["returned_ids"] for r in records] == [["a", "b"], ["c"], ["b"], ["b", "c"]]
    assert records[3]["query"] == "documents limit=2 after=a"
    assert {r["action"] for r in records} == {"corpus:Notes:query"}
    assert all(r["principal"] == "agent" for r in records)


async def test_the_query_text_is_left_out_of_the_audit_when_asked_but_its_digest_is_kept() -> None:
    world = make_world(audit_query_text=False)
    await world.navigate("alpha beta")
    [record] = world.audits()
    assert record["query"] is None
    assert record["query_digest"] == hashlib.sha256(b"alpha beta").hexdigest()


async def test_a_nul_in_the_query_is_audited_as_a_replacement_character_digested_as_sent() -> None:
    world = make_world()
    await world.navigator.retrieve(world.caller(), world.name, RetrieveRequest("alpha\x00"))
    [record] = world.audits()
    assert record["query"] == "alpha\ufffd"
    assert record["query_digest"] == hashlib.sha256(b"alpha\x00").hexdigest()


# --------------------------------------------------------------------------------------- pages


async def test_documents_are_paged_in_id_order_in_scope_with_a_cursor_to_the_next_page() -> None:
    world = make_world()
    caller = world.caller(client={"tenant_id": "c1"})
    first = await world.navigator.documents(caller, world.name, None, 2)
    last = await world.navigator.documents(caller, world.name, first.next_after, 2)
    assert [d.id for d in first.documents] == ["a", "b"]
    assert first.next_after == "b"
    assert [d.id for d in last.documents] == ["c"]
    assert last.next_after is None


async def test_a_search_ranks_by_the_goals_text_field_or_else_the_whole_goal() -> None:
    world = make_world()
    caller = world.caller()
    by_message = await world.navigator.search(caller, world.name, {"message": "gamma", "x": 1})
    by_goal = await world.navigator.search(caller, world.name, {"notice": True})
    assert [d.id for d in by_message.items] == ["c"]
    assert [d.id for d in by_goal.items] == ["c"]  # "notice" is in the serialised goal


async def test_navigations_of_one_scope_take_turns_before_they_open_a_memory_write(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Five navigations of one scope remember one at a time, and the four waiting do it before
    they open a unit of work: in Postgres each would otherwise hold a pooled connection while it
    waits on the scope's lock. The first one's memory write is held until either all five have
    asked for their turn (right) or a second unit of work is opened (wrong)."""
    world = make_world(adaptive=True)
    await world.navigate()  # the graph cached: the five differ only in their memory writes
    changed = asyncio.Condition()
    opened = peak = asked = 0
    tenant, serialise, turn = InMemoryStore.tenant, InMemoryMemory.serialise, KeyedTurns.turn

    async def notify() -> None:
        async with changed:
            changed.notify_all()

    @asynccontextmanager
    async def counted_tenant(
        store: InMemoryStore, tenant_id: uuid.UUID, *, read_only: bool = False
    ) -> AsyncIterator[Any]:
        nonlocal opened, peak
        writing = not read_only
        opened += writing
        peak = max(peak, opened)
        await notify()
        try:
            async with tenant(store, tenant_id, read_only=read_only) as work:
                yield work
        finally:
            opened -= writing

    @asynccontextmanager
    async def counted_turn(turns: KeyedTurns, key: Hashable) -> AsyncIterator[None]:
        nonlocal asked
        asked += 1
        await notify()
        async with turn(turns, key):
            yield

    first = [True]

    async def held_serialise(memory: InMemoryMemory, corpus_id: str, scope: str) -> None:
        if first:  # the first memory write only
            first.clear()
            async with changed:
                await changed.wait_for(lambda: asked == 5 or opened >= 2)
        await serialise(memory, corpus_id, scope)

    monkeypatch.setattr(InMemoryStore, "tenant", counted_tenant)
    monkeypatch.setattr(InMemoryMemory, "serialise", held_serialise)
    monkeypatch.setattr(KeyedTurns, "turn", counted_turn)
    answers = await asyncio.wait_for(asyncio.gather(*(world.navigate() for _ in range(5))), 10)
    assert peak == 1
    assert [a.remembered for a in answers] == [True] * 5
    assert len(world.audits()) == 6


def hold_the_first_memory_write(monkeypatch: pytest.MonkeyPatch, navigations: int) -> None:
    """The first memory write of a scope waits until `navigations` have asked for their turn:
    the others queue behind it."""
    asked = 0
    changed = asyncio.Condition()
    serialise, turn = InMemoryMemory.serialise, KeyedTurns.turn

    @asynccontextmanager
    async def counted_turn(turns: KeyedTurns, key: Hashable) -> AsyncIterator[None]:
        nonlocal asked
        asked += 1
        async with changed:
            changed.notify_all()
        async with turn(turns, key):
            yield

    first = [True]

    async def held_serialise(memory: InMemoryMemory, corpus_id: str, scope: str) -> None:
        if first:
            first.clear()
            async with changed:
                await changed.wait_for(lambda: asked == navigations)
        await serialise(memory, corpus_id, scope)

    monkeypatch.setattr(InMemoryMemory, "serialise", held_serialise)
    monkeypatch.setattr(KeyedTurns, "turn", counted_turn)


async def test_navigations_queued_behind_a_memory_write_are_remembered_together_as_one_by_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While one memory write of a scope is under way, the four navigations queued behind it are
    remembered in the next unit of work, together: sequences in order, and every weight is the
    initial one plus each outcome's planned delta (`η·(s − s̄)`, `s̄` over the outcomes up to it),
    as if each had been written alone."""
    world = make_world(adaptive=True)
    await world.navigate("alpha")  # the graph cached, and outcome 1
    writing = 0
    tenant = InMemoryStore.tenant

    @asynccontextmanager
    async def counted_tenant(
        store: InMemoryStore, tenant_id: uuid.UUID, *, read_only: bool = False
    ) -> AsyncIterator[Any]:
        nonlocal writing
        writing += not read_only
        async with tenant(store, tenant_id, read_only=read_only) as work:
            yield work

    monkeypatch.setattr(InMemoryStore, "tenant", counted_tenant)
    hold_the_first_memory_write(monkeypatch, 5)
    queries = ["alpha beta", "gamma notice", "alpha beta gamma", "beta cap", "notice"]
    answers = await asyncio.wait_for(asyncio.gather(*(world.navigate(q) for q in queries)), 10)
    assert writing == 2  # the first alone, the four queued behind it together
    assert [a.remembered for a in answers] == [True] * 5
    assert len(world.audits()) == 6
    outcomes = world.store.outcomes(world.tenant, world.name)
    assert [o.sequence for o in outcomes] == [1, 2, 3, 4, 5, 6]
    by_outcome = {(a.navigation.path, a.navigation.coverage): a.navigation for a in answers}
    weights = {("a", "b"): 0.5, ("a", "c"): 0.5}
    scores = [outcomes[0].score]  # the first navigation's: its own baseline, no delta
    for outcome in outcomes[1:]:
        scores.append(outcome.score)
        delta = DEFAULT_PARAMS.learning_rate * (outcome.score - sum(scores) / len(scores))
        for edge in by_outcome[(outcome.path, outcome.score)].traversed:
            ends = (edge.source, edge.target)
            weights[ends] = min(max(weights[ends] + delta, 0.001), 1.0)
    rows = world.store.rows(world.tenant, world.corpus.relations)
    assert {(r["from_id"], r["to_id"]): r["weight"] for r in rows} == pytest.approx(weights)
    assert len({a.navigation.coverage for a in answers}) > 1  # the deltas were not all zero


async def test_a_write_that_fails_a_shared_transaction_fails_alone_and_the_others_are_remembered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = make_world(adaptive=True)
    await world.navigate("alpha")
    record = InMemoryMemory.record_outcomes

    async def refusing(
        memory: InMemoryMemory, corpus_id: str, scope: str, recorded: Sequence[Any]
    ) -> None:
        if any(outcome.query == "gamma notice" for outcome in recorded):
            raise RuntimeError("the store refused this outcome")
        await record(memory, corpus_id, scope, recorded)

    monkeypatch.setattr(InMemoryMemory, "record_outcomes", refusing)
    hold_the_first_memory_write(monkeypatch, 4)
    queries = ["alpha beta", "beta cap", "gamma notice", "notice"]
    answers = await asyncio.wait_for(
        asyncio.gather(*(world.navigate(q) for q in queries), return_exceptions=True), 10
    )
    assert isinstance(answers[2], RuntimeError)
    assert [a.remembered for a in answers if not isinstance(a, BaseException)] == [True] * 3
    assert len(world.store.outcomes(world.tenant, world.name)) == 4  # "alpha" and the three
    assert len(world.audits()) == 4
