"""One home for the check of a row written to a store through a service: the store's column rules,
then, for each corpus reading the store as its edges, G3 (the type is in the relation catalog) and
G4 (`0 < weight <= 1`). Ingest dead-letters its message and the navigator answers 422 with it."""

from __future__ import annotations

from decimal import Decimal

import pytest
from mnemo_axon.column_types import AxonType
from mnemo_axon.ir import RELATION_CATALOG, ColumnDecl, StoreDecl
from mnemo_axon.row_values import InvalidRowError, check_store_row

EDGES = StoreDecl(
    name="Links",
    columns=(
        ColumnDecl("src", AxonType.TEXT, not_null=True),
        ColumnDecl("dst", AxonType.TEXT, not_null=True),
        ColumnDecl("kind", AxonType.TEXT, not_null=True),
        ColumnDecl("w", AxonType.FLOAT),
        ColumnDecl("alt_kind", AxonType.TEXT),
        ColumnDecl("alt_w", AxonType.NUMERIC),
    ),
)
EDGE = ("kind", "w")
ROW = {"src": "a", "dst": "b", "kind": "cite", "w": 0.5}


def test_a_good_edge_row_comes_back_checked_in_store_order() -> None:
    assert check_store_row(EDGES, {"w": 1, "kind": "cite", "dst": "b", "src": "a"}, [EDGE]) == {
        "src": "a",
        "dst": "b",
        "kind": "cite",
        "w": 1.0,
    }


def test_a_type_outside_the_catalog_is_refused_naming_it_and_the_catalog() -> None:
    with pytest.raises(InvalidRowError) as refused:
        check_store_row(EDGES, {**ROW, "kind": "hugs"}, [EDGE])
    assert str(refused.value) == (
        f"edge type 'hugs' is not in the relation catalog (G3); use one of "
        f"{', '.join(RELATION_CATALOG)}"
    )


@pytest.mark.parametrize(
    ("weight", "shown"), [(0, "0.0"), (1.5, "1.5"), (-0.1, "-0.1"), (None, "None")]
)
def test_a_weight_outside_zero_to_one_is_refused_naming_it(weight: object, shown: str) -> None:
    with pytest.raises(InvalidRowError) as refused:
        check_store_row(EDGES, {**ROW, "w": weight}, [EDGE])
    assert str(refused.value) == f"edge weight {shown} is outside (0, 1] (G4)"


@pytest.mark.parametrize("weight", [1, 1.0, 1e-9, "0.25", Decimal("0.75")])
def test_a_weight_in_zero_to_one_is_taken(weight: object) -> None:
    check_store_row(EDGES, {**ROW, "w": weight}, [EDGE])


def test_the_column_rules_come_before_the_graph_rules() -> None:
    with pytest.raises(InvalidRowError, match="column 'w'"):
        check_store_row(EDGES, {**ROW, "kind": "hugs", "w": "heavy"}, [EDGE])
    with pytest.raises(InvalidRowError, match="has no column 'colour'"):
        check_store_row(EDGES, {**ROW, "kind": "hugs", "colour": "red"}, [EDGE])


def test_every_corpus_reading_the_store_as_its_edges_checks_its_own_columns() -> None:
    row = {**ROW, "alt_kind": "supersede", "alt_w": "0.5"}
    assert check_store_row(EDGES, row, [EDGE, ("alt_kind", "alt_w")])["alt_w"] == Decimal("0.5")
    with pytest.raises(InvalidRowError, match=r"edge weight Decimal\('2'\) is outside"):
        check_store_row(EDGES, {**row, "alt_w": 2}, [EDGE, ("alt_kind", "alt_w")])
    with pytest.raises(InvalidRowError, match="edge type None is not in the relation catalog"):
        check_store_row(EDGES, ROW, [EDGE, ("alt_kind", "alt_w")])


def test_a_store_no_corpus_reads_as_edges_gets_the_column_rules_only() -> None:
    assert check_store_row(EDGES, {**ROW, "kind": "hugs", "w": 7}) == {
        **ROW,
        "kind": "hugs",
        "w": 7.0,
    }
