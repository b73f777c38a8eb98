"""Binary COPY decoding, load SQL, and reinforcement batches (pure)."""

from __future__ import annotations

import random
import struct
import uuid

import numpy as np
import pytest
from mnemo_axon.compiler import load_deployment
from mnemo_store import EdgeDelta, LoadLimits, RowLimitExceededError, StoreCorpus, loading
from mnemo_store.binary_copy import CopyFormatError, FixedRowStream, fixed_rows
from mnemo_store.loading import (
    DocumentColumns,
    EdgeColumns,
    GraphArrays,
    KeyKind,
    decode_documents,
    edge_layout,
    edges_from_columns,
    load_queries,
)
from mnemo_store.reinforcement import batch, reinforcement_sql
from mnemo_store.scope import Scope, compile_scope, positional
from mnemo_store.text_copy import text_columns


def decode_edges(
    corpus: StoreCorpus,
    kind: KeyKind,
    docs: DocumentColumns,
    data: bytes | bytearray,
    limits: LoadLimits,
    revision: int,
) -> GraphArrays:
    """The graph from decoded documents and one whole edges COPY stream (the loader feeds the
    same columns chunk by chunk)."""
    edges = EdgeColumns(kind)
    edges.add(fixed_rows(data, edge_layout(kind)))
    return edges_from_columns(corpus, kind, docs, edges, limits, revision)


HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
TRAILER = struct.pack(">h", -1)

CORPUS = StoreCorpus.from_deployment(
    load_deployment(
        """
axonstore D { backend: postgresql schema { id: Uuid primary_key  sub: Uuid  title: Text  body: Text } }
axonstore E { backend: postgresql schema { a: Uuid not_null  b: Uuid not_null  t: Text  w: Float  sub: Uuid } }
corpus G from axonstore { documents: D(id, title, body)  relations: E(a, b, t, w) }
""",
        "t.axon",
    ),
    "G",
)


def row(*fields: bytes | None) -> bytes:
    out = struct.pack(">h", len(fields))
    for field in fields:
        out += struct.pack(">i", -1) if field is None else struct.pack(">i", len(field)) + field
    return out


def text_rows(*rows: tuple[str | None, ...]) -> bytes:
    """A text COPY stream (the format the documents are read in)."""

    def field(value: str | None) -> str:
        if value is None:
            return "\\N"
        return (
            value.replace("\\", "\\\\")
            .replace("\t", "\\t")
            .replace("\n", "\\n")
            .replace("\r", "\\r")
        )

    return "".join("\t".join(map(field, row)) + "\n" for row in rows).encode("utf-8")


def test_fixed_rows_decode_in_one_array_and_refuse_a_null_or_wrong_width() -> None:
    data = HEADER + row(struct.pack(">i", 7), struct.pack(">d", 0.5)) + TRAILER
    rows = fixed_rows(data, [("k", ">i4"), ("w", ">f8")])
    assert rows["k"].tolist() == [7]
    assert rows["w"].tolist() == [0.5]
    with pytest.raises(CopyFormatError):
        fixed_rows(
            HEADER + row(None, struct.pack(">d", 0.5)) + TRAILER, [("k", ">i4"), ("w", ">f8")]
        )
    with pytest.raises(CopyFormatError, match="signature"):
        fixed_rows(b"nope" * 10, [("k", ">i4")])


def test_a_stream_decoded_chunk_by_chunk_equals_the_whole_stream_decoded_at_once() -> None:
    columns = [("k", ">i4"), ("w", ">f8")]
    data = (
        HEADER
        + b"".join(row(struct.pack(">i", k), struct.pack(">d", k / 4)) for k in range(9))
        + TRAILER
    )
    whole = fixed_rows(data, columns)
    for size in (1, 2, 5, 18, 19, 20, 23, len(data)):
        blocks: list[np.ndarray] = []
        stream = FixedRowStream(columns, blocks.append, block_bytes=1)
        for start in range(0, len(data), size):
            stream.feed(data[start : start + size])
        stream.finish()
        assert stream.rows == 9
        assert np.array_equal(np.concatenate(blocks), whole)
    for broken in (data[:-1], data[:-3], data[:15], HEADER + row(None, b"x" * 8) + TRAILER):
        stream = FixedRowStream(columns, lambda rows: None)
        with pytest.raises(CopyFormatError):
            stream.feed(broken)
            stream.finish()


