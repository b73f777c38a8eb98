"""Every example of the corpus seed parses verbatim and checks clean.

The fixtures under seed_examples/ are cut from the seed file without any change (line ranges in
test_the_fixtures_are_verbatim_cuts_of_the_seed). Flow, step and for blocks inside them are skipped.
"""

from __future__ import annotations

from pathlib import Path

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

SEED = Path("/work/shared/seeds/000_48d577db96fedbc2.txt")

# fixture → the seed's 1-based line range it was cut from
CUTS = {
    "form_a_policy_docs.axon": (44, 46),
    "form_b_clinical_guidelines.axon": (50, 50),
    "form_c_session_knowledge.axon": (58, 76),
    "form_d_ltm_graph.axon": (84, 108),
    "subtenant_scope_flow.axon": (114, 121),
    "edge_population_flow.axon": (129, 142),
}


@pytest.mark.skipif(not SEED.exists(), reason="the shared seed file is not on this machine")
@pytest.mark.parametrize("fixture", sorted(CUTS))
def test_the_fixtures_are_verbatim_cuts_of_the_seed(fixture: str) -> None:
    first, last = CUTS[fixture]
    seed_lines = SEED.read_text(encoding="utf-8").splitlines(keepends=True)
    assert (SEED_EXAMPLES / fixture).read_text(encoding="utf-8") == "".join(
        seed_lines[first - 1 : last]
    )


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
