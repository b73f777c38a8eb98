"""Retrieve from a fresh cached graph answers what Postgres answers, and says so (issue 29)."""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.integration.navigator.conftest import Arena, Declare, NewTenant, Service

WORDS = ("Alpha", "beta", "gamma", "w1", "w22", "delta9", "x")
SEPARATORS = (" ", "  ", ", ", "; ", "! ", "? ", ". ", " (", ") ", ' "', "' ", "\n", "\t")
IDS = ("a1", "B1", "a2", "Z", "b-3", "aa", "a10", "A1")


@st.composite
def plain_texts(draw: st.DrawFn, max_words: int = 8) -> str:
    words = draw(st.lists(st.sampled_from(WORDS), max_size=max_words))
    glue = draw(st.lists(st.sampled_from(SEPARATORS), min_size=len(words), max_size=len(words)))
    return "".join(w + g for w, g in zip(words, glue, strict=True)).strip()


documents = st.dictionaries(
    st.sampled_from(IDS),
    st.tuples(plain_texts(), st.none() | plain_texts(max_words=300)),
    min_size=1,
    max_size=8,
)
queries = st.lists(st.sampled_from([*WORDS, "absent", "ALPHA"]), min_size=1, max_size=4).map(
    " ".join
)


async def served(
    service: Service, arena: Arena, tenant: uuid.UUID, query: str, k: int = 8
) -> tuple[list[dict[str, Any]], str]:
    """Retrieve's items and which path answered (from the Server-Timing header)."""
    response = await service.client.post(
        f"/v1/corpora/{arena.name}/retrieve",
        json={"query": query, "k": k},
        headers=service.token(tenant),
    )
    assert response.status_code == 200, response.text
    timing = response.headers.get("server-timing", "")
    path = "memory" if "retrieve-memory" in timing else "store"
    if "retrieve-store" in timing:
        path = "store"  # the graph's texts sent it on
    return response.json()["items"], path


async def warm(service: Service, arena: Arena, tenant: uuid.UUID) -> None:
    response = await service.client.post(
        f"/v1/corpora/{arena.name}/navigate",
        json={"query": "beta"},
        headers=service.token(tenant),
    )
    assert response.status_code == 200, response.text


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(corpus=documents, query=queries, k=st.integers(min_value=1, max_value=9))
async def test_both_paths_return_the_same_items_for_the_same_snapshot(
    declare: Declare,
    new_tenant: NewTenant,
    service: Service,
    corpus: dict[str, tuple[str, str | None]],
    query: str,
    k: int,
) -> None:
    arena = await declare(adaptive=False)
    tenant = await new_tenant()
    rows = [
        {"id": i, "tenant_id": "c1", "title": title, "body": body}
        for i, (title, body) in corpus.items()
    ]
    await arena.write(tenant, rows)
    cold, cold_path = await served(service, arena, tenant, query, k)
    await warm(service, arena, tenant)
    from_memory, memory_path = await served(service, arena, tenant, query, k)
    assert (cold_path, memory_path) == ("store", "memory")
    assert from_memory == cold


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    corpus=documents,
    writes=st.lists(
        st.dictionaries(
            st.sampled_from(IDS),
            st.tuples(plain_texts(), st.none() | plain_texts()),
            min_size=1,
            max_size=3,
        ),
        min_size=1,
        max_size=3,
    ),
    query=queries,
    k=st.integers(min_value=1, max_value=9),
)
async def test_a_graph_refreshed_through_layered_postings_answers_what_postgres_does(
    declare: Declare,
    new_tenant: NewTenant,
    service: Service,
    corpus: dict[str, tuple[str, str | None]],
    writes: list[dict[str, tuple[str, str | None]]],
    query: str,
    k: int,
) -> None:
    # Each write batch is merged into the cached graph by a refresh, whose term index is the
    # earlier one plus layers (changed documents: tests/unit/mdn/test_incremental.py): memory
    # still answers as Postgres.
    arena = await declare(adaptive=False)
    tenant = await new_tenant()

    def rows(batch: dict[str, tuple[str, str | None]], tag: str) -> list[dict[str, object]]:
        return [
            {"id": i + tag, "tenant_id": "c1", "title": t, "body": b} for i, (t, b) in batch.items()
        ]

    # Filler enough that a batch changes under a quarter of the graph (past it, a rebuild).
    filler = {f"f{k:02d}": (f"{WORDS[k % len(WORDS)]} filler", None) for k in range(24)}
    await arena.write(tenant, rows(corpus | filler, ""))
    await warm(service, arena, tenant)
    for number, batch in enumerate(writes):
        await arena.write(tenant, rows(batch, f"-{number}"))
        from_store, store_path = await served(service, arena, tenant, query, k)
        response = await service.client.post(
            f"/v1/corpora/{arena.name}/navigate",
            json={"query": "beta"},
            headers=service.token(tenant),
        )
        assert response.status_code == 200, response.text
        assert response.json()["diagnostics"]["cache"] == "refresh"
        from_memory, memory_path = await served(service, arena, tenant, query, k)
        assert (store_path, memory_path) == ("store", "memory")
        assert from_memory == from_store


