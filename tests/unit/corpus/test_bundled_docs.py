"""BundledDocsCorpus: the manual ships with the package, is complete, and its links all resolve."""

from __future__ import annotations

import re

from mnemo_corpus import BundledDocsCorpus, KeywordRetriever, entry_graph
from mnemo_corpus.bundled_docs import bundled_docs_root


def test_the_manual_covers_concepts_quickstart_declarations_api_and_operations() -> None:
    categories = {entry.category for entry in BundledDocsCorpus().entries()}
    assert {"concepts", "quickstart", "declarations", "api", "operations"} <= categories


def test_every_document_has_a_summary_and_the_sidecars_name_only_real_files() -> None:
    corpus = BundledDocsCorpus()
    assert all(entry.summary for entry in corpus.entries())
    for entry in corpus.entries():
        assert all(corpus.get(path) is not None for path in entry.related), entry.path


def test_every_link_in_the_manual_resolves() -> None:
    graph = entry_graph(BundledDocsCorpus())
    assert graph.unresolved_links == ()
    assert graph.pending_edges == ()
    linked = {edge.source for edge in graph.edges} | {edge.target for edge in graph.edges}
    assert linked == {document.id for document in graph.documents}


def test_the_manual_says_omitting_where_reads_the_whole_tenant_and_can_leak_across_clients() -> (
    None
):
    corpus = BundledDocsCorpus()
    for path in ("declarations/where-filter.md", "api/http.md", "concepts/tenants-and-scopes.md"):
        entry = corpus.get(path)
        assert entry is not None
        text = " ".join(entry.content.split())
        assert re.search(r"[Oo]mitting `where:?` means (\"|the )?the whole tenant", text), path
        assert "cross-client leak" in text, path


def test_the_manual_lives_inside_the_installed_package() -> None:
    root = bundled_docs_root()
    assert root.parts[-2:] == ("mnemo_corpus", "docs")
    assert (root / "index.md").is_file()


def test_the_keyword_retriever_finds_the_scoping_page_first() -> None:
    hits = KeywordRetriever().retrieve(
        "how do I scope a navigation to one client", BundledDocsCorpus()
    )
    assert hits[0].path == "concepts/tenants-and-scopes.md"


def test_the_bundled_corpus_has_its_own_name() -> None:
    assert BundledDocsCorpus().name == "bundled:mnemo-docs"