def test_documents_and_edges_decode_into_positions_in_document_order() -> None:
    ids = sorted(uuid.uuid4() for _ in range(3))
    docs = text_rows(*((str(doc), f"t{k}", None) for k, doc in enumerate(ids)))
    stranger = uuid.uuid4()
    edges = (
        HEADER
        + b"".join(
            row(
                a.bytes,
                b.bytes,
                struct.pack(">h", 0),
                struct.pack(">h", code),
                struct.pack(">d", w),
            )
            for a, b, code, w in [(ids[0], ids[2], 0, 0.5), (ids[1], stranger, 2, 1.0)]
        )
        + TRAILER
    )
    limits = LoadLimits()
    columns = decode_documents(CORPUS, KeyKind.UUID, docs, limits)
    graph = decode_edges(CORPUS, KeyKind.UUID, columns, edges, limits, revision=4)
    assert graph.ids == [str(doc) for doc in ids]
    assert graph.titles == ["t0", "t1", "t2"]
    assert graph.edge_source.tolist() == [0, 1]
    assert graph.edge_target.tolist() == [2, -1]
    assert graph.edge_type.tolist() == [0, 2]
    assert graph.revision == 4
    with pytest.raises(RowLimitExceededError):
        decode_documents(CORPUS, KeyKind.UUID, docs, LoadLimits(max_documents=2))
    flagged = decode_documents(
        CORPUS, KeyKind.UUID, docs, LoadLimits(max_documents=2, on_exceed="flag")
    )
    assert flagged.truncated
    assert len(flagged.ids) == 2


def test_edges_matched_while_they_stream_equal_edges_matched_at_the_end() -> None:
    ids = sorted(uuid.uuid4() for _ in range(4))
    docs = decode_documents(
        CORPUS, KeyKind.UUID, text_rows(*((str(d), "t", None) for d in ids)), LoadLimits()
    )
    pairs = [(0, 3), (2, 1), (1, 1), (3, 0), (2, 2)]
    stranger = uuid.uuid4()
    rows = [
        row(ids[a].bytes, (ids[b] if k % 2 else stranger).bytes, struct.pack(">h", 0))
        + struct.pack(">i", 2)
        + struct.pack(">h", k)
        + struct.pack(">i", 8)
        + struct.pack(">d", k / 8)
        for k, (a, b) in enumerate(pairs)
    ]
    rows = [struct.pack(">h", 5) + r[2:] for r in rows]  # five fields a row
    data = HEADER + b"".join(rows) + TRAILER
    whole = decode_edges(CORPUS, KeyKind.UUID, docs, data, LoadLimits(), 0)
    for attach_after in range(len(rows) + 1):
        edges = EdgeColumns(KeyKind.UUID)
        stream = FixedRowStream(edge_layout(KeyKind.UUID), edges.add, block_bytes=1)
        stream.feed(HEADER)
        for k, one in enumerate(rows):
            if k == attach_after:
                edges.attach(docs)
            stream.feed(one)
        stream.feed(TRAILER)
        stream.finish()
        graph = edges_from_columns(CORPUS, KeyKind.UUID, docs, edges, LoadLimits(), 0)
        for name in ("edge_source", "edge_target", "edge_type", "edge_weight"):
            assert np.array_equal(getattr(graph, name), getattr(whole, name)), name
    assert whole.edge_target.tolist() == [-1, 1, -1, 0, -1]


def test_uuids_sharing_their_first_half_still_map_exactly() -> None:
    ids = [uuid.UUID(int=k) for k in (1, 2, 3)]  # identical first 8 bytes
    docs = text_rows(*((str(doc), "t", None) for doc in ids))
    edges = (
        HEADER
        + row(
            ids[2].bytes,
            ids[1].bytes,
            struct.pack(">h", 0),
            struct.pack(">h", 0),
            struct.pack(">d", 0.5),
        )
        + TRAILER
    )
    columns = decode_documents(CORPUS, KeyKind.UUID, docs, LoadLimits())
    graph = decode_edges(CORPUS, KeyKind.UUID, columns, edges, LoadLimits(), 0)
    assert (graph.edge_source.tolist(), graph.edge_target.tolist()) == ([2], [1])
    assert np.array_equal(graph.edge_weight, [0.5])


def test_text_columns_split_in_one_pass_and_undo_every_escape_copy_writes() -> None:
    awkward = "tab\there\nnew line \\N back\\slash\r ü"
    data = text_rows(("a", awkward, None), ("b", "", "\\"))
    assert b"\\t" in data  # the tab really is escaped in the stream
    for block_bytes in (1, 7, len(data) - 1, 1 << 21):  # split a block of rows at a time
        assert text_columns(data, 3, block_bytes=block_bytes) == [
            ["a", "b"],
            [awkward, ""],
            [None, "\\"],
        ]
    assert text_columns(b"", 2) == [[], []]
    with pytest.raises(CopyFormatError, match="whole number"):
        text_columns(b"a\tb\n", 3)
    with pytest.raises(CopyFormatError, match="cut short"):
        text_columns(b"a\tb", 2)


