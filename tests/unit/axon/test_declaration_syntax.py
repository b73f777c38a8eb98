"""The declarations parser: positions, skipped flow blocks, syntax errors and recovery."""

from __future__ import annotations

from mnemo_axon import DocumentDecl, load_deployment, parse_declarations
from mnemo_axon.syntax import ListCorpusNode, StoreCorpusNode, StoreNode

from .declarations import check


def problems(text: str) -> list[tuple[int, int, str]]:
    return [(p.line, p.column, p.message) for p in parse_declarations(text).problems]


def test_every_node_carries_the_line_and_column_it_was_written_at() -> None:
    parsed = parse_declarations(
        "# a comment\n"
        "axonstore S {\n"
        "  schema { id: Uuid primary_key, title: Text }\n"
        "}\n"
        "corpus C { documents: [a b] relations: [cite(a, b, 0.5)] }\n"
    )
    store, corpus = parsed.declarations
    assert isinstance(store, StoreNode)
    assert isinstance(corpus, ListCorpusNode)
    assert (store.keyword.line, store.keyword.column) == (2, 1)
    assert (store.name.text, store.name.line, store.name.column) == ("S", 2, 11)
    column = store.columns[1]
    assert (column.name.text, column.name.line, column.name.column) == ("title", 3, 34)
    assert (column.type_name.line, column.type_name.column) == (3, 41)
    assert corpus.documents is not None
    assert [(d.text, d.column) for d in corpus.documents] == [("a", 24), ("b", 26)]
    assert corpus.relations is not None
    relation = corpus.relations[0]
    assert [
        (n.text, n.column)
        for n in (relation.etype, relation.from_document, relation.to_document, relation.weight)
    ] == [
        ("cite", 41),
        ("a", 46),
        ("b", 49),
        ("0.5", 52),
    ]


def test_a_flow_block_is_skipped_even_with_braces_in_its_strings_and_comments() -> None:
    text = (
        "flow F(q: String) -> String {\n"
        '    step S { ask: "close } and { open" }   # a } in a comment\n'
        '    for x in xs { persist T { a: "${x.a}" } }\n'
        "}\n"
        'corpus C from mcp("s", "u")\n'
    )
    parsed = parse_declarations(text)
    assert parsed.problems == ()
    assert [(b.keyword, b.name, b.line) for b in parsed.skipped] == [("flow", "F", 1)]
    assert [d.name.text for d in parsed.declarations] == ["C"]


def test_an_unterminated_flow_block_is_an_error_naming_its_line() -> None:
    assert problems('corpus C from mcp("s", "u")\nflow F() {\n  step S {\n}\n') == [
        (
            2,
            1,
            "unterminated flow block 'F': no matching '}' before the end of the file "
            "(flow blocks are skipped by balanced braces)",
        )
    ]


def test_a_flow_without_a_body_is_an_error() -> None:
    assert problems('flow F(q: String)\ncorpus C from mcp("s", "u")\n') == [
        (1, 1, "flow block 'F' has no body: expected '{' before 'corpus'")
    ]


def test_an_unknown_top_level_word_is_an_error_that_lists_what_is_accepted() -> None:
    assert problems("memory M { }\n") == [
        (
            1,
            1,
            "unknown declaration 'memory': expected axonstore, corpus or document (flow, step "
            "and for blocks are skipped, not compiled)",
        )
    ]


def test_an_unterminated_string_is_reported_at_its_opening_quote() -> None:
    assert problems('document D { title: "never closed }\n') == [
        (1, 21, "unterminated string: no closing '\"' before the end of the file")
    ]


def test_an_unexpected_character_inside_a_declaration_is_reported_with_its_code_point() -> None:
    assert problems("corpus C { documents: [a; b] }") == [
        (
            1,
            25,
            "Corpus 'C': expected a document name or ']', got unexpected character ';' (U+003B)",
        )
    ]


def test_document_names_in_a_list_are_bare_names_not_strings() -> None:
    assert problems('corpus C { documents: ["a"] }') == [
        (
            1,
            24,
            "Corpus 'C': expected a document name or ']', got a string (document names are "
            "bare names, not strings)",
        )
    ]


def test_after_a_syntax_error_the_parser_resumes_at_the_next_declaration() -> None:
    text = (
        "axonstore S { schema { id: Uuid, title Text } }\n"
        "corpus C { documents: [a] }\n"
        "corpus D { documents: [] oops }\n"
        'corpus E from mcp("s", "u")\n'
    )
    parsed = parse_declarations(text)
    assert [(p.line, p.column) for p in parsed.problems] == [(1, 40), (3, 26)]
    assert [d.name.text for d in parsed.declarations] == ["C", "E"]


def test_a_missing_closing_brace_does_not_swallow_the_next_declaration() -> None:
    parsed = parse_declarations('axonstore S { schema { id: Uuid }\ncorpus E from mcp("s", "u")\n')
    assert [(p.line, p.column) for p in parsed.problems] == [(2, 1)]
    assert [d.name.text for d in parsed.declarations] == ["E"]


def test_form_d_document_and_relation_mappings_have_fixed_arities() -> None:
    assert problems("corpus G from axonstore { documents: S(id) relations: E(a, b, c, d) }") == [
        (
            1,
            38,
            "Corpus 'G': documents: expects S(id_column, title_column[, body_column]), "
            "got 1 column(s)",
        )
    ]
    assert problems("corpus G from axonstore { documents: S(id, t) relations: E(a, b, c) }") == [
        (
            1,
            58,
            "Corpus 'G': relations: expects E(from_column, to_column, etype_column, "
            "weight_column), got 3 column(s)",
        )
    ]


def test_form_d_needs_both_mappings() -> None:
    assert problems("corpus G from axonstore { documents: S(id, t) }") == [
        (
            1,
            47,
            "Corpus 'G' from axonstore needs 'relations: Store(from_column, to_column, "
            "etype_column, weight_column)'",
        )
    ]


def test_form_d_accepts_the_optional_body_column() -> None:
    parsed = parse_declarations(
        "corpus G from axonstore { documents: S(id, t, body) relations: E(a, b, c, d) adaptive: "
        "false }"
    )
    (corpus,) = parsed.declarations
    assert isinstance(corpus, StoreCorpusNode)
    assert [c.text for c in corpus.documents.columns] == ["id", "t", "body"]


def test_a_field_given_twice_is_an_error() -> None:
    assert problems('document D { title: "a" title: "b" }') == [
        (1, 25, "Document 'D': 'title' is given twice")
    ]


def test_documents_keep_multi_line_content_and_escaped_quotes() -> None:
    deployment = load_deployment(
        'document D {\n  title: "The \\"rules\\""\n  source: "docs/d.md"\n'
        '  content: "line one\nline two"\n}\ncorpus C { documents: [D] }'
    )
    assert deployment.documents == (
        DocumentDecl("D", title='The "rules"', source="docs/d.md", content="line one\nline two"),
    )


def test_a_column_named_like_a_modifier_is_still_a_column() -> None:
    deployment = load_deployment("axonstore S { schema { id: Uuid unique unique: Text } }")
    store = deployment.store("S")
    assert store is not None
    assert [(c.name, c.unique) for c in store.columns] == [("id", True), ("unique", False)]


def test_an_empty_file_declares_nothing() -> None:
    result = check("# only a comment\n")
    assert result.ok
    assert result.deployment is not None
    assert result.deployment.corpora == ()
