"""Store DDL from the IR (pure): what a new store gets, what an existing one may and may not get."""

from __future__ import annotations

import dataclasses

import pytest
from mnemo_axon.column_types import AxonType
from mnemo_axon.compiler import load_deployment
from mnemo_axon.ir import ColumnDecl, Deployment, StoreDecl
from mnemo_store import ReservedColumnError
from mnemo_store.ddl import (
    Catalog,
    ExistingColumn,
    ExistingStore,
    fulltext_column,
    plan_stores,
)
from mnemo_store.identifiers import object_name
from mnemo_store.title_keys import alias_key_column, title_key_column

FULLTEXT = fulltext_column("title", "body")
FULLTEXT_INDEX = object_name("Docs", FULLTEXT)
TITLE_KEY, ALIAS_KEY = title_key_column("title"), alias_key_column("title")
KEY_INDEXES = {object_name("Docs", TITLE_KEY), object_name("Docs", ALIAS_KEY)}
DECLARATIONS = """
axonstore Docs { backend: postgresql
    schema { id: Uuid primary_key  sub: Uuid not_null  title: Text  body: Text  slug: Text unique
             made: Timestamptz default(now())  note: Text default("it's") } }
axonstore Edges { backend: postgresql
    schema { from_id: Uuid  to_id: Uuid  etype: Text  weight: Float } }
corpus Graph from axonstore {
    documents: Docs(id, title, body)
    relations: Edges(from_id, to_id, etype, weight)
}
"""


def deployment(text: str = DECLARATIONS) -> Deployment:
    return load_deployment(text, "test.axon")


def existing_docs(**changes: object) -> ExistingStore:
    columns = (
        ExistingColumn("axon_tenant", "uuid", True),
        ExistingColumn("id", "uuid", True),
        ExistingColumn("sub", "uuid", True),
        ExistingColumn("title", "text", False),
        ExistingColumn("body", "text", False),
        ExistingColumn("slug", "text", False),
        ExistingColumn("made", "timestamp with time zone", False),
        ExistingColumn("note", "text", False),
        ExistingColumn("axon_changed", "xid8", True),
        ExistingColumn(FULLTEXT, "tsvector", False),
        ExistingColumn(TITLE_KEY, "text", False),
        ExistingColumn(ALIAS_KEY, "text", False),
    )
    values: dict[str, object] = {
        "name": "Docs",
        "columns": columns,
        "primary_key": ("axon_tenant", "id"),
        "unique": frozenset({("axon_tenant", "slug")}),
        "indexes": frozenset(
            {FULLTEXT_INDEX, "Docs_pkey", "Docs__slug_key", "Docs__changed_idx", *KEY_INDEXES}
        ),
        "revision_corpora": ("Graph",),
        "reset_corpora": ("Graph",),
        "truncate_corpora": ("Graph",),
    }
    values.update(changes)
    return ExistingStore(**values)  # type: ignore[arg-type]  # test data built from a dict


def test_a_new_store_gets_a_tenant_led_key_forced_rls_grants_indexes_and_a_revision_trigger() -> (
    None
):
    plan = plan_stores(deployment(), Catalog())
    sql = "\n".join(step.sql for step in plan.steps)
    assert plan.refused == ()
    assert 'PRIMARY KEY ("axon_tenant", "id")' in sql
    assert 'UNIQUE ("axon_tenant", "slug")' in sql
    assert '"axon_row_id" bigint GENERATED ALWAYS AS IDENTITY' in sql  # Edges declares no key
    assert 'PRIMARY KEY ("axon_tenant", "axon_row_id")' in sql
    assert "mnemo.enable_tenant_rls('axon_stores.\"Docs\"'::regclass)" in sql
    assert 'GRANT SELECT, INSERT, UPDATE ON "axon_stores"."Docs" TO mnemo_app' in sql
    assert not [line for line in sql.splitlines() if "GRANT" in line and "DELETE" in line]
    assert f'USING gin ("axon_tenant", "{FULLTEXT}")' in sql
    assert (
        f"\"{FULLTEXT}\" tsvector GENERATED ALWAYS AS (to_tsvector('simple'::regconfig,"
        """ coalesce("title"::text, '') || ' ' || coalesce("body"::text, ''))) STORED"""
    ) in sql
    assert '("axon_tenant", "from_id", "to_id", "etype")' in sql
    assert '("axon_tenant", "to_id")' in sql
    assert "mnemo.bump_graph_revision('Graph')" in sql
    assert "DEFAULT 'it''s'::text" in sql
    assert "DEFAULT now()" in sql


