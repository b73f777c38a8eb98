"""The edge classifier's reads, as its own role: candidates and key rarity, within tenant and scope."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest
from mnemo_mdn.edge_classification import TextDocument, document_keys
from mnemo_store import Scope, Store
from mnemo_store.candidates import CandidateDocument
from mnemo_store.store_corpus import StoreCorpus
from mnemo_store.unit_of_work import TenantTransaction


def _classifier_dsn(app_dsn: str) -> str:
    given = os.environ.get("MNEMO_CLASSIFIER_DATABASE_URL")
    if given:
        return given
    parts = urlsplit(app_dsn)
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=f"mnemo_classifier:mnemo_classifier@{host}"))


@pytest.fixture(scope="module")
async def classifier_store(app_dsn: str) -> AsyncIterator[Store]:
    async with await Store.connect(_classifier_dsn(app_dsn), min_size=1, max_size=4) as opened:
        yield opened


def _scope(client: uuid.UUID) -> Scope:
    return Scope("tenant_id == '${tenant_id}'", {"tenant_id": str(client)})


async def _read(
    tx: TenantTransaction,
    corpus: StoreCorpus,
    document_id: str,
    *,
    names: list[str] | None = None,
    keys: list[str] | None = None,
    cited: list[str] | None = None,
    titles: list[str] | None = None,
    scope: Scope | None = None,
) -> tuple[list[CandidateDocument], dict[str, int]]:
    """The classifier's one read, with every name evidence however many documents hold it."""
    names = names or []
    return await tx.neighbourhood(
        corpus,
        document_id,
        keys=sorted({*names, *(keys or [])}),
        names=names,
        max_holders=1_000_000,
        cited=cited or [],
        titles=titles or [],
        limit=100,
        scope=scope,
    )


async def test_candidates_come_only_from_the_documents_tenant_and_scope(
    store: Store, classifier_store: Store, declare: Any, new_tenant: Any
) -> None:
    corpus = (await declare()).corpus
    tenant, other_tenant = await new_tenant(), await new_tenant()
    client, other_client = uuid.uuid4(), uuid.uuid4()
    rows = {
        (tenant, client): "mine",
        (tenant, other_client): "neighbour",
        (other_tenant, client): "stranger",
    }
    for (owner, end_client), label in rows.items():
        async with store.tenant(owner) as tx:
            await tx.insert_rows(
                corpus.documents,
                [
                    {
                        "id": uuid.uuid4(),
                        "tenant_id": end_client,
                        "title": f"Hilda Hilst {label} {k}",
                        "body": "Hilda Hilst wrote poems in Campinas.",
                    }
                    for k in range(3)
                ],
            )
    new_id = str(uuid.uuid4())
    async with classifier_store.tenant(tenant, read_only=True) as tx:
        found, counts = await _read(
            tx,
            corpus,
            new_id,
            names=["hilda hilst"],
            keys=["campinas", "lisbon"],
            scope=_scope(client),
        )
        _, whole_tenant = await _read(tx, corpus, new_id, keys=["hilda hilst"])
    assert len(found) == 3
    assert all(" mine " in document.title for document in found)
    assert counts == {"hilda hilst": 3, "campinas": 3, "lisbon": 0}
    assert whole_tenant == {"hilda hilst": 6}


async def test_the_new_document_is_never_its_own_candidate(
    store: Store, classifier_store: Store, declare: Any, new_tenant: Any
) -> None:
    corpus = (await declare()).corpus
    tenant, client, doc = await new_tenant(), uuid.uuid4(), uuid.uuid4()
    async with store.tenant(tenant) as tx:
        await tx.insert_rows(
            corpus.documents,
            [{"id": doc, "tenant_id": client, "title": "Zanzibar", "body": "Islands."}],
        )
    async with classifier_store.tenant(tenant, read_only=True) as tx:
        found, _ = await _read(
            tx, corpus, str(doc), names=["zanzibar"], titles=["zanzibar"], scope=_scope(client)
        )
    assert found == []


async def test_the_classifier_role_reads_stores_but_may_not_write_them(
    classifier_store: Store, declare: Any, new_tenant: Any
) -> None:
    corpus = (await declare()).corpus
    tenant = await new_tenant()
    with pytest.raises(asyncpg.InsufficientPrivilegeError):
        async with classifier_store.tenant(tenant) as tx:
            await tx.insert_rows(
                corpus.documents,
                [{"id": uuid.uuid4(), "tenant_id": uuid.uuid4(), "title": "x", "body": None}],
            )


async def test_hostile_words_are_only_phrases_to_look_for(
    classifier_store: Store, declare: Any, new_tenant: Any
) -> None:
    corpus = (await declare()).corpus
    tenant = await new_tenant()
    words = ["') | !x & (", "foo:*", "a<->b", "'; DROP TABLE x; --", "foo:* <-> bar"]
    async with classifier_store.tenant(tenant, read_only=True) as tx:
        found, counts = await _read(tx, corpus, "n", names=words, cited=words, titles=words)
    assert found == []
    assert counts == dict.fromkeys(words, 0)


