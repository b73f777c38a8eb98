"""The cold path (a scope not held in memory: `StoreCandidates`, Postgres per event, its title
lookup on the stored, indexed title and alias keys) finds exactly what the pure function finds
(`LexicalIndex` over the corpus read at once) and what the in-memory `ScopeIndex` finds, whatever
the corpus and the order of its writes, edits and deletes: the same candidates, key frequencies
and edges. The corpora and change orders are those of tests/unit/mdn/test_scope_index.py, without
its hyphenated and one-character words. Postgres's full-text parser keeps them at their own
positions where the pure tokens drop them (`doc-3` is `doc-3`, `doc` and `3`; `a` is a word), so
a phrase the pure function reads across them (`doc hilda` in `doc-3 Hilda`, `hilda hilda` in
`Hilda a Hilda`) is not adjacent in the stored tsvector and its frequency differs. That
disagreement predates the stored keys (the per-row read had it too); the last tests pin it
(strict xfail) until the two tokenisations agree."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import asyncpg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mnemo_axon.compiler import load_deployment
from mnemo_edge_classifier.adapters import StoreCandidates
from mnemo_mdn.edge_classification import (
    DEFAULT_OPTIONS,
    ClassifierOptions,
    Rarity,
    TextDocument,
    candidate_query,
    classify,
    document_keys,
    keys_of,
)
from mnemo_mdn.lexical_index import LexicalIndex, ScopeIndex
from mnemo_store import Scope, Store, StoreCorpus
from mnemo_store.applier import apply_deployment
from mnemo_store.identifiers import store_table

from tests.declarations import memory_corpus
from tests.integration.edge_classifier.worlds import drop_world
from tests.unit.mdn.test_scope_index import IDS, WORDS

_WORDS = [word for word in WORDS if "-" not in word and len(word) > 1]
_titles = st.builds(
    lambda words, qualifier: " ".join(words) + (f" ({qualifier})" if qualifier else ""),
    st.lists(st.sampled_from(_WORDS), min_size=0, max_size=4),
    st.sampled_from(["", "", "play", "1917 film", "artist"]),
)
_bodies = st.one_of(
    st.none(),
    st.lists(
        st.one_of(st.sampled_from(_WORDS), st.sampled_from([".", ",", "\n\n", "(", ")"])),
        max_size=30,
    ).map(" ".join),
)
_documents = st.builds(TextDocument, st.sampled_from(IDS), _titles, _bodies)
changes = st.lists(
    st.one_of(_documents, st.sampled_from(IDS).map(lambda i: ("delete", i))),
    min_size=1,
    max_size=25,
)
SCOPE = Scope("tenant_id == '${tenant_id}'", {"tenant_id": "client-a"})


@dataclass(frozen=True)
class World:
    owner_dsn: str
    classifier_dsn: str
    corpus: StoreCorpus
    tenant: uuid.UUID


@pytest.fixture(scope="module")
def world(infrastructure: object) -> Iterator[World]:
    owner_dsn = os.environ["MNEMO_OWNER_DATABASE_URL"]
    classifier_dsn = os.environ.get("MNEMO_CLASSIFIER_DATABASE_URL") or owner_dsn.replace(
        "mnemo_owner:mnemo_owner", "mnemo_classifier:mnemo_classifier"
    )
    suffix = uuid.uuid4().hex[:10]
    deployment = load_deployment(
        memory_corpus("Cold", "Cold", suffix, id_type="Text", client_type="Text"),
        f"cold_{suffix}.axon",
    )

    async def make() -> uuid.UUID:
        owner = await asyncpg.connect(owner_dsn)
        try:
            await apply_deployment(owner, deployment, gateway_base_url="http://127.0.0.1:8080")
            tenant: uuid.UUID = await owner.fetchval(
                "INSERT INTO mnemo.tenants (name) VALUES ($1) RETURNING tenant_id",
                f"test-cold-{suffix}",
            )
            return tenant
        finally:
            await owner.close()

    tenant = asyncio.run(make())
    corpus = StoreCorpus.from_deployment(deployment, f"Cold_{suffix}")
    try:
        yield World(owner_dsn, classifier_dsn, corpus, tenant)
    finally:

        async def drop() -> None:
            await drop_world(await asyncpg.connect(owner_dsn), deployment, corpus.name, tenant)

        asyncio.run(drop())


async def _check(world: World, steps: list[TextDocument | tuple[str, str]], max_links: int) -> None:
    table = store_table(world.corpus.documents.name)
    corpus: dict[str, TextDocument] = {}
    owner = await asyncpg.connect(world.owner_dsn)
    try:
        async with owner.transaction():
            await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(world.tenant))
            await owner.execute(f"DELETE FROM {table}")
            # Another end-client's document never is a candidate of client-a's.
            await owner.execute(
                f"INSERT INTO {table} (axon_tenant, id, tenant_id, title, body)"
                " VALUES ($1, 'other', 'client-b', 'Hilda Hilst', 'Hilda Hilst Paris')",
                world.tenant,
            )
            for step in steps:
                if isinstance(step, tuple):
                    await owner.execute(f"DELETE FROM {table} WHERE id = $1", step[1])
                    corpus.pop(step[1], None)
                    continue
                await owner.execute(
                    f"INSERT INTO {table} (axon_tenant, id, tenant_id, title, body)"
                    " VALUES ($1, $2, 'client-a', $3, $4) ON CONFLICT (axon_tenant, id)"
                    " DO UPDATE SET title = EXCLUDED.title, body = EXCLUDED.body",
                    world.tenant,
                    step.id,
                    step.title,
                    step.body,
                )
                corpus[step.id] = step
    finally:
        await owner.close()
    if not corpus:
        return
    options = ClassifierOptions(max_links=max_links)
    whole = LexicalIndex(list(corpus.values()))
    held = ScopeIndex(corpus.values())
    async with await Store.connect(world.classifier_dsn, max_size=1) as reader:
        cold = StoreCandidates(reader, 1000, options)
        for position, keys in enumerate(whole.keys):
            query, phrases = candidate_query(keys), keys_of(keys)
            found = await cold.neighbourhood(
                world.tenant, world.corpus, keys.id, query, phrases, SCOPE
            )
            expected = sorted(whole.keys[p].id for p in whole.candidates(position, options))
            rarity = whole.rarity(keys)
            in_memory, frequencies = held.neighbourhood(keys.id, query, phrases, options)
            assert [c.id for c in found.candidates] == expected, keys.id
            assert [d.id for d in in_memory] == expected, keys.id
            assert dict(found.frequencies) == dict(rarity.document_frequency) == frequencies, (
                keys.id,
                steps,
            )
            pure = classify(
                keys, [whole.keys[p] for p in whole.candidates(position, options)], rarity, options
            )
            from_store = classify(
                keys,
                [document_keys(TextDocument(c.id, c.title, c.body)) for c in found.candidates],
                Rarity(dict(found.frequencies)),
                options,
            )
            assert from_store == pure, keys.id


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(changes, st.sampled_from([1, 2, DEFAULT_OPTIONS.max_links]))
def test_the_cold_path_finds_what_the_pure_function_and_the_in_memory_index_find(
    world: World, steps: list[TextDocument | tuple[str, str]], max_links: int
) -> None:
    asyncio.run(_check(world, steps, max_links))


@pytest.mark.xfail(
    strict=True,
    reason="Postgres's parser keeps hyphenated parts and one-letter words at their own positions",
)
@pytest.mark.parametrize("title", ["doc-3 Hilda", "Hilda a Hilda"])
def test_a_hyphenated_or_one_letter_word_is_read_as_the_pure_function_reads_it(
    world: World, title: str
) -> None:
    asyncio.run(_check(world, [TextDocument("doc-0", title, None)], 2))