def test_planning_what_already_exists_plans_nothing() -> None:
    plan = plan_stores(deployment(), Catalog({"Docs": existing_docs()}))
    assert [step.description for step in plan.steps if "Docs" in step.sql] == []
    assert plan.refused == ()


def test_every_new_store_gets_an_indexed_change_marker_and_the_reset_triggers() -> None:
    plan = plan_stores(deployment(), Catalog())
    sql = "\n".join(step.sql for step in plan.steps)
    assert '"axon_changed" xid8 NOT NULL DEFAULT pg_current_xact_id()' in sql
    assert 'ON "axon_stores"."Docs" ("axon_tenant", "axon_changed")' in sql
    assert 'ON "axon_stores"."Edges" ("axon_tenant", "axon_changed")' in sql
    assert sql.count("EXECUTE FUNCTION mnemo.mark_row_change()") == 2
    assert (
        'AFTER DELETE ON "axon_stores"."Docs" REFERENCING OLD TABLE AS axon_gone FOR EACH STATEMENT'
        " EXECUTE FUNCTION mnemo.reset_deleted_graph_revision('Graph')"
    ) in sql
    assert (
        'BEFORE TRUNCATE ON "axon_stores"."Docs" FOR EACH STATEMENT'
        " EXECUTE FUNCTION mnemo.truncate_graph_revision('Graph')"
    ) in sql
    assert "TRUNCATE ON" not in sql.replace("BEFORE TRUNCATE ON", "")
    # Documents are identified by their id, edges (no declared key) by the hidden row id.
    assert 'WHEN (ROW(OLD."id") IS DISTINCT FROM ROW(NEW."id"))' in sql
    assert 'WHEN (ROW(OLD."axon_row_id") IS DISTINCT FROM ROW(NEW."axon_row_id"))' in sql


def test_an_existing_store_without_a_change_marker_gets_one_additively() -> None:
    columns = tuple(c for c in existing_docs().columns if c.name != "axon_changed")
    store = existing_docs(
        columns=columns,
        indexes=frozenset({FULLTEXT_INDEX, "Docs_pkey", "Docs__slug_key"}),
        has_change_trigger=False,
        reset_corpora=None,
    )
    plan = plan_stores(deployment(), Catalog({"Docs": store}))
    docs = [step for step in plan.steps if '"Docs"' in step.sql]
    assert plan.refused == ()
    assert any('ADD COLUMN "axon_changed" xid8' in step.sql for step in docs)
    assert any("mark_row_change" in step.sql for step in docs)
    assert sum("reset_graph_revision('Graph')" in step.sql for step in docs) == 1
    assert sum("reset_deleted_graph_revision('Graph')" in step.sql for step in docs) == 1
    assert sum("truncate_graph_revision('Graph')" in step.sql for step in docs) == 1


def test_a_store_applied_before_the_truncate_trigger_gets_it_and_the_reset_over_deleted_rows() -> (
    None
):
    plan = plan_stores(deployment(), Catalog({"Docs": existing_docs(truncate_corpora=None)}))
    docs = [step.sql for step in plan.steps if '"Docs"' in step.sql]
    assert docs[0] == 'DROP TRIGGER IF EXISTS axon_graph_reset ON "axon_stores"."Docs"'
    assert any("REFERENCING OLD TABLE AS axon_gone" in sql for sql in docs)
    assert any("BEFORE TRUNCATE" in sql for sql in docs)
    assert plan.refused == ()


def test_a_new_nullable_column_is_added_and_a_missing_index_or_policy_restored() -> None:
    columns = tuple(c for c in existing_docs().columns if c.name != "note")
    plan = plan_stores(
        deployment(),
        Catalog({"Docs": existing_docs(columns=columns, indexes=frozenset(), rls_forced=False)}),
    )
    docs = [step.sql for step in plan.steps if '"Docs"' in step.sql]
    assert (
        'ALTER TABLE "axon_stores"."Docs" ADD COLUMN "note" text DEFAULT \'it\'\'s\'::text' in docs
    )
    assert any("enable_tenant_rls" in sql for sql in docs)
    assert any(FULLTEXT_INDEX in sql for sql in docs)