async def test_a_write_after_the_graph_was_cached_is_answered_by_postgres_and_seen(
    declare: Declare, new_tenant: NewTenant, service: Service
) -> None:
    arena = await declare(adaptive=False)
    tenant = await new_tenant()
    await arena.write(tenant, [{"id": "a", "tenant_id": "c1", "title": "beta one", "body": None}])
    await warm(service, arena, tenant)
    assert (await served(service, arena, tenant, "beta"))[1] == "memory"
    await arena.write(tenant, [{"id": "b", "tenant_id": "c1", "title": "beta two", "body": None}])
    items, path = await served(service, arena, tenant, "beta")
    assert path == "store"
    assert sorted(item["id"] for item in items) == ["a", "b"]


async def test_text_the_tokenisers_may_split_otherwise_is_answered_by_postgres(
    declare: Declare, new_tenant: NewTenant, service: Service
) -> None:
    arena = await declare(adaptive=False)
    tenant = await new_tenant()
    await arena.write(
        tenant,
        [
            {"id": "a", "tenant_id": "c1", "title": "beta mail", "body": "write to x@y.org"},
            {"id": "b", "tenant_id": "c1", "title": "beta pi", "body": "about 3.14 or -5"},
        ],
    )
    await warm(service, arena, tenant)
    items, path = await served(service, arena, tenant, "y org 14 5 beta")
    assert path == "store"
    assert {item["id"] for item in items} == {"a", "b"}


async def test_a_warm_graph_never_answers_another_tenant_or_another_scope(
    declare: Declare, new_tenant: NewTenant, service: Service
) -> None:
    arena = await declare(adaptive=False)
    mine, theirs = await new_tenant(), await new_tenant()
    await arena.write(mine, [{"id": "m", "tenant_id": "c1", "title": "beta mine", "body": None}])
    await arena.write(
        theirs,
        [
            {"id": "t", "tenant_id": "c1", "title": "beta theirs", "body": None},
            {"id": "u", "tenant_id": "c2", "title": "beta other client", "body": None},
        ],
    )
    await warm(service, arena, theirs)  # only the other tenant's graph is cached
    items, path = await served(service, arena, mine, "beta")
    assert path == "store"
    assert [item["id"] for item in items] == ["m"]
    await warm(service, arena, mine)
    items, path = await served(service, arena, mine, "beta theirs other")
    assert path == "memory"
    assert [item["id"] for item in items] == ["m"]
    # The other tenant's whole-corpus graph is warm; a narrower scope is not that graph.
    response = await service.client.post(
        f"/v1/corpora/{arena.name}/retrieve",
        json={"query": "beta", "where": "tenant_id == 'c2'"},
        headers=service.token(theirs),
    )
    assert response.status_code == 200, response.text
    assert "retrieve-store" in response.headers["server-timing"]
    assert [item["id"] for item in response.json()["items"]] == ["u"]