async def test_the_candidates_are_the_documents_the_classifier_could_join_however_many_share_words(
    store: Store, classifier_store: Store, declare: Any, new_tenant: Any
) -> None:
    corpus = (await declare()).corpus
    tenant, client = await new_tenant(), uuid.uuid4()
    cited, holder, rare, noise = uuid.uuid4(), uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    titles = {
        cited: "Henry V (play)",
        holder: "Agincourt",
        rare: "Chronicles",
        noise: "Kings",
    }
    bodies = {
        cited: "A history play.",
        holder: "The Battle of Agincourt, as told in Blue Moon Rising.",
        rare: "Raphael Holinshed wrote them.",
        noise: "Kings and battles and kings.",
    }
    rows = [
        {"id": key, "tenant_id": client, "title": titles[key], "body": bodies[key]}
        for key in titles
    ]
    # Fifty documents sharing words with the new one: a ranked top-N would be full of them.
    rows += [
        {"id": uuid.uuid4(), "tenant_id": client, "title": f"Kings {k}", "body": "kings battles"}
        for k in range(50)
    ]
    async with store.tenant(tenant) as tx:
        await tx.insert_rows(corpus.documents, rows)
    new_id = str(uuid.uuid4())
    async with classifier_store.tenant(tenant, read_only=True) as tx:
        found, _ = await _read(
            tx,
            corpus,
            new_id,
            titles=["henry play", "kings battles", "nothing"],
            cited=["blue moon rising", "raphael holinshed"],
            scope=_scope(client),
        )
        other_scope, _ = await _read(
            tx,
            corpus,
            new_id,
            titles=["henry play"],
            cited=["raphael holinshed"],
            scope=_scope(uuid.uuid4()),
        )
        nothing, _ = await _read(tx, corpus, new_id, cited=["') | !x & ("])
    assert sorted(d.id for d in found) == sorted(str(k) for k in (cited, holder, rare))
    assert other_scope == []
    assert nothing == []


async def test_the_title_key_in_sql_is_the_classifiers_title_key(
    store: Store, classifier_store: Store, declare: Any, new_tenant: Any
) -> None:
    corpus = (await declare()).corpus
    tenant = await new_tenant()
    titles = [
        "Henry V (play)",
        "World War I",
        "a b c Rising",
        "São Paulo — FC",
        "x_y über-cool 42 Ω",
        "  Spaces\tand\nlines  ",
        "R.E.M.",
    ]
    rows = [
        {"id": uuid.uuid4(), "tenant_id": uuid.uuid4(), "title": t, "body": None} for t in titles
    ]
    async with store.tenant(tenant) as tx:
        await tx.insert_rows(corpus.documents, rows)
    expected = {document_keys(TextDocument("d", t)).title_key for t in titles}
    async with classifier_store.tenant(tenant, read_only=True) as tx:
        found, _ = await _read(tx, corpus, "n", titles=sorted(expected))
    assert sorted(d.title for d in found) == sorted(titles)


async def test_the_alias_key_in_sql_is_the_classifiers_title_without_its_qualifier(
    store: Store, classifier_store: Store, declare: Any, new_tenant: Any
) -> None:
    corpus = (await declare()).corpus
    tenant = await new_tenant()
    titles = [
        "Henry Worrall (artist)",
        "It'll Be Me (Jerry Lee Lewis song)",
        "Midway (near Pleasant Plains), White County, Arkansas",
        "Outer (inner (x) y) z",
        "(1917 film)",
        "Unclosed (paren",
    ]
    rows = [
        {"id": uuid.uuid4(), "tenant_id": uuid.uuid4(), "title": t, "body": None} for t in titles
    ]
    async with store.tenant(tenant) as tx:
        await tx.insert_rows(corpus.documents, rows)
    aliases = {document_keys(TextDocument("d", t)).alias_key for t in titles} - {""}
    assert "henry worrall" in aliases
    async with classifier_store.tenant(tenant, read_only=True) as tx:
        found, _ = await _read(tx, corpus, "n", titles=sorted(aliases))
    with_alias = [t for t in titles if document_keys(TextDocument("d", t)).alias_key]
    assert sorted(d.title for d in found) == sorted(with_alias)


async def test_the_neighbourhood_read_counts_keys_and_keeps_only_rare_names_within_the_scope(
    store: Store, classifier_store: Store, declare: Any, new_tenant: Any
) -> None:
    corpus = (await declare()).corpus
    tenant, client = await new_tenant(), uuid.uuid4()
    common = [
        {"id": uuid.uuid4(), "tenant_id": client, "title": f"Town {k}", "body": "In Brazil."}
        for k in range(4)
    ]
    poet = {"id": uuid.uuid4(), "tenant_id": client, "title": "Hilda Hilst", "body": "Poet."}
    city = {"id": uuid.uuid4(), "tenant_id": client, "title": "Jaú", "body": "Hilda Hilst, Jaú."}
    stranger = {"id": uuid.uuid4(), "tenant_id": uuid.uuid4(), "title": "Jaú", "body": "Jaú."}
    async with store.tenant(tenant) as tx:
        await tx.insert_rows(corpus.documents, [*common, poet, city, stranger])
    new_id = str(uuid.uuid4())
    async with classifier_store.tenant(tenant, read_only=True) as tx:
        found, counts = await tx.neighbourhood(
            corpus,
            new_id,
            keys=["brazil", "hilda hilst", "') | !x & ("],
            names=["brazil", "hilda hilst", "') | !x & ("],
            max_holders=3,
            cited=["nobody cites this"],
            titles=["jaú"],
            limit=100,
            scope=_scope(client),
        )
    assert counts == {"brazil": 4, "hilda hilst": 2, "') | !x & (": 0}
    # `brazil` is held by 4 > 3 documents: too common to make its holders candidates.
    assert sorted(d.id for d in found) == sorted(str(r["id"]) for r in (poet, city))