@pytest.mark.parametrize(
    ("existing", "refusal"),
    [
        (
            existing_docs(columns=(*existing_docs().columns, ExistingColumn("old", "text", False))),
            'DROP COLUMN "old"',
        ),
        (
            existing_docs(
                columns=tuple(
                    ExistingColumn(c.name, "date", c.not_null) if c.name == "made" else c
                    for c in existing_docs().columns
                )
            ),
            'ALTER COLUMN "made" TYPE timestamptz',
        ),
        (
            existing_docs(
                columns=tuple(
                    ExistingColumn(c.name, c.type, False) if c.name == "sub" else c
                    for c in existing_docs().columns
                )
            ),
            'ALTER COLUMN "sub" SET NOT NULL',
        ),
        (existing_docs(primary_key=("axon_tenant", "slug")), "ADD PRIMARY KEY"),
        (existing_docs(unique=frozenset()), 'ADD UNIQUE ("axon_tenant", "slug")'),
    ],
)
def test_a_destructive_change_is_refused_with_the_statement_it_would_need(
    existing: ExistingStore, refusal: str
) -> None:
    plan = plan_stores(deployment(), Catalog({"Docs": existing}))
    assert any(refusal in line for line in plan.refused), plan.refused


def test_a_new_not_null_column_without_default_is_refused() -> None:
    text = DECLARATIONS.replace('note: Text default("it\'s")', "note: Text not_null")
    columns = tuple(c for c in existing_docs().columns if c.name != "note")
    plan = plan_stores(deployment(text), Catalog({"Docs": existing_docs(columns=columns)}))
    assert any("NOT NULL without a default" in line for line in plan.refused)


def test_a_corpus_reading_an_existing_store_updates_its_revision_trigger() -> None:
    plan = plan_stores(
        deployment(),
        Catalog({"Docs": existing_docs(revision_corpora=("Old",))}),
        {"Docs": ("Graph", "Old"), "Edges": ("Graph",)},
    )
    assert any("bump_graph_revision('Graph', 'Old')" in step.sql for step in plan.steps)


def test_columns_named_like_the_hidden_ones_are_refused() -> None:
    # The checker refuses them first (tests/unit/axon); this is the store's own second line, for
    # a Deployment that did not come through the checker (an IR file, a caller's own).
    hidden = StoreDecl("S", (ColumnDecl("AXON_other", AxonType.UUID),))
    unchecked = dataclasses.replace(
        deployment("axonstore S { schema { ok: Uuid } }"), stores=(hidden,)
    )
    with pytest.raises(ReservedColumnError, match="reserves"):
        plan_stores(unchecked, Catalog())


def test_long_object_names_are_shortened_without_colliding() -> None:
    first, second = object_name("S" * 60, "edge_from_idx"), object_name("S" * 60, "edge_to_idx")
    assert len(first.encode()) <= 63
    assert len(second.encode()) <= 63
    assert first != second


def test_the_full_text_column_is_named_by_its_mapping_and_hidden_from_column_checks() -> None:
    assert fulltext_column("title", "body") == FULLTEXT
    assert FULLTEXT.startswith("axon_fulltext_")
    assert len({FULLTEXT, fulltext_column("title", None), fulltext_column("body", "title")}) == 3
    # An existing store holding the column: no refusal ("dropped column"), nothing to add.
    plan = plan_stores(deployment(), Catalog({"Docs": existing_docs()}))
    assert plan.refused == ()
    assert not [step for step in plan.steps if FULLTEXT in step.sql]


def test_an_existing_documents_store_without_the_full_text_column_gets_it_and_its_index() -> None:
    columns = tuple(c for c in existing_docs().columns if c.name != FULLTEXT)
    store = existing_docs(
        columns=columns, indexes=frozenset({"Docs__fulltext", "Docs_pkey", "Docs__slug_key"})
    )
    plan = plan_stores(deployment(), Catalog({"Docs": store}))
    docs = [step.sql for step in plan.steps if '"Docs"' in step.sql]
    assert plan.refused == ()
    added = [sql for sql in docs if f'ADD COLUMN "{FULLTEXT}" tsvector GENERATED ALWAYS' in sql]
    assert len(added) == 1
    indexed = [i for i, sql in enumerate(docs) if f'USING gin ("axon_tenant", "{FULLTEXT}")' in sql]
    assert indexed
    assert docs.index(added[0]) < indexed[0]


