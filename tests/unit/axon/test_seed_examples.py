"""Every example of the corpus seed parses verbatim and checks clean.

The fixtures under seed_examples/ are cut from the corpus seed without any change; CUTS records
each one's line range and the digest of the cut, so a fixture edited since fails. Flow, step and
for blocks inside them are skipped.
"""

from __future__ import annotations

import hashlib

import pytest
from mnemo_axon import (
    AxonSource,
    AxonType,
    CorpusKind,
    DocumentOrigin,
    RelationDecl,
    check_sources,
    compile_deployment,
    parse_declarations,
)

from .declarations import SEED_EXAMPLES, seed_documents_source, seed_sources

# fixture → the seed's 1-based line range it was cut from, and the SHA-256 of that cut, taken when
# the fixture was cut (the seed itself is not part of the repository)
CUTS = {
    "form_a_policy_docs.axon": (
        (44, 46),
        "03b2275797aae304de9e2369db5be179fd65397b460c99b3a5b142a7d904d2fd",
    ),
    "form_b_clinical_guidelines.axon": (
        (50, 50),
        "6497d8dda93e8b9ddc7aa3b79a8c3b69e5c53a91f5e8389b2d6d7e0cc1f11f85",
    ),
    "form_c_session_knowledge.axon": (
        (58, 76),
        "abd3d0424e4a20b1e90276f783269f43e542d1b57eab585e5a6af34848107ca7",
    ),
    "form_d_ltm_graph.axon": (
        (84, 108),
        "3a43cbd54b96765d052b0ea410d8b318c7ee2221bfcb780f2df5994276467088",
    ),
    "subtenant_scope_flow.axon": (
        (114, 121),
        "bcad54a66155b602bc9afb447a1965a4f94a62a26859cb66325403271a5f8430",
    ),
    "edge_population_flow.axon": (
        (129, 142),
        "a22c716524a9260ee9848af2a798c1b30b4ddcb4a87e82fbe955835da33f8c61",
    ),
}


@pytest.mark.parametrize("fixture", sorted(CUTS))
def test_the_fixtures_are_unchanged_since_they_were_cut_from_the_seed(fixture: str) -> None:
    (first, last), digest = CUTS[fixture]
    text = (SEED_EXAMPLES / fixture).read_text(encoding="utf-8")
    assert text.count("\n") == last - first + 1
    assert hashlib.sha256(text.encode("utf-8")).hexdigest() == digest


@pytest.mark.parametrize("fixture", sorted(CUTS))
def test_each_seed_example_parses_without_a_syntax_problem(fixture: str) -> None:
    parsed = parse_declarations((SEED_EXAMPLES / fixture).read_text(encoding="utf-8"), fixture)
    assert parsed.problems == ()


def test_all_seed_examples_check_clean_together_once_their_documents_are_declared() -> None:
    result = check_sources([*seed_sources(), seed_documents_source()])
    assert result.diagnostics == ()
    deployment = result.deployment
    assert deployment is not None
    assert [store.name for store in deployment.stores] == ["LtmSummaries", "LtmEdges"]
    assert [(corpus.name, corpus.kind) for corpus in deployment.corpora] == [
        ("PolicyDocs", CorpusKind.INLINE),
        ("ClinicalGuidelines", CorpusKind.MCP),
        ("SessionKnowledge", CorpusKind.GRAPH),
        ("LtmGraph", CorpusKind.STORE_GRAPH),
    ]


def test_the_policy_docs_example_resolves_its_members_to_document_declarations() -> None:
    deployment = compile_deployment(
        [
            AxonSource("a.axon", (SEED_EXAMPLES / "form_a_policy_docs.axon").read_text()),
            seed_documents_source(),
        ]
    )
    corpus = deployment.corpus("PolicyDocs")
    assert corpus is not None
    assert [(ref.name, ref.origin) for ref in corpus.documents] == [
        ("PrivacyPolicy", DocumentOrigin.DECLARATION),
        ("TermsOfService", DocumentOrigin.DECLARATION),
        ("RefundPolicy", DocumentOrigin.DECLARATION),
    ]
    assert corpus.relations == ()
    assert corpus.adaptive is False


def test_the_clinical_guidelines_example_is_mcp_bound_without_a_body() -> None:
    deployment = compile_deployment(
        [AxonSource("b.axon", (SEED_EXAMPLES / "form_b_clinical_guidelines.axon").read_text())]
    )
    corpus = deployment.corpus("ClinicalGuidelines")
    assert corpus is not None
    assert corpus.mcp is not None
    assert (corpus.mcp.server, corpus.mcp.resource_uri) == (
        "clinical-mcp.internal",
        "kb://guidelines/2025",
    )


def test_the_session_knowledge_example_keeps_its_typed_weighted_edges_and_memory() -> None:
    deployment = compile_deployment(
        [
            AxonSource("c.axon", (SEED_EXAMPLES / "form_c_session_knowledge.axon").read_text()),
            seed_documents_source(),
        ]
    )
    corpus = deployment.corpus("SessionKnowledge")
    assert corpus is not None
    assert corpus.relations == (
        RelationDecl("cite", "sess_b", "sess_a", 0.9),
        RelationDecl("contradict", "sess_c", "sess_a", 0.7),
        RelationDecl("elaborate", "sess_c", "sess_b", 0.5),
    )
    assert corpus.adaptive is True


def test_the_ltm_graph_example_maps_its_two_stores_and_ignores_the_connection_string() -> None:
    deployment = compile_deployment(
        [AxonSource("d.axon", (SEED_EXAMPLES / "form_d_ltm_graph.axon").read_text())]
    )
    summaries = deployment.store("LtmSummaries")
    edges = deployment.store("LtmEdges")
    assert summaries is not None
    assert edges is not None
    assert summaries.column_types == {
        "id": AxonType.UUID,
        "summary": AxonType.TEXT,
        "created_at": AxonType.TIMESTAMPTZ,
    }
    id_column = summaries.column("id")
    assert id_column is not None
    assert id_column.primary_key
    assert edges.column_types["weight"] is AxonType.FLOAT
    corpus = deployment.corpus("LtmGraph")
    assert corpus is not None
    assert corpus.documents_store is not None
    assert corpus.relations_store is not None
    assert (corpus.documents_store.id_column, corpus.documents_store.title_column) == (
        "id",
        "summary",
    )
    assert corpus.documents_store.body_column is None
    assert corpus.relations_store.weight_column == "weight"
    assert corpus.adaptive is True
    assert '"..."' not in deployment.to_json()


def test_flow_step_and_for_blocks_of_the_seed_are_skipped_and_reported() -> None:
    result = check_sources(seed_sources())
    skipped = sorted(
        (file, block.keyword, block.name, block.line) for file, block in result.skipped
    )
    assert skipped == [
        ("edge_population_flow.axon", "for", "e", 6),
        ("edge_population_flow.axon", "step", "ClassifyEdges", 1),
        ("form_c_session_knowledge.axon", "flow", "Recall", 11),
        ("form_d_ltm_graph.axon", "flow", "Recall", 22),
        ("form_d_ltm_graph.axon", "flow", "Remember", 17),
        ("subtenant_scope_flow.axon", "flow", "Recall", 1),
    ]
