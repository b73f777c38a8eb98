"""The prefetch use case over fakes (a registry in memory, a gateway that records every request and
answers what each url was given, the in-memory store's outbox): the steps and their order, what
fails and how, where the caller's token may go, and the audit record. The same steps over real
HTTP and Postgres: tests/integration/navigator/test_route_prefetch.py."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from mnemo_auth import Principal
from mnemo_navigator.fakes import InMemoryStore
from mnemo_navigator.prefetch import (
    MAX_CHUNKS_PER_CORPUS,
    CorpusNotPublishedError,
    GatewayError,
    GatewayFailedError,
    GatewayReply,
    PrefetchEmptyError,
    Prefetcher,
    PrefetchPolicy,
    RouteNotPrefetchError,
    UnknownRouteError,
)
from mnemo_navigator.use_cases import Caller
from mnemo_store.registry import CorpusRow, Route

OWN = "http://mnemo.test/v1/corpora/"
TENANT = uuid.uuid4()
AUTHORIZATION = "Bearer the-callers-token"


def corpus(corpus_id: str, url: str, status: str = "published", collection: str = "") -> CorpusRow:
    return CorpusRow(
        corpus_id, corpus_id, url, collection, "none", "", status, None,
        datetime.now(UTC), "external", "v1", {},
    )  # fmt: skip


@dataclass
class Registry:
    routes: list[Route] = field(default_factory=list)
    corpora: dict[str, CorpusRow] = field(default_factory=dict)

    async def route(self, route_id: str, version: str | None) -> Route | None:
        for route in self.routes:
            if route.route_id == route_id and (
                route.route_version == version if version is not None else route.active
            ):
                return route
        return None

    async def corpus(self, corpus_id: str) -> CorpusRow | None:
        return self.corpora.get(corpus_id)


@dataclass
class Gateway:
    answers: dict[str, GatewayReply | GatewayError] = field(default_factory=dict)
    asked: list[tuple[str, dict[str, Any], dict[str, str]]] = field(default_factory=list)

    async def post(
        self, url: str, body: Mapping[str, Any], headers: Mapping[str, str]
    ) -> GatewayReply:
        self.asked.append((url, dict(body), dict(headers)))
        answer = self.answers[url]
        if isinstance(answer, GatewayError):
            raise answer
        return answer


def chunks(*ids: str, text: str = "some  text\nhere") -> GatewayReply:
    return GatewayReply(200, {"chunks": [{"id": i, "text": text, "tags": ["t"]} for i in ids]})


@dataclass
class World:
    registry: Registry
    gateway: Gateway
    store: InMemoryStore
    prefetcher: Prefetcher

    async def prefetch(self, route: str = "qa", version: str | None = None) -> Any:
        caller = Caller(Principal(TENANT, "tester", frozenset({"read"})))
        return await self.prefetcher.prefetch(
            caller, route, {"utterance": "overdraft fee"}, version, AUTHORIZATION
        )

    def audited(self) -> list[dict[str, Any]]:
        return [e.payload["data"]["record"] for e in self.store.outbox(TENANT)]


@pytest.fixture
def world() -> World:
    registry = Registry(
        routes=[Route("qa", "2026.08.1", "deterministic_prefetch", ("fees", "disclosure"), True)],
        corpora={
            "fees": corpus("fees", f"{OWN}FeeSchedule/search", collection="FeeSchedule"),
            "disclosure": corpus("disclosure", "http://elsewhere.test/corpora/pd/search"),
        },
    )
    gateway = Gateway(
        {
            f"{OWN}FeeSchedule/search": chunks("f1", "f2"),
            "http://elsewhere.test/corpora/pd/search": chunks("p1"),
        }
    )
    store = InMemoryStore()

    async def admit(principal: Principal) -> None:
        principal.require("read")

    prefetcher = Prefetcher(registry, gateway, store, admit, PrefetchPolicy(own_gateway=OWN))
    return World(registry, gateway, store, prefetcher)


async def test_each_corpus_is_asked_in_scope_order_and_its_chunks_tagged_and_packed(
    world: World,
) -> None:
    result = await world.prefetch()
    assert [url for url, _, _ in world.gateway.asked] == [
        f"{OWN}FeeSchedule/search",
        "http://elsewhere.test/corpora/pd/search",
    ]
    assert world.gateway.asked[0][1] == {
        "collection": "FeeSchedule",
        "goal": {"utterance": "overdraft fee"},
    }
    assert world.gateway.asked[1][1]["collection"] == "disclosure"  # empty means the corpus id
    every = result.slots["prefetch"]["chunks"]
    assert [(c["corpus_id"], c["id"]) for c in every] == [
        ("fees", "f1"),
        ("fees", "f2"),
        ("disclosure", "p1"),
    ]
    assert result.slots["prefetch:disclosure"] == {"corpus_id": "disclosure", "chunks": every[2:]}
    assert result.packed.splitlines() == [
        "[fees:f1] some text here",
        "[fees:f2] some text here",
        "[disclosure:p1] some text here",
    ]


async def test_the_callers_token_goes_to_mnemos_own_gateway_only(world: World) -> None:
    await world.prefetch()
    own, other = (headers for _, _, headers in world.gateway.asked)
    assert own["authorization"] == AUTHORIZATION
    assert "authorization" not in other


@pytest.mark.parametrize(
    ("status", "said"),
    [("deprecated", "is deprecated"), ("draft", "is draft"), (None, "is not registered")],
)
async def test_a_corpus_not_published_fails_before_any_gateway_is_asked(
    world: World, status: str | None, said: str
) -> None:
    if status is None:
        del world.registry.corpora["disclosure"]
    else:
        world.registry.corpora["disclosure"] = corpus(
            "disclosure", "http://elsewhere.test/corpora/pd/search", status
        )
    with pytest.raises(CorpusNotPublishedError, match=f"corpus disclosure {said}"):
        await world.prefetch()
    assert world.gateway.asked == []
    assert world.audited()[-1]["error"].startswith("route qa@2026.08.1: corpus disclosure")


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (GatewayError("did not answer within 5 s"), "did not answer within 5 s"),
        (GatewayReply(500, {"error": "x"}), "answered HTTP 500"),
        (GatewayReply(200, None), "answered without a 'chunks' list"),
        (GatewayReply(200, {"chunks": "no"}), "answered without a 'chunks' list"),
        (GatewayReply(200, {"chunks": [{"id": "a"}]}), "malformed chunk 1: no 'text'"),
        (GatewayReply(200, {"chunks": [{"id": True, "text": ""}]}), "malformed chunk 1: no 'id'"),
        (GatewayReply(200, {"chunks": [{"id": 1, "text": "", "tags": [1]}]}), "'tags' is not"),
        (
            GatewayReply(
                200, {"chunks": [{"id": i, "text": ""} for i in range(MAX_CHUNKS_PER_CORPUS + 1)]}
            ),
            f"at most {MAX_CHUNKS_PER_CORPUS} are taken",
        ),
    ],
)
async def test_a_failing_gateway_fails_the_whole_call_naming_its_corpus(
    world: World, answer: GatewayReply | GatewayError, said: str
) -> None:
    world.gateway.answers["http://elsewhere.test/corpora/pd/search"] = answer
    with pytest.raises(GatewayFailedError, match="the gateway of corpus disclosure") as failure:
        await world.prefetch()
    assert said in str(failure.value)
    assert world.audited()[-1]["chunk_ids"] == []


async def test_no_chunk_at_all_fails_closed_and_one_empty_corpus_does_not(world: World) -> None:
    world.gateway.answers["http://elsewhere.test/corpora/pd/search"] = chunks()
    result = await world.prefetch()
    assert result.slots["prefetch:disclosure"]["chunks"] == []
    world.gateway.answers[f"{OWN}FeeSchedule/search"] = chunks()
    with pytest.raises(
        PrefetchEmptyError, match="prefetch returned no chunks from fees, disclosure"
    ):
        await world.prefetch()


async def test_a_tool_route_never_prefetches(world: World) -> None:
    world.registry.routes.append(Route("ask", "1", "tool", ("fees",), True))
    with pytest.raises(RouteNotPrefetchError, match="route ask@1 is in mode tool"):
        await world.prefetch("ask")
    assert world.gateway.asked == []
    assert world.audited()[-1]["action"] == "route:ask:prefetch"


async def test_an_unknown_route_or_version_is_not_found_and_not_audited(world: World) -> None:
    with pytest.raises(UnknownRouteError, match=r"route 'nope' has no active version"):
        await world.prefetch("nope")
    with pytest.raises(UnknownRouteError, match="version '9'"):
        await world.prefetch("qa", "9")
    assert world.audited() == []


async def test_one_audit_record_per_call_with_the_chunks_it_returned(world: World) -> None:
    await world.prefetch()
    (record,) = world.audited()
    assert record["kind"] == "prefetch"
    assert record["action"] == "route:qa:prefetch"
    assert record["route_version"] == "2026.08.1"
    assert record["corpora"] == ["fees", "disclosure"]
    assert record["chunk_ids"] == ["fees:f1", "fees:f2", "disclosure:p1"]
    assert record["goal"] == "overdraft fee"
    assert record["error"] is None


async def test_a_hand_written_route_id_with_a_colon_is_audited_not_crashed(world: World) -> None:
    world.registry.routes.append(Route("team:qa", "1", "deterministic_prefetch", ("fees",), True))
    result = await world.prefetch("team:qa")
    assert result.route.route_id == "team:qa"
    assert world.audited()[-1]["action"] == "route:team_qa:prefetch"
    assert world.audited()[-1]["route_id"] == "team:qa"


async def test_a_hand_written_scope_entry_that_names_no_corpus_fails_the_call_and_is_audited(
    world: World,
) -> None:
    world.registry.routes.append(Route("odd", "1", "deterministic_prefetch", ("", 42), True))
    with pytest.raises(CorpusNotPublishedError, match="corpus  is not registered"):
        await world.prefetch("odd")
    assert world.audited()[-1]["corpora"] == ["", "42"]