def test_a_new_documents_store_gets_its_title_and_alias_keys_stored_and_b_tree_indexed() -> None:
    sql = "\n".join(step.sql for step in plan_stores(deployment(), Catalog()).steps)
    for column in (TITLE_KEY, ALIAS_KEY):
        assert f'"{column}" text GENERATED ALWAYS AS (CASE WHEN octet_length(lower(' in sql
        assert f'ON "axon_stores"."Docs" ("axon_tenant", "{column}")' in sql
    assert TITLE_KEY.startswith("axon_title_key_")
    assert ALIAS_KEY.startswith("axon_alias_key_")
    assert not [line for line in sql.splitlines() if '"Edges"' in line and "axon_title_key" in line]


def test_an_existing_documents_store_without_the_key_columns_gets_them_then_their_indexes() -> None:
    columns = tuple(c for c in existing_docs().columns if c.name not in (TITLE_KEY, ALIAS_KEY))
    store = existing_docs(
        columns=columns, indexes=frozenset({FULLTEXT_INDEX, "Docs_pkey", "Docs__slug_key"})
    )
    plan = plan_stores(deployment(), Catalog({"Docs": store}))
    docs = [step.sql for step in plan.steps if '"Docs"' in step.sql]
    assert plan.refused == ()
    for column in (TITLE_KEY, ALIAS_KEY):
        added = [sql for sql in docs if f'ADD COLUMN "{column}" text GENERATED ALWAYS' in sql]
        indexed = [sql for sql in docs if f'("axon_tenant", "{column}")' in sql]
        assert len(added) == len(indexed) == 1
        assert docs.index(added[0]) < docs.index(indexed[0])


def test_two_corpora_mapping_one_store_differently_get_a_column_each() -> None:
    text = (
        DECLARATIONS
        + """
corpus Slugs from axonstore {
    documents: Docs(id, slug)
    relations: Edges(from_id, to_id, etype, weight)
}
"""
    )
    sql = "\n".join(step.sql for step in plan_stores(deployment(text), Catalog()).steps)
    for column in (FULLTEXT, fulltext_column("slug", None)):
        assert f'"{column}" tsvector GENERATED ALWAYS' in sql
        assert f'USING gin ("axon_tenant", "{column}")' in sql


def test_the_navigator_may_update_only_the_weight_column_of_a_new_relations_store() -> None:
    plan = plan_stores(deployment(), Catalog())
    grants = [step.sql for step in plan.steps if "mnemo_navigator" in step.sql]
    assert grants == ['GRANT UPDATE ("weight") ON "axon_stores"."Edges" TO mnemo_navigator']


def test_an_existing_relations_store_gets_the_weight_grant_only_when_it_is_missing() -> None:
    edges = existing_docs(
        name="Edges",
        columns=(
            ExistingColumn("axon_tenant", "uuid", True),
            ExistingColumn("axon_row_id", "bigint", True),
            ExistingColumn("from_id", "uuid", False),
            ExistingColumn("to_id", "uuid", False),
            ExistingColumn("etype", "text", False),
            ExistingColumn("weight", "double precision", False),
            ExistingColumn("axon_changed", "xid8", True),
        ),
        primary_key=("axon_tenant", "axon_row_id"),
        unique=frozenset(),
        indexes=frozenset({"Edges__edge_from_idx", "Edges__edge_to_idx", "Edges__changed_idx"}),
    )
    catalog = {"Docs": existing_docs()}
    missing = plan_stores(deployment(), Catalog({**catalog, "Edges": edges}))
    assert [step.sql for step in missing.steps if "Edges" in step.sql] == [
        'GRANT UPDATE ("weight") ON "axon_stores"."Edges" TO mnemo_navigator'
    ]
    granted = dataclasses.replace(edges, navigator_updates=frozenset({"weight"}))
    present = plan_stores(deployment(), Catalog({**catalog, "Edges": granted}))
    assert [step.sql for step in present.steps if "Edges" in step.sql] == []
