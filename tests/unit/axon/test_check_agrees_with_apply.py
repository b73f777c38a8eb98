"""`mnemo check` says ok exactly when `apply` can create what it plans: every rule the store planner
enforces is a rule of `mnemo_axon.rules`, reported by the checker at the offending text; names with
non-ASCII letters get one clear message; weights and defaults written `1e-3` or `.5` parse."""

from __future__ import annotations

import dataclasses

import pytest
from mnemo_axon import load_deployment
from mnemo_axon.column_types import AxonType
from mnemo_axon.errors import UnexpectedCharacterError
from mnemo_axon.ir import ColumnDecl, CorpusDecl, CorpusKind, Deployment, StoreDecl
from mnemo_axon.where import parse_filter
from mnemo_store import DeclarationRuleError
from mnemo_store.ddl import Catalog, plan_stores

from .declarations import check, messages

DOCS = 'document a { title: "A" }\ndocument b { title: "B" }\n'


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("Docs_pkey", "primary key '<store>_pkey'"),
        ("Docs_PKEY", "primary key '<store>_pkey'"),
        ("Docs_axon_row_id_seq", "row id sequence '<store>_axon_row_id_seq'"),
        ("Docs__fulltext", "'<store>__<what>' is how Mnemo names"),
        ("Docs__edge_from_idx", "'<store>__<what>' is how Mnemo names"),
        ("S" * 52 + "_0123456789", "shortens a long index name"),
    ],
)
def test_a_store_name_postgres_or_mnemo_could_generate_for_another_store_is_refused(
    name: str, why: str
) -> None:
    text = f"axonstore Docs {{ schema {{ id: Text primary_key }} }}\naxonstore {name} {{ schema {{ id: Text }} }}"
    (diagnostic,) = check(text).diagnostics
    assert (diagnostic.line, diagnostic.column) == (2, 11)
    assert diagnostic.message.startswith(
        f"Store name '{name}' could collide with a name generated for another store"
    )
    assert why in diagnostic.message


def test_store_names_near_the_generated_forms_are_fine() -> None:
    text = "axonstore Docs_key { schema { id: Text } }\naxonstore Pkey_seqs { schema { id: Text } }"
    assert check(text).diagnostics == ()


def test_a_name_with_non_ascii_letters_gets_one_clear_message_with_an_ascii_spelling() -> None:
    text = (
        "axonstore Dócs { schema { id: Text } }\n"
        "axonstore Docs { schema { id: Text  títle: Text } }\n"
        "corpus Ünïcode { documents: [a] }\n"
        'flow Résumé(q: String) -> String { return "é" }\n'
    )
    assert messages(text) == [
        "name 'Dócs' contains 'ó' (U+00F3): names are ASCII letters, digits and '_', because they "
        "become Postgres identifiers and corpus ids (e.g. 'Docs')",
        "name 'títle' contains 'í' (U+00ED): names are ASCII letters, digits and '_', because they "
        "become Postgres identifiers and corpus ids (e.g. 'title')",
        "name 'Ünïcode' contains 'Ü' (U+00DC): names are ASCII letters, digits and '_', because "
        "they become Postgres identifiers and corpus ids (e.g. 'Unicode')",
    ]


@pytest.mark.parametrize(("written", "value"), [("1e-3", 0.001), (".5", 0.5), ("5E-1", 0.5)])
def test_a_weight_written_with_an_exponent_or_without_a_leading_zero_parses(
    written: str, value: float
) -> None:
    result = check(DOCS + f"corpus C {{ documents: [a, b] relations: [cite(a, b, {written})] }}")
    assert result.diagnostics == ()
    assert result.deployment is not None
    assert result.deployment.corpora[0].relations[0].weight == value


@pytest.mark.parametrize("written", ["1e3", "-.5", "0e0", "1e-999", "1e999"])
def test_a_weight_outside_the_unit_interval_in_any_notation_gets_the_g4_message(
    written: str,
) -> None:
    assert messages(
        DOCS + f"corpus C {{ documents: [a, b] relations: [cite(a, b, {written})] }}"
    ) == [f"Corpus 'C': relation weight {written} must be in (0, 1] (G4)"]


@pytest.mark.parametrize(
    ("column", "sql"),
    [
        ("score: Float default(1e-3)", "DEFAULT 1e-3::double precision"),
        ("score: Double default(.5)", "DEFAULT .5::double precision"),
        ("score: Numeric default(-2.5)", "DEFAULT -2.5::numeric"),
    ],
)
def test_a_number_default_the_checker_accepts_is_one_the_planner_writes(
    column: str, sql: str
) -> None:
    deployment = load_deployment(f"axonstore S {{ schema {{ id: Text  {column} }} }}")
    (create, *_) = plan_stores(deployment, Catalog()).steps
    assert sql in create.sql


def unchecked(*stores: StoreDecl, corpus: str = "C") -> Deployment:
    """A Deployment built without the checker (as from an IR file)."""
    base = load_deployment(DOCS + "corpus C { documents: [a] }")
    return dataclasses.replace(
        base,
        stores=stores,
        corpora=(
            CorpusDecl(name=corpus, kind=CorpusKind.INLINE, documents=base.corpora[0].documents),
        ),
    )


@pytest.mark.parametrize(
    ("deployment", "problem"),
    [
        (unchecked(StoreDecl("S", (ColumnDecl("AXON_x", AxonType.TEXT),))), "starts with 'axon_'"),
        (unchecked(StoreDecl("S_pkey", (ColumnDecl("id", AxonType.TEXT),))), "could collide"),
        (unchecked(StoreDecl("S", (ColumnDecl("é", AxonType.TEXT),))), "is not a name"),
        (unchecked(StoreDecl("S", (ColumnDecl("c" * 64, AxonType.TEXT),))), "is 64 bytes long"),
        (
            unchecked(
                StoreDecl("S", tuple(ColumnDecl(f"c{n}", AxonType.TEXT) for n in range(1599)))
            ),
            "declares 1599 columns",
        ),
        (unchecked(corpus="C" * 201), "is 201 characters long"),
    ],
)
def test_the_planner_refuses_by_the_same_rules_an_ir_that_skipped_the_checker(
    deployment: Deployment, problem: str
) -> None:
    with pytest.raises(DeclarationRuleError, match=problem):
        plan_stores(deployment, Catalog())


def test_a_where_filter_naming_a_column_with_a_non_ascii_letter_says_what_names_are() -> None:
    with pytest.raises(UnexpectedCharacterError, match="column names are ASCII letters, digits"):
        parse_filter("títle = 'x'")


@pytest.mark.parametrize("id_column", ["changed", "edge_from", "edge_to"])
def test_a_document_id_column_named_like_a_fixed_index_keeps_its_own_index(
    id_column: str,
) -> None:
    deployment = load_deployment(
        f"axonstore S {{ schema {{ k: Text primary_key  {id_column}: Text  title: Text"
        "  f: Text  t: Text  e: Text  w: Float } }\n"
        f"corpus G from axonstore {{ documents: S({id_column}, title) relations: S(f, t, e, w) }}"
    )
    indexes = [step.sql for step in plan_stores(deployment, Catalog()).steps if "INDEX" in step.sql]
    assert any(f'("axon_tenant", "{id_column}")' in sql for sql in indexes)
    assert len({sql.split('"')[1] for sql in indexes}) == len(indexes)
