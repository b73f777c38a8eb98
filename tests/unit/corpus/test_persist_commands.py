"""Persist commands: one document row per entry, then one edge row per link."""

from __future__ import annotations

import json

import pytest
from mnemo_corpus import (
    DirectoryCorpus,
    DocumentsStore,
    EdgesStore,
    EntryGraph,
    PersistCommand,
    entry_graph,
    plan_ingest,
)

from .conftest import TreeWriter


def sample_graph(write_tree: TreeWriter) -> EntryGraph:
    root = write_tree(
        {
            "a.md": "# Alpha\nSee [[bee line]].",
            "b.md": "---\naliases: [bee line]\n---\n# Beta\n",
            "links.json": json.dumps({"a.md": ["b.md", "c.md", "../out.md"]}),
        }
    )
    return entry_graph(DirectoryCorpus(root, cross_links_file="links.json"))


def test_documents_come_first_then_edges_then_pending_edges(write_tree: TreeWriter) -> None:
    plan = plan_ingest(sample_graph(write_tree))
    assert [command.as_data() for command in plan.commands] == [
        {
            "store": "Documents",
            "values": {"id": "a.md", "title": "Alpha", "body": "# Alpha\nSee [[bee line]]."},
        },
        {
            "store": "Documents",
            "values": {
                "id": "b.md",
                "title": "Beta",
                "body": "---\naliases: [bee line]\n---\n# Beta\n",
            },
        },
        {
            "store": "Edges",
            "values": {"from_id": "a.md", "to_id": "b.md", "etype": "depend", "weight": 0.5},
        },
        {
            "store": "Edges",
            "values": {"from_id": "a.md", "to_id": "b.md", "etype": "cite", "weight": 0.5},
        },
        {
            "store": "Edges",
            "values": {"from_id": "a.md", "to_id": "c.md", "etype": "depend", "weight": 0.5},
        },
    ]
    assert (plan.document_count, plan.edge_count, plan.pending_edge_count) == (2, 2, 1)
    assert [link.target for link in plan.unresolved_links] == ["c.md", "../out.md"]
    assert plan.summary() == "2 documents, 3 edges (1 pending), 2 unresolved links"


def test_store_and_column_names_are_options(write_tree: TreeWriter) -> None:
    plan = plan_ingest(
        sample_graph(write_tree),
        DocumentsStore(
            name="Memories", id_column="memory_id", title_column="label", body_column=None
        ),
        EdgesStore(
            name="Links", from_column="src", to_column="dst", etype_column="kind", weight_column="w"
        ),
    )
    assert plan.commands[0] == PersistCommand("Memories", {"memory_id": "a.md", "label": "Alpha"})
    assert plan.commands[2] == PersistCommand(
        "Links", {"src": "a.md", "dst": "b.md", "kind": "depend", "w": 0.5}
    )


def test_a_store_with_a_repeated_or_empty_column_is_refused() -> None:
    with pytest.raises(ValueError, match="each column must be different"):
        DocumentsStore(title_column="id")
    with pytest.raises(ValueError, match="must not be empty"):
        EdgesStore(weight_column="")
