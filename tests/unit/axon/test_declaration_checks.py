"""One test per message of AXON.md §2, exact text and position; then the checks the spec leaves out."""

from __future__ import annotations

from mnemo_axon import Diagnostic, DocumentOrigin, MappingDocumentDirectory

from .declarations import check, messages

DOCS = 'document a { title: "A" }\ndocument b { title: "B" }\n'

STORES = """
axonstore Docs {
    backend: postgresql
    schema { id: Uuid primary_key  title: Text  body: Text  score: Integer  label: Text }
}
axonstore Edges {
    schema { src: Uuid  dst: Uuid  kind: Text  weight: Float  other: Text  count: Integer }
}
"""


def only(result_messages: list[str]) -> str:
    assert len(result_messages) == 1, result_messages
    return result_messages[0]


# --- G1 ------------------------------------------------------------------------------------------


def test_g1_an_empty_document_list_is_refused() -> None:
    assert only(messages("corpus Empty { documents: [] }")) == (
        "Corpus 'Empty' requires at least one document or an mcp_server (G1: D ≠ ∅)"
    )


def test_g1_a_corpus_without_a_documents_field_is_refused() -> None:
    assert only(messages("corpus Empty { }")) == (
        "Corpus 'Empty' requires at least one document or an mcp_server (G1: D ≠ ∅)"
    )


def test_g1_an_mcp_corpus_with_an_empty_server_is_refused() -> None:
    assert only(messages('corpus Remote from mcp("", "kb://x")')) == (
        "Corpus 'Remote' requires at least one document or an mcp_server (G1: D ≠ ∅)"
    )


# --- G3, G2, G4, adaptive ------------------------------------------------------------------------


def test_g3_a_relation_type_outside_the_closed_catalog_is_refused() -> None:
    result = check(DOCS + "corpus C { documents: [a, b] relations: [ endorses(a, b, 0.5) ] }")
    assert [d.message for d in result.diagnostics] == [
        "Corpus 'C': unknown relation type 'endorses' (closed catalog: cite, corroborate, "
        "contradict, depend, elaborate, exemplify, implement, supersede)"
    ]
    assert (result.diagnostics[0].line, result.diagnostics[0].column) == (3, 43)


def test_g2_a_relation_to_a_document_outside_the_corpus_is_refused() -> None:
    assert only(messages(DOCS + "corpus C { documents: [a] relations: [ cite(a, b, 0.5) ] }")) == (
        "Corpus 'C': relation references undeclared document 'b' (G2: edges connect corpus members)"
    )


def test_g4_relation_weights_outside_zero_exclusive_to_one_inclusive_are_refused() -> None:
    text = DOCS + (
        "corpus C { documents: [a, b] relations: [\n"
        "  cite(a, b, 0) cite(a, b, 1.5) cite(a, b, -0.2) cite(a, b, 1) cite(a, b, 0.001) ] }"
    )
    assert messages(text) == [
        "Corpus 'C': relation weight 0 must be in (0, 1] (G4)",
        "Corpus 'C': relation weight 1.5 must be in (0, 1] (G4)",
        "Corpus 'C': relation weight -0.2 must be in (0, 1] (G4)",
    ]


def test_adaptive_without_relations_is_refused() -> None:
    assert only(messages(DOCS + "corpus C { documents: [a, b] adaptive: true }")) == (
        "Corpus 'C': `adaptive: true` requires `relations:` — memory deforms the graph, an "
        "edgeless corpus has nothing to learn"
    )


def test_adaptive_false_without_relations_is_fine() -> None:
    assert messages(DOCS + "corpus C { documents: [a, b] adaptive: false }") == []


# --- form (d) ------------------------------------------------------------------------------------


def test_form_d_stores_must_be_declared_axonstores() -> None:
    text = DOCS + (
        "corpus G from axonstore {\n"
        "  documents: Missing(id, title)\n"
        "  relations: a(src, dst, kind, weight)\n"
        "}"
    )
    assert messages(text) == [
        "Corpus 'G': documents store 'Missing' is not a declared axonstore",
        "Corpus 'G': relations store 'a' is not a declared axonstore",
    ]


def test_form_d_every_mapped_column_must_exist_and_each_message_says_its_role() -> None:
    text = STORES + (
        "corpus G from axonstore {\n"
        "  documents: Docs(ident, heading, text)\n"
        "  relations: Edges(source, target, type, strength)\n"
        "}"
    )
    assert messages(text) == [
        "Corpus 'G': documents store 'Docs' has no column 'ident' (the document id)",
        "Corpus 'G': documents store 'Docs' has no column 'heading' (the title)",
        "Corpus 'G': documents store 'Docs' has no column 'text' (the body)",
        "Corpus 'G': relations store 'Edges' has no column 'source' (the from endpoint)",
        "Corpus 'G': relations store 'Edges' has no column 'target' (the to endpoint)",
        "Corpus 'G': relations store 'Edges' has no column 'type' (the edge type)",
        "Corpus 'G': relations store 'Edges' has no column 'strength' (the weight)",
    ]


