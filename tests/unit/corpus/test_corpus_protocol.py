"""CorpusProtocol: any object of the right shape is a corpus, and retrieval works on all of them."""

from __future__ import annotations

import pytest
from mnemo_corpus import (
    BundledDocsCorpus,
    CorpusProtocol,
    DirectoryCorpus,
    KeywordRetriever,
    RetrievalEntry,
)

from .conftest import InMemoryCorpus, TreeWriter


@pytest.fixture
def three_corpora(write_tree: TreeWriter) -> list[CorpusProtocol]:
    root = write_tree({"tenants.md": "# Tenants\nScope a navigation to one client with where."})
    in_memory = InMemoryCorpus(
        [RetrievalEntry("scoping.md", "", "Scope a navigation to one client with where.")]
    )
    return [DirectoryCorpus(root), BundledDocsCorpus(), in_memory]


def test_directory_bundled_and_in_memory_corpora_all_satisfy_the_protocol(
    three_corpora: list[CorpusProtocol],
) -> None:
    assert all(isinstance(corpus, CorpusProtocol) for corpus in three_corpora)


def test_an_object_missing_a_member_is_not_a_corpus() -> None:
    class NoVersion:
        name = "x"

        def entries(self) -> list[RetrievalEntry]:
            return []

        def get(self, path: str) -> RetrievalEntry | None:
            return None

    assert not isinstance(NoVersion(), CorpusProtocol)


def test_the_same_retrieval_call_works_on_all_three(three_corpora: list[CorpusProtocol]) -> None:
    retriever = KeywordRetriever()
    for corpus in three_corpora:
        hits = retriever.retrieve("scope a navigation to one client", corpus, k=3)
        assert hits, corpus.name
        assert all(corpus.get(hit.path) == hit.entry for hit in hits)
    assert [corpus.name for corpus in three_corpora] == [
        "directory:docs",
        "bundled:mnemo-docs",
        "memory:test",
    ]