def test_unordered_documents_are_sorted_by_key_exactly_as_postgres_orders_them() -> None:
    rng = random.Random(5)
    uuids = [str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(300)]
    uuids += [str(uuid.UUID(int=(7 << 64) + k)) for k in (3, 1, 2)]  # shared first halves
    integers = [str(rng.randrange(-(10**6), 10**6)) for _ in range(300)] + ["10", "9", "-1", "0"]
    for kind, ids in ((KeyKind.UUID, uuids), (KeyKind.INT8, integers)):
        shuffled = [*ids, None, None]
        rng.shuffle(shuffled)
        rows = [(doc, f"t {doc}", None if k % 3 else f"b\\{doc}") for k, doc in enumerate(shuffled)]
        data = text_rows(*rows)
        expected = sorted(
            (row for row in rows if row[0] is not None), key=lambda row: str(row[0]).encode()
        )
        columns = decode_documents(CORPUS, kind, data, LoadLimits(), ordered=False)
        assert columns.ids == [row[0] for row in expected]
        assert columns.titles == [row[1] for row in expected]
        assert columns.bodies == [row[2] for row in expected]
        assert columns.without_id == 2
        in_order = text_rows(*expected, (None, "x", None), (None, "y", None))
        assert columns.keys == decode_documents(CORPUS, kind, in_order, LoadLimits()).keys
        with pytest.raises(RowLimitExceededError):
            decode_documents(CORPUS, kind, data, LoadLimits(max_documents=5), ordered=False)
        with pytest.raises(loading._UnorderedOverLimitError):  # read again, in order
            decode_documents(
                CORPUS, kind, data, LoadLimits(max_documents=5, on_exceed="flag"), ordered=False
            )


def test_documents_keep_null_bodies_and_count_documents_without_an_id() -> None:
    ids = sorted(str(uuid.uuid4()) for _ in range(2))
    docs = text_rows((ids[0], "one", "body"), (ids[1], "two", None), (None, "lost", None))
    columns = decode_documents(CORPUS, KeyKind.UUID, docs, LoadLimits())
    assert columns.ids == ids
    assert columns.titles == ["one", "two"]
    assert columns.bodies == ["body", None]
    assert columns.without_id == 1
    assert columns.keys == b"".join(uuid.UUID(doc).bytes for doc in ids)


def test_the_load_queries_apply_one_scope_to_both_stores_and_order_documents_by_id() -> None:
    scope = compile_scope(Scope("sub = '${s}'", {"s": str(uuid.uuid4())}), CORPUS)
    queries = load_queries(CORPUS, scope, LoadLimits(max_documents=10, max_edges=20))
    assert queries.key is KeyKind.UUID
    # Uuid keys are put in order by the decoder; Postgres orders them only past a limit.
    assert queries.documents.endswith('WHERE "sub" = $1::uuid LIMIT 11')
    assert queries.ordered_documents is not None
    assert 'WHERE "sub" = $1::uuid ORDER BY d."id" NULLS LAST LIMIT 11' in queries.ordered_documents
    assert 'WHERE "sub" = $1::uuid LIMIT 21' in queries.edges
    assert 'coalesce(e."a"' not in queries.edges  # declared NOT NULL: no NULL handling
    assert "coalesce(e.\"w\"::float8, 'NaN'::float8)" in queries.edges  # nullable weight
    assert len(queries.params) == 1
    assert queries.edge_params == queries.params


def test_a_reinforcement_batch_sums_duplicates_sorts_keys_and_drops_zero_moves() -> None:
    rows = batch(
        [
            EdgeDelta("b", "c", "cite", 0.25),
            EdgeDelta("a", "b", "cite", 0.5),
            EdgeDelta("b", "c", "cite", 0.25),
            EdgeDelta("x", "y", "cite", 0.0),
        ]
    )
    assert (rows.sources, rows.targets, rows.deltas) == (["a", "b"], ["b", "c"], [0.5, 0.5])
    with pytest.raises(ValueError, match="delta"):
        batch([EdgeDelta("a", "b", "cite", float("nan"))])


def test_the_reinforcement_statement_clamps_locks_in_key_order_and_carries_the_scope() -> None:
    scope = compile_scope(Scope("sub = '${s}'", {"s": str(uuid.uuid4())}), CORPUS)
    rows = batch([EdgeDelta("a", "b", "cite", 0.5)])
    sql, params = positional(
        reinforcement_sql(CORPUS, scope),
        scope,
        sources=rows.sources,
        targets=rows.targets,
        etypes=rows.etypes,
        deltas=rows.deltas,
    )
    assert params[:4] == (["a"], ["b"], ["cite"], [0.5])
    assert params[4:] == tuple(scope.binds.values())
    assert 'LEAST(GREATEST(e."w" + d.axon_delta, 0.001), 1.0)' in sql
    assert 'ORDER BY l."a", l."b", l."t", l."axon_row_id" FOR UPDATE OF l' in sql
    assert sql.count('"sub" = $5::uuid') == 2  # the lock and the update see the same scope
