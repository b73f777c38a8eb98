"""The service's reading cache: a document is read once while its text is unchanged."""

from __future__ import annotations

import uuid

from mnemo_edge_classifier.use_cases import KeysCache
from mnemo_mdn.edge_classification import TextDocument, document_keys

TENANT = uuid.uuid4()


def test_a_document_read_again_with_the_same_text_comes_from_the_cache() -> None:
    cache = KeysCache(10)
    poet = TextDocument("p", "Hilda Hilst", "A poet from Jaú.")
    first = cache.keys(TENANT, "Memory", poet)
    assert (
        cache.keys(TENANT, "Memory", TextDocument("p", "Hilda Hilst", "A poet from Jaú.")) is first
    )
    assert cache.hits == 1
    assert first == document_keys(poet)


def test_a_changed_text_another_tenant_or_corpus_is_read_afresh() -> None:
    cache = KeysCache(10)
    first = cache.keys(TENANT, "Memory", TextDocument("p", "Hilda Hilst", "A poet."))
    changed = cache.keys(TENANT, "Memory", TextDocument("p", "Hilda Hilst", "A novelist."))
    assert changed is not first
    assert "novelist" in changed.lowered
    cache.keys(uuid.uuid4(), "Memory", TextDocument("p", "Hilda Hilst", "A novelist."))
    cache.keys(TENANT, "Other", TextDocument("p", "Hilda Hilst", "A novelist."))
    assert cache.hits == 0


def test_the_least_recently_used_document_leaves_a_full_cache() -> None:
    cache = KeysCache(2)
    a, b, c = (TextDocument(n, n.upper(), None) for n in "abc")
    kept = cache.keys(TENANT, "M", a)
    cache.keys(TENANT, "M", b)
    assert cache.keys(TENANT, "M", a) is kept  # a is now the most recent
    cache.keys(TENANT, "M", c)  # b leaves
    assert cache.keys(TENANT, "M", a) is kept
    cache.keys(TENANT, "M", b)
    assert cache.hits == 2
