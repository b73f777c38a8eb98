"""A corpus as documents and edges: related links, wiki-links, and links that do not resolve."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mnemo_corpus import (
    DirectoryCorpus,
    DuplicateAliasError,
    LinkKind,
    LinkOptions,
    RetrievalEntry,
    UnresolvedLink,
    entry_graph,
)
from mnemo_mdn import Document, Edge

from .conftest import InMemoryCorpus, TreeWriter


def test_each_entry_becomes_a_document_titled_by_name_heading_or_stem(
    write_tree: TreeWriter,
) -> None:
    files = {
        "b/named.md": "---\nname: Named\n---\n# Heading\n",
        "a.md": "# A heading\ntext",
        "c.md": "no heading",
    }
    graph = entry_graph(DirectoryCorpus(write_tree(files)))
    assert graph.documents == (
        Document(id="a.md", title="A heading", body="# A heading\ntext"),
        Document(id="b/named.md", title="Named", body=files["b/named.md"]),
        Document(id="c.md", title="c", body="no heading"),
    )


def test_related_links_become_depend_edges_of_weight_one_half_by_default(
    write_tree: TreeWriter,
) -> None:
    root = write_tree(
        {"a.md": "A", "b.md": "B", "links.json": json.dumps({"a.md": ["b.md", "./b.md"]})}
    )
    graph = entry_graph(DirectoryCorpus(root, cross_links_file="links.json"))
    assert graph.edges == (Edge("a.md", "b.md", "depend", 0.5),)
    assert graph.unresolved_links == ()


def test_the_type_and_weight_of_link_edges_are_configurable(write_tree: TreeWriter) -> None:
    root = write_tree(
        {
            "a.md": "See [[bee keeping]].",
            "b.md": "---\naliases: [bee keeping]\n---\nB",
            "links.json": json.dumps({"b.md": ["a.md"]}),
        }
    )
    options = LinkOptions(
        related_etype="elaborate",
        related_weight=0.8,
        wiki_link_etype="corroborate",
        wiki_link_weight=0.3,
    )
    graph = entry_graph(DirectoryCorpus(root, cross_links_file="links.json"), options)
    assert graph.edges == (
        Edge("a.md", "b.md", "corroborate", 0.3),
        Edge("b.md", "a.md", "elaborate", 0.8),
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"related_etype": "likes"}, "related_etype 'likes' is not a relation type"),
        ({"wiki_link_etype": "Cite"}, "wiki_link_etype 'Cite' is not a relation type"),
        ({"related_weight": 0.0}, r"related_weight must be in \(0, 1\]"),
        ({"wiki_link_weight": 1.5}, r"wiki_link_weight must be in \(0, 1\]"),
        ({"related_weight": float("nan")}, "related_weight must be"),
    ],
)
def test_link_options_outside_the_catalog_or_the_weight_range_are_refused(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        LinkOptions(**options)


def test_wiki_links_to_an_alias_become_cite_edges_once_per_pair(write_tree: TreeWriter) -> None:
    root = write_tree(
        {
            "guide.md": "Use [[where filter]] to scope; again [[where filter|the filter]].",
            "where.md": "---\naliases: [where filter]\n---\nI mention my own [[where filter]].",
        }
    )
    graph = entry_graph(DirectoryCorpus(root))
    assert graph.edges == (Edge("guide.md", "where.md", "cite", 0.5),)
    assert graph.unresolved_links == ()


def test_wiki_links_compare_aliases_exactly(write_tree: TreeWriter) -> None:
    root = write_tree(
        {"a.md": "See [[Where Filter]].", "b.md": "---\naliases: [where filter]\n---\n"}
    )
    graph = entry_graph(DirectoryCorpus(root))
    assert graph.edges == ()
    assert graph.unresolved_links == (
        UnresolvedLink("a.md", "Where Filter", LinkKind.WIKI_LINK, "no entry has this alias"),
    )


def test_a_related_link_to_a_missing_file_is_reported_and_kept_pending(
    write_tree: TreeWriter,
) -> None:
    root = write_tree({"a.md": "A", "links.json": json.dumps({"a.md": ["guides/../later.md"]})})
    graph = entry_graph(DirectoryCorpus(root, cross_links_file="links.json"))
    assert graph.edges == ()
    assert graph.pending_edges == (Edge("a.md", "later.md", "depend", 0.5),)
    assert graph.unresolved_links == (
        UnresolvedLink(
            "a.md", "guides/../later.md", LinkKind.RELATED, "no such entry", pending=True
        ),
    )
    assert graph.unresolved_links[0].describe() == (
        "a.md -> guides/../later.md (related: no such entry; kept as a pending edge)"
    )


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        ("../outside.md", "leaves the corpus root"),
        ("a/../../outside.md", "leaves the corpus root"),
        ("/etc/passwd", "an absolute path; links are relative to the corpus root"),
        ("", "an empty path"),
    ],
)
def test_a_related_link_that_leaves_the_root_is_reported_and_never_becomes_an_edge(
    write_tree: TreeWriter, target: str, reason: str
) -> None:
    root = write_tree({"a.md": "A", "links.json": json.dumps({"a.md": [target]})})
    graph = entry_graph(DirectoryCorpus(root, cross_links_file="links.json"))
    assert (graph.edges, graph.pending_edges) == ((), ())
    assert graph.unresolved_links == (UnresolvedLink("a.md", target, LinkKind.RELATED, reason),)


def test_any_corpus_can_become_a_graph_and_a_duplicate_alias_is_refused() -> None:
    corpus = InMemoryCorpus(
        [
            RetrievalEntry("x.md", "", "[[why]]", aliases=("how",)),
            RetrievalEntry("y.md", "", "", aliases=("why",), related=("x.md",)),
        ]
    )
    graph = entry_graph(corpus)
    assert graph.edges == (Edge("x.md", "y.md", "cite", 0.5), Edge("y.md", "x.md", "depend", 0.5))
    twice = InMemoryCorpus(
        [
            RetrievalEntry("x.md", "", "", aliases=("why",)),
            RetrievalEntry("y.md", "", "", aliases=("why",)),
        ]
    )
    with pytest.raises(DuplicateAliasError):
        entry_graph(twice)