def test_form_d_the_title_column_must_be_text_like() -> None:
    text = STORES + (
        "corpus G from axonstore { documents: Docs(id, score) "
        "relations: Edges(src, dst, kind, weight) }"
    )
    assert (
        only(messages(text)) == "Corpus 'G': title column 'score' must be text-like (got Integer)"
    )


def test_form_d_the_edge_type_column_must_be_text_like() -> None:
    text = STORES + (
        "corpus G from axonstore { documents: Docs(id, title) "
        "relations: Edges(src, dst, count, weight) }"
    )
    assert only(messages(text)) == (
        "Corpus 'G': edge type column 'count' must be text-like (got Integer)"
    )


def test_form_d_edge_endpoints_must_have_the_document_id_type() -> None:
    text = STORES + (
        "corpus G from axonstore { documents: Docs(id, title) "
        "relations: Edges(other, kind, kind, weight) }"
    )
    assert messages(text) == [
        "Corpus 'G': edge from column 'other' type Text must match the document id column type "
        "Uuid (G2: edges connect corpus members)",
        "Corpus 'G': edge to column 'kind' type Text must match the document id column type "
        "Uuid (G2: edges connect corpus members)",
    ]


def test_form_d_the_weight_column_must_be_numeric() -> None:
    text = STORES + (
        "corpus G from axonstore { documents: Docs(id, title) "
        "relations: Edges(src, dst, kind, other) }"
    )
    assert only(messages(text)) == (
        "Corpus 'G': edge weight column 'other' must be numeric (got Text); ω ∈ (0,1] is "
        "enforced at runtime"
    )


def test_form_d_an_integer_weight_column_is_numeric_enough() -> None:
    text = STORES + (
        "corpus G from axonstore { documents: Docs(id, title, body) "
        "relations: Edges(src, dst, kind, count) }"
    )
    assert messages(text) == []


def test_form_d_the_optional_body_column_must_be_text_like() -> None:
    text = STORES + (
        "corpus G from axonstore { documents: Docs(id, title, score) "
        "relations: Edges(src, dst, kind, weight) }"
    )
    assert only(messages(text)) == "Corpus 'G': body column 'score' must be text-like (got Integer)"


# --- resolution and names ------------------------------------------------------------------------


def test_an_unresolved_document_name_is_a_compile_error() -> None:
    assert only(messages(DOCS + "corpus C { documents: [a, ghost] }")) == (
        "Corpus 'C': unknown document 'ghost'"
    )


def test_documents_resolve_against_declarations_first_then_the_directory() -> None:
    directory = MappingDocumentDirectory(
        paths=("guides/onboarding.md", "a.md"), aliases={"refunds": "billing/refunds.md"}
    )
    result = check(DOCS + "corpus C { documents: [a, onboarding, refunds] }", directory=directory)
    assert result.deployment is not None
    corpus = result.deployment.corpus("C")
    assert corpus is not None
    assert [(ref.name, ref.origin, ref.path) for ref in corpus.documents] == [
        ("a", DocumentOrigin.DECLARATION, None),
        ("onboarding", DocumentOrigin.DIRECTORY, "guides/onboarding.md"),
        ("refunds", DocumentOrigin.DIRECTORY, "billing/refunds.md"),
    ]


def test_a_name_declared_twice_is_reported_at_the_second_declaration() -> None:
    result = check('document a { title: "A" }', 'corpus a from mcp("s", "u")')
    assert result.diagnostics == (Diagnostic("file2.axon", 1, 8, "'a' is declared twice"),)


# --- every error of a run, with positions --------------------------------------------------------


def test_a_run_reports_every_error_in_source_order_with_file_line_and_column() -> None:
    first = (
        "corpus Empty { documents: [] }\n"
        "corpus Bad { documents: [x] relations: [ likes(x, y, 2) ] adaptive: true }\n"
    )
    second = 'axonstore S { schema { id: Uuid } }\ncorpus Empty from mcp("s", "u")\n'
    result = check(first, second)
    assert [str(d) for d in result.diagnostics] == [
        "file1.axon:1:8: error: Corpus 'Empty' requires at least one document or an mcp_server "
        "(G1: D ≠ ∅)",
        "file1.axon:2:26: error: Corpus 'Bad': unknown document 'x'",
        "file1.axon:2:42: error: Corpus 'Bad': unknown relation type 'likes' (closed catalog: "
        "cite, corroborate, contradict, depend, elaborate, exemplify, implement, supersede)",
        "file1.axon:2:51: error: Corpus 'Bad': relation references undeclared document 'y' "
        "(G2: edges connect corpus members)",
        "file1.axon:2:54: error: Corpus 'Bad': relation weight 2 must be in (0, 1] (G4)",
        "file2.axon:2:8: error: 'Empty' is declared twice",
    ]
    assert result.deployment is None


