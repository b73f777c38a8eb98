"""The embedded mode: a folder of markdown navigated in-process by the MDN engine."""

from __future__ import annotations

import json

from mnemo_corpus import BundledDocsCorpus, DirectoryCorpus, entry_graph
from mnemo_mdn import navigate

from .conftest import TreeWriter


def test_a_folder_becomes_a_graph_the_engine_navigates_along_its_links(
    write_tree: TreeWriter,
) -> None:
    root = write_tree(
        {
            "refunds.md": "---\naliases: [parcel damage]\n---\n# Refunds\nRefunds for a parcel.",
            "damage.md": "# Damage\nA damaged parcel is photographed.",
            "shipping.md": "# Shipping\nParcels ship daily; see [[parcel damage]].",
            "links.json": json.dumps({"refunds.md": ["damage.md"]}),
        }
    )
    graph = entry_graph(DirectoryCorpus(root, cross_links_file="links.json")).to_corpus_graph()
    assert graph.n_documents == 3
    assert graph.n_edges == 2

    navigation = navigate(graph, "refunds damaged parcel", seed="refunds.md", budget=2)

    assert navigation.path == ("refunds.md", "damage.md")
    via = navigation.hits[1].via
    assert via is not None
    assert (via.source, via.etype, via.weight) == ("refunds.md", "depend", 0.5)


def test_the_bundled_manual_answers_the_scoping_question_with_the_scoping_page_first() -> None:
    graph = entry_graph(BundledDocsCorpus()).to_corpus_graph()
    navigation = navigate(graph, "how do I scope a navigation to one client")
    assert navigation.hits[0].id == "concepts/tenants-and-scopes.md"
    assert "declarations/where-filter.md" in navigation.path
