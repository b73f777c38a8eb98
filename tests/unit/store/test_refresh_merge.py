"""A refresh's merge of changed rows equals the rows a full load of the result would give."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mnemo_mdn.graph import ids_in_order
from mnemo_store import refresh
from mnemo_store.loading import GraphArrays, LoadLimits
from mnemo_store.refresh import ChangedDocument, ChangedEdges, GraphRows, merge

Docs = dict[str, tuple[str, str | None]]
Edges = dict[int, tuple[str, str, int, float]]

document_ids = st.sampled_from([f"d{k:02d}" for k in range(30)])
texts = st.tuples(st.sampled_from(["a", "b c", "é"]), st.none() | st.sampled_from(["x", "y z"]))
corpora = st.dictionaries(document_ids, texts, max_size=20)


def rows_of(docs: Docs, edges: Edges) -> GraphRows:
    ids = sorted(docs)
    position = {doc_id: k for k, doc_id in enumerate(ids)}
    keys = sorted(edges)
    arrays = GraphArrays(
        corpus="c",
        revision=1,
        ids=ids,
        titles=[docs[i][0] for i in ids],
        bodies=[docs[i][1] for i in ids],
        edge_source=np.array([position.get(edges[k][0], -1) for k in keys], dtype=np.int64),
        edge_target=np.array([position.get(edges[k][1], -1) for k in keys], dtype=np.int64),
        edge_type=np.array([edges[k][2] for k in keys], dtype=np.int8),
        edge_weight=np.array([edges[k][3] for k in keys], dtype=np.float64),
        edge_key=np.array(keys, dtype=np.int64),
    )
    rows = GraphRows.from_arrays(arrays, "1:1:", 0)
    assert rows is not None
    return rows


def described(rows: GraphRows) -> tuple[object, ...]:
    def name(k: int) -> str | None:
        return rows.ids[k] if k >= 0 else None

    edges = [
        (key, name(s), name(t), c, w)
        for key, s, t, c, w in zip(
            rows.edge_key.tolist(),
            rows.edge_source.tolist(),
            rows.edge_target.tolist(),
            rows.edge_type.tolist(),
            rows.edge_weight.tolist(),
            strict=True,
        )
    ]
    bodies = list(rows.bodies) if rows.bodies is not None else None
    return list(rows.ids), list(rows.titles), bodies, edges


@pytest.mark.parametrize("in_place", [0, 64])
@settings(max_examples=150, deadline=None)
@given(
    corpora,
    st.dictionaries(document_ids, st.tuples(texts, st.booleans()), max_size=12),
    st.lists(st.tuples(st.integers(0, 40), st.booleans()), max_size=8),
)
def test_a_merge_equals_the_rows_of_the_changed_corpus(
    in_place: int,
    old: Docs,
    document_changes: dict[str, tuple[tuple[str, str | None], bool]],
    edge_changes: list[tuple[int, bool]],
) -> None:
    # One changed row per document (the changed rows' query reads each row once).
    ids = sorted(old) or ["d00"]
    old_edges: Edges = {
        key: (ids[key % len(ids)], ids[(key * 7) % len(ids)], key % 5, 0.5)
        for key in range(0, 40, 3)
        if old
    }
    new, changed = dict(old), []
    for doc_id, (text, in_scope) in document_changes.items():
        changed.append(ChangedDocument(doc_id, text[0], text[1], in_scope))
        if in_scope:
            new[doc_id] = text
        else:
            new.pop(doc_id, None)
    new_ids = sorted(new) or ["d00"]
    new_edges, edge_rows = dict(old_edges), {}
    for key, in_scope in edge_changes:
        row = (key, new_ids[key % len(new_ids)], new_ids[(key * 5) % len(new_ids)], key % 4, 0.25)
        edge_rows[key] = (*row, in_scope)
        if in_scope:
            new_edges[key] = row[1:]
        else:
            new_edges.pop(key, None)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(refresh, "_SPLICED_IN_PLACE", in_place)
        merged = merge(
            rows_of(old, old_edges),
            changed,
            ChangedEdges.of(list(edge_rows.values())),
            snapshot="2:2:",
            revision=2,
            reset_revision=0,
            limits=LoadLimits(),
        )
    assert merged is not None
    assert described(merged) == described(rows_of(new, new_edges))
    assert merged.ascending
    assert ids_in_order(merged.ids)


def test_a_load_read_out_of_key_order_is_sorted_and_a_repeated_key_is_no_key() -> None:
    def arrays(keys: list[int]) -> GraphArrays:
        return GraphArrays(
            corpus="c",
            revision=1,
            ids=["a", "b"],
            titles=["a", "b"],
            bodies=None,
            edge_source=np.array([0, 1, 0], dtype=np.int64),
            edge_target=np.array([1, 0, 0], dtype=np.int64),
            edge_type=np.array([0, 1, 2], dtype=np.int8),
            edge_weight=np.array([0.1, 0.2, 0.3]),
            edge_key=np.array(keys, dtype=np.int64),
        )

    shuffled = GraphRows.from_arrays(arrays([7, 3, 5]), "1:1:", 0)
    assert shuffled is not None
    assert shuffled.edge_key.tolist() == [3, 5, 7]
    assert shuffled.edge_type.tolist() == [1, 2, 0]
    assert shuffled.edge_weight.tolist() == [0.2, 0.3, 0.1]
    in_order = GraphRows.from_arrays(arrays([3, 5, 7]), "1:1:", 0)
    assert in_order is not None
    assert in_order.edge_type.tolist() == [0, 1, 2]
    assert GraphRows.from_arrays(arrays([3, 5, 3]), "1:1:", 0) is None