def test_syntax_errors_and_check_errors_are_reported_together() -> None:
    text = (
        "axonstore S { schema { id Uuid } }\n"  # missing ':'
        "corpus Empty { documents: [] }\n"
        'corpus Fine from mcp("s" "u")\n'  # missing ','
    )
    assert [str(d) for d in check(text).diagnostics] == [
        "file1.axon:1:27: error: expected ':' after column name 'id', got 'Uuid'",
        "file1.axon:2:8: error: Corpus 'Empty' requires at least one document or an mcp_server "
        "(G1: D ≠ ∅)",
        "file1.axon:3:26: error: expected ',' between the MCP server and the resource URI, "
        "got a string",
    ]


# --- checks beyond the spec's table: what the store layer could not create -----------------------


def test_an_unknown_column_type_is_refused_with_a_hint() -> None:
    assert only(messages("axonstore S { schema { id: uuid  n: Strng } }")[:1]) == (
        "Store 'S': unknown type 'uuid' for column 'id' (did you mean Uuid? expected one of Uuid, "
        "Text, Integer, BigInt, Float, Double, Numeric, Boolean, Timestamptz, Date, Json)"
    )


def test_only_the_postgresql_backend_is_accepted() -> None:
    assert only(messages("axonstore S { backend: mysql schema { id: Uuid } }")) == (
        "Store 'S': unsupported backend 'mysql' (expected postgresql)"
    )


def test_a_store_needs_columns() -> None:
    assert only(messages('axonstore S { connection: "x" }')) == (
        "Store 'S' declares no columns (add 'schema { name: Type ... }')"
    )


def test_a_column_declared_twice_is_refused() -> None:
    assert only(messages("axonstore S { schema { id: Uuid id: Text } }")) == (
        "Store 'S': column 'id' is declared twice"
    )


def test_the_hidden_tenant_column_name_is_reserved() -> None:
    assert only(messages("axonstore S { schema { axon_tenant: Uuid } }")) == (
        "Store 'S': column 'axon_tenant' is reserved (Mnemo adds it to every store for "
        "row-level security); choose another name"
    )


def test_the_reserved_prefix_is_refused_in_any_case_as_apply_would() -> None:
    for name in ("axon_row_id", "AXON_TENANT", "axon_x", "Axon_Label"):
        assert only(messages(f"axonstore S {{ schema {{ {name}: Text  ok: Text }} }}")) == (
            f"Store 'S': column '{name}' starts with 'axon_' (in any case), which Mnemo reserves "
            "for its hidden columns (axon_tenant, axon_row_id); choose another name"
        )


def test_more_columns_than_a_postgres_table_holds_are_refused() -> None:
    columns = " ".join(f"c{k}: Text" for k in range(1599))
    assert only(messages(f"axonstore S {{ schema {{ {columns} }} }}")) == (
        "Store 'S' declares 1599 columns; a Postgres table holds at most 1598 besides Mnemo's "
        "two hidden ones (split the store)"
    )
    fits = " ".join(f"c{k}: Text" for k in range(1598))
    assert messages(f"axonstore S {{ schema {{ {fits} }} }}") == []


def test_a_corpus_name_longer_than_a_corpus_id_holds_is_refused() -> None:
    name = "C" * 201
    assert only(messages(f"{DOCS}corpus {name} {{ documents: [a] }}")) == (
        f"Corpus name '{'C' * 40}…' is 201 characters long; a corpus id holds at most 200 "
        "(shorten it)"
    )
    assert messages(f"{DOCS}corpus {'C' * 200} {{ documents: [a] }}") == []


def test_identifiers_longer_than_postgres_allows_are_refused() -> None:
    long_name = "c" * 64
    assert only(messages(f"axonstore S {{ schema {{ {long_name}: Text }} }}")) == (
        f"Store 'S': column '{long_name}' is 64 bytes long; a Postgres identifier holds at "
        "most 63 (shorten it)"
    )


def test_column_defaults_must_fit_their_type() -> None:
    text = (
        "axonstore S { schema {\n"
        '  a: Integer default(1.5)  b: Text default(now())  c: Boolean default("yes")\n'
        "  d: Timestamptz default(now())  e: Integer not_null default(0)  f: Text default(null)\n"
        "} }"
    )
    assert messages(text) == [
        "Store 'S': default of column 'a' does not fit type Integer: not an Integer: '1.5' "
        "(expected digits)",
        "Store 'S': default of column 'b' does not fit type Text: now() is a time; a Text column "
        "cannot default to it",
        "Store 'S': default of column 'c' does not fit type Boolean: not a Boolean: 'yes' "
        "(expected true or false)",
    ]


def test_a_document_listed_twice_in_one_corpus_is_refused() -> None:
    assert only(messages(DOCS + "corpus C { documents: [a, b, a] }")) == (
        "Corpus 'C': document 'a' is listed twice (list each member once)"
    )


def test_a_relation_list_present_but_empty_makes_a_graph_corpus_that_cannot_be_adaptive() -> None:
    assert only(messages(DOCS + "corpus C { documents: [a] relations: [] adaptive: true }")) == (
        "Corpus 'C': `adaptive: true` requires `relations:` — memory deforms the graph, an "
        "edgeless corpus has nothing to learn"
    )
