"""Loading a store corpus's graph: rows in scope, straight into the arrays the engine takes.

Two COPYs inside the caller's tenant transaction (row-level security applies to the COPY of a
query; with a second connection sharing the snapshot they run at once, see `unit_of_work`):
- the documents in the text format, split into columns with one decode and one split
  (`text_copy`). Uuid and integer ids come unordered and are put in id order (ascending id as
  text, byte order) by their keys in numpy: Postgres walking the id index reads the heap in random
  order, 1.8-2.2 s of its CPU for a million documents against 0.45 s unordered;
- the edges as fixed-width binary rows, decoded block by block as they stream in
  (`binary_copy.FixedRowStream`) into compact native columns, so the stream (390 MB for 5M edges)
  is never held whole. Endpoints become document positions in numpy (`_ExactIndex`) for Uuid and
  integer ids; for other id types Postgres numbers the documents and joins.

Measured at 1M documents / 5M edges under RLS (bench/README.md): CPU of a load 8-9 s before
(client and Postgres), about 5 s after; traced peak 1.1 GB -> 0.75 GB.

A row limit never truncates silently: past it the load fails, or (when asked) the result says it
is truncated.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum
from operator import itemgetter
from typing import Any, Final, Literal, Protocol, TypeVar, cast

import numpy as np
import numpy.typing as npt
from mnemo_axon.column_types import AxonType
from mnemo_axon.ir import StoreDecl
from mnemo_mdn.graph import CorpusGraph
from mnemo_mdn.relations import RELATION_TYPES

from mnemo_store.binary_copy import CopyFormatError, FixedRowStream
from mnemo_store.errors import RowLimitExceededError
from mnemo_store.identifiers import quote, store_table
from mnemo_store.scope import CompiledScope, positional
from mnemo_store.store_corpus import StoreCorpus
from mnemo_store.text_copy import text_columns

IndexArray = npt.NDArray[np.int64]
_Key = TypeVar("_Key", bound=np.generic)
_Item = TypeVar("_Item")
# Documents permuted into id order this many at a time (see `_permuted`).
_PERMUTE_STEP: Final = 1 << 16
# Past this many keys in one bucket, `_ExactIndex` searches sorted queries instead of scanning.
_BUCKET_SCAN_LIMIT: Final = 64
_ZERO_UUID: Final = "'00000000-0000-0000-0000-000000000000'::uuid"
# A CASE over the catalog's constants: measured cheaper than array_position over 500k rows.
_TYPE_CODE_CASES: Final = " ".join(
    f"WHEN '{etype}' THEN {code}" for code, etype in enumerate(RELATION_TYPES)
)

CopyFormat = Literal["binary", "text"]
# Chunks of a COPY stream as they arrive.
CopyOutput = Callable[[bytes], None]


class CopyQuery(Protocol):
    """Runs `COPY (query) TO STDOUT (FORMAT <form>)` with bind values and returns the bytes; with
    `output`, hands it each chunk as it arrives instead (and returns nothing of the stream)."""

    def __call__(
        self,
        query: str,
        params: tuple[object, ...],
        form: CopyFormat,
        output: CopyOutput | None = None,
    ) -> Awaitable[bytes | bytearray]: ...


class KeyKind(StrEnum):
    """How edge endpoints are matched to documents."""

    UUID = "uuid"  # 16-byte keys; uuid order is the byte order of the id text
    INT8 = "int8"  # integer keys, sorted in numpy (text order differs from numeric order)
    SQL = "sql"  # any other id type: Postgres numbers the documents and joins


@dataclass(frozen=True, slots=True)
class LoadLimits:
    """How many rows a load may read; past a limit it fails, or with `on_exceed="flag"` truncates
    and says so (`GraphArrays.truncated`)."""

    max_documents: int = 2_000_000
    max_edges: int = 10_000_000
    on_exceed: Literal["fail", "flag"] = "fail"

    def __post_init__(self) -> None:
        if self.max_documents < 1 or self.max_edges < 0:
            raise ValueError("max_documents must be at least 1 and max_edges at least 0")
        if self.on_exceed not in ("fail", "flag"):
            raise ValueError(f"on_exceed must be 'fail' or 'flag', got {self.on_exceed!r}")


@dataclass(frozen=True, slots=True, eq=False)
class GraphArrays:
    """A loaded corpus graph as columns in document order, and the revision it was read at."""

    corpus: str
    revision: int
    ids: list[str]
    titles: list[str]
    bodies: list[str | None] | None
    edge_source: IndexArray  # document position, -1 when the endpoint is not a loaded document
    edge_target: IndexArray
    edge_type: npt.NDArray[np.int8]  # position in RELATION_TYPES, -1 outside the catalog
    edge_weight: npt.NDArray[np.float64]  # NaN for NULL
    truncated: bool = False
    documents_without_id: int = 0  # rows whose id is NULL: no document can be made of them
    edge_key: IndexArray | None = None  # each edge row's integer key, when the load was keyed

    @property
    def n_documents(self) -> int:
        return len(self.ids)

    @property
    def n_edges(self) -> int:
        return int(self.edge_source.shape[0])

    def to_graph(self) -> CorpusGraph:
        """The engine's graph (its read rules skip and count edges that do not fit)."""
        return self._graph(ids_ascending=False)

    def _graph(self, *, ids_ascending: bool) -> CorpusGraph:
        """The engine's graph of these columns; `ids_ascending` when the ids are known to be in
        strictly ascending order (the build then does not check it again)."""
        return CorpusGraph.from_arrays(
            self.ids,
            self.titles,
            bodies=self.bodies,
            edge_source=self.edge_source,
            edge_target=self.edge_target,
            edge_type=self.edge_type,
            edge_weight=self.edge_weight,
            order="id",
            ids_ascending=ids_ascending,
        )


@dataclass(frozen=True, slots=True)
class LoadQueries:
    """The two COPY queries of a load (documents in the text format, edges in binary) and the
    values each binds (the scope's: `params` for the documents, `edge_params` for the edges)."""

    key: KeyKind
    documents: str
    edges: str
    params: tuple[object, ...]
    edge_params: tuple[object, ...]
    keyed: bool = False  # the edge rows start with their integer row key (int8)
    # The documents in id order (NULL ids last), when `documents` leaves the order to the decoder
    # (Uuid and integer ids: numpy sorts their keys); read only when a limit truncates the load.
    ordered_documents: str | None = None


def key_kind(id_type: AxonType) -> KeyKind:
    if id_type is AxonType.UUID:
        return KeyKind.UUID
    if id_type in (AxonType.INTEGER, AxonType.BIGINT):
        return KeyKind.INT8
    return KeyKind.SQL


def load_queries(
    corpus: StoreCorpus,
    scope: CompiledScope,
    limits: LoadLimits,
    edge_key: str | None = None,
) -> LoadQueries:
    """The SQL of a load (pure: `scope` unqualified, its binds numbered by `positional`). With
    `edge_key` (an integer key column of the relations store) every edge row starts with that
    key."""
    kind = key_kind(corpus.id_type)
    doc_id = f"d.{quote(corpus.id_column)}"
    text_order = f'{doc_id}::text COLLATE "C"'
    order = doc_id if kind is KeyKind.UUID else text_order
    # The id's text is the document id; for Uuid and integer ids numpy makes binary keys of it.
    key = {KeyKind.UUID: doc_id, KeyKind.INT8: f"{doc_id}::int8", KeyKind.SQL: f"{doc_id}::text"}
    body = f", {_text(f'd.{quote(corpus.body_column)}')}" if corpus.body_column else ""
    selected = (
        f"SELECT {key[kind]}, coalesce({_text(f'd.{quote(corpus.title_column)}')}, ''){body}"
        f" FROM {store_table(corpus.documents.name)} AS d WHERE {scope.sql}"
    )
    ordered = f"{selected} ORDER BY {order} NULLS LAST LIMIT {limits.max_documents + 1}"
    # Uuid and integer keys are sorted by the decoder: Postgres walking the id index visits the
    # heap in random order (1.1 s of 1.4 s for a million documents, measured in bench/README.md).
    documents = ordered if kind is KeyKind.SQL else f"{selected} LIMIT {limits.max_documents + 1}"
    source, target = f"e.{quote(corpus.from_column)}", f"e.{quote(corpus.to_column)}"
    etype = f"e.{quote(corpus.etype_column)}::text"
    code = f"(CASE {etype} {_TYPE_CODE_CASES} ELSE -1 END)::int2"
    weight = f"e.{quote(corpus.weight_column)}::float8"
    if not _not_null(corpus.relations, quote(corpus.weight_column)):
        weight = f"coalesce({weight}, 'NaN'::float8)"
    edges_table = f"{store_table(corpus.relations.name)} AS e"
    edge_limit = f"LIMIT {limits.max_edges + 1}"
    key_column = f"e.{quote(edge_key)}::int8, " if edge_key is not None else ""
    if kind is KeyKind.SQL:
        numbered = (
            f"SELECT {doc_id} AS axon_doc_id, (row_number() OVER (ORDER BY {text_order}) - 1)::int8"
            f" AS axon_k FROM {store_table(corpus.documents.name)} AS d"
            f" WHERE {doc_id} IS NOT NULL AND {scope.sql}"
            f" ORDER BY {text_order} LIMIT {limits.max_documents + 1}"
        )
        edges = (
            f"WITH axon_docs AS ({numbered}) SELECT {key_column}"
            "coalesce(f.axon_k, -1), coalesce(t.axon_k, -1),"
            f" {code}, {weight} FROM {edges_table}"
            f" LEFT JOIN axon_docs AS f ON f.axon_doc_id = {source}"
            f" LEFT JOIN axon_docs AS t ON t.axon_doc_id = {target}"
            f" WHERE {scope.relations_sql} {edge_limit}"
        )
    else:
        cast, zero = ("", _ZERO_UUID) if kind is KeyKind.UUID else ("::int8", "0::int8")
        nullable = [
            column
            for column in (source, target)
            if not _not_null(corpus.relations, column.removeprefix("e."))
        ]
        # Declared NOT NULL endpoints need no NULL handling (the common case, and cheaper).
        ends = [
            f"coalesce({column}{cast}, {zero})" if column in nullable else f"{column}{cast}"
            for column in (source, target)
        ]
        missing = " OR ".join(f"{column} IS NULL" for column in nullable) or "false"
        edges = (
            f"SELECT {key_column}{ends[0]}, {ends[1]}, ({missing})::int::int2, {code}, {weight}"
            f" FROM {edges_table} WHERE {scope.relations_sql} {edge_limit}"
        )
    documents, params = positional(documents, scope)
    edges, edge_params = positional(edges, scope)
    return LoadQueries(
        kind,
        documents,
        edges,
        params,
        edge_params,
        keyed=edge_key is not None,
        ordered_documents=None if kind is KeyKind.SQL else positional(ordered, scope)[0],
    )


def _text(column: str) -> str:
    return f"{column}::text"


def _not_null(store: StoreDecl, quoted: str) -> bool:
    column = store.column(quoted[1:-1].replace('""', '"'))
    return column is not None and (column.not_null or column.primary_key)


async def load_graph_arrays(
    copy_documents: CopyQuery,
    copy_edges: CopyQuery,
    corpus: StoreCorpus,
    scope: CompiledScope,
    limits: LoadLimits,
    revision: int,
    *,
    concurrent: bool,
    edge_key: str | None = None,
) -> GraphArrays:
    """Run the two COPYs (inside the caller's tenant transaction) and decode them.

    The documents are decoded in a worker thread while the edges stream in and are decoded block
    by block (their endpoints matched to documents as soon as those are decoded): with
    `concurrent` (two connections sharing one snapshot) both COPYs run at once as well.
    """
    queries = load_queries(corpus, scope, limits, edge_key)
    ordered = queries.ordered_documents is None
    # The edges are decoded block by block as they stream in: the stream is never held whole.
    edges = EdgeColumns(queries.key, keyed=queries.keyed)
    stream = FixedRowStream(edge_layout(queries.key, keyed=queries.keyed), edges.add)

    def decode(data: bytes | bytearray) -> DocumentColumns:
        return decode_documents(corpus, queries.key, data, limits, ordered=ordered)

    async def documents() -> DocumentColumns:
        return await asyncio.to_thread(
            decode, await copy_documents(queries.documents, queries.params, "text")
        )

    def match_edges(decoded: asyncio.Future[DocumentColumns]) -> None:
        # In the event loop, between two blocks of edges: the edges gathered so far are matched
        # to the documents now, the rest as they arrive.
        if not decoded.cancelled() and decoded.exception() is None:
            edges.attach(decoded.result())

    try:
        if concurrent:
            pending = asyncio.ensure_future(documents())
            pending.add_done_callback(match_edges)
            try:
                await copy_edges(queries.edges, queries.edge_params, "binary", stream.feed)
            except BaseException:
                pending.cancel()
                raise
            docs = await pending
        else:
            decoding = asyncio.ensure_future(
                asyncio.to_thread(
                    decode, await copy_documents(queries.documents, queries.params, "text")
                )
            )
            decoding.add_done_callback(match_edges)
            try:
                await copy_edges(queries.edges, queries.edge_params, "binary", stream.feed)
            except BaseException:
                await asyncio.wait([decoding])  # the thread ends; what it decoded is dropped
                raise
            docs = await decoding
    except _UnorderedOverLimitError:
        # Past the limit the first documents in id order are kept: only Postgres knows them.
        assert queries.ordered_documents is not None
        data = await copy_documents(queries.ordered_documents, queries.params, "text")
        docs = await asyncio.to_thread(decode_documents, corpus, queries.key, data, limits)
    # Matched here, in the event loop, if `match_edges` has not run yet (an awaited task that is
    # already done does not yield, so its callbacks may still be pending): never in two threads.
    edges.attach(docs)
    stream.finish()
    return await asyncio.to_thread(
        edges_from_columns, corpus, queries.key, docs, edges, limits, revision
    )


class _UnorderedOverLimitError(Exception):
    """Unordered documents past the row limit, with the limit flagged: read them in order."""


@dataclass(frozen=True, slots=True, eq=False)
class DocumentColumns:
    """Decoded documents: text columns plus the binary keys edges are matched against."""

    ids: list[str]
    titles: list[str]
    bodies: list[str | None] | None
    keys: bytes  # concatenated 16-byte uuids or 8-byte integers, in document order
    truncated: bool
    without_id: int


def decode_documents(
    corpus: StoreCorpus,
    kind: KeyKind,
    data: bytes | bytearray,
    limits: LoadLimits,
    *,
    ordered: bool = True,
) -> DocumentColumns:
    """The documents text COPY stream as columns (pure).

    `ordered`: the rows come in id order, NULL ids last (the query's ORDER BY); otherwise (Uuid
    and integer ids only) they are put in that order here, by their keys.
    """
    has_body = corpus.body_column is not None
    columns = text_columns(data, 3 if has_body else 2)
    truncated = False
    if len(columns[0]) > limits.max_documents:
        _exceeded(corpus, "documents", limits.max_documents, limits)
        if not ordered:
            raise _UnorderedOverLimitError()
        truncated = True
        columns = [column[: limits.max_documents] for column in columns]
    first = columns[0]
    if ordered:
        # NULL ids sort last: what is left once they are cut off are real documents.
        try:
            loaded = first.index(None)
        except ValueError:
            loaded = len(first)
        if loaded < len(first):
            columns = [column[:loaded] for column in columns]
    elif None in first:
        kept = [k for k, doc in enumerate(first) if doc is not None]
        columns = [[column[k] for k in kept] for column in columns]
    ids = cast("list[str]", columns[0])
    if kind is KeyKind.UUID:
        keys = _uuid_keys(ids)
    elif kind is KeyKind.INT8:
        keys = np.array(ids, dtype=np.int64).astype(">i8").tobytes() if ids else b""
    else:
        keys = b""
    if not ordered and len(ids) > 1:
        order = _key_order(kind, keys, ids)
        positions = order.tolist()
        columns = [_permuted(column, positions) for column in columns]
        width = "S16" if kind is KeyKind.UUID else "S8"
        keys = np.frombuffer(keys, dtype=width).take(order).tobytes()
        ids = cast("list[str]", columns[0])
    return DocumentColumns(
        ids=ids,
        titles=cast("list[str]", columns[1]),  # coalesced to '' by the query: never NULL
        bodies=columns[2] if has_body else None,
        keys=keys,
        truncated=truncated,
        without_id=len(first) - len(ids),
    )


def _permuted(column: list[_Item], positions: list[int]) -> list[_Item]:
    """`[column[k] for k in positions]`, by itemgetter (in C: half the time of a comprehension),
    a step of `_PERMUTE_STEP` at a time so the GIL is never held for long."""
    permuted: list[_Item] = []
    for start in range(0, len(positions), _PERMUTE_STEP):
        step = positions[start : start + _PERMUTE_STEP]
        if len(step) == 1:
            permuted.append(column[step[0]])
        else:
            permuted.extend(itemgetter(*step)(column))
    return permuted


def _key_order(kind: KeyKind, keys: bytes, ids: list[str]) -> IndexArray:
    """The permutation putting documents in id order: uuids by their bytes (the order of their
    text), integers by their text (as Postgres orders `id::text COLLATE "C"`)."""
    if kind is KeyKind.UUID:
        pairs = np.frombuffer(keys, dtype=">u8").reshape(-1, 2)
        high = pairs[:, 0].astype(np.uint64)
        order: IndexArray = np.argsort(high)  # distinct (checked below): any sort will do
        ordered_high = high.take(order)
        if bool((ordered_high[1:] == ordered_high[:-1]).any()):  # shared first halves
            order = np.lexsort((pairs[:, 1].astype(np.uint64), high))
        return order
    texts = np.array(ids, dtype=np.bytes_)  # ASCII digits: byte order is the text's order
    text_order: IndexArray = np.argsort(texts, kind="stable")
    return text_order


def _uuid_keys(ids: list[str]) -> bytes:
    """The 16 bytes of each canonical uuid text in `ids`, concatenated (the hex digits of all of
    them decoded in one call)."""
    if not ids:
        return b""
    text = "".join(ids)
    if len(text) != 36 * len(ids):
        raise CopyFormatError("a Uuid document id is not in the canonical 36-character form")
    try:
        keys = bytes.fromhex(text.replace("-", ""))
    except ValueError:
        keys = b""
    if len(keys) != 16 * len(ids):
        raise CopyFormatError("a Uuid document id is not in the canonical 36-character form")
    return keys


def edge_layout(kind: KeyKind, *, keyed: bool = False) -> list[tuple[str, npt.DTypeLike]]:
    """The columns of an edges binary COPY row (`load_queries`)."""
    lead: list[tuple[str, npt.DTypeLike]] = [("k", ">i8")] if keyed else []
    if kind is KeyKind.SQL:
        return [*lead, ("s", ">i8"), ("t", ">i8"), ("e", ">i2"), ("w", ">f8")]
    # A uuid as its two big-endian halves: numpy reads them straight from the stream.
    width: npt.DTypeLike = [("h", ">u8"), ("l", ">u8")] if kind is KeyKind.UUID else ">i8"
    return [*lead, ("s", width), ("t", width), ("null", ">i2"), ("e", ">i2"), ("w", ">f8")]


class EdgeColumns:
    """Edge rows gathered block by block into compact native columns (41 bytes a uuid edge,
    against 78 in the stream). Once the documents are known (`attach`) each block's endpoints
    become document positions as it arrives, so little is left to do when the stream ends."""

    def __init__(self, kind: KeyKind, *, keyed: bool = False) -> None:
        self.kind = kind
        self.keyed = keyed
        self.rows = 0
        self._pieces: dict[str, list[npt.NDArray[np.generic]]] = {}
        self._positions: Callable[..., IndexArray] | None = None
        # The raw endpoint columns of each key kind, in the order the position lookup takes them.
        self._ends = {
            KeyKind.UUID: (("sh", "sl"), ("th", "tl")),
            KeyKind.INT8: (("s",), ("t",)),
        }.get(kind)

    @property
    def attached(self) -> bool:
        return self._positions is not None or self._ends is None

    def attach(self, docs: DocumentColumns) -> None:
        """Match endpoints against `docs` from now on, and the blocks gathered so far now."""
        if self.attached:
            return
        if self.kind is KeyKind.UUID:
            self._positions = _uuid_positions(np.frombuffer(docs.keys, dtype=">u8").reshape(-1, 2))
        else:
            self._positions = _int_positions(np.frombuffer(docs.keys, dtype=">i8"))
        assert self._ends is not None
        for output, names in zip(("source", "target"), self._ends, strict=True):
            raw = [self._pieces.pop(name, []) for name in names]
            self._pieces[output] = [self._positions(*block) for block in zip(*raw, strict=True)]
            del raw

    def add(self, rows: npt.NDArray[np.void]) -> None:
        """Copy a block of decoded rows (`edge_layout`) out of the stream's buffer."""
        columns: dict[str, npt.NDArray[np.generic]] = {
            "e": rows["e"].astype(np.int8),
            "w": rows["w"].astype(np.float64),
        }
        if self.keyed:
            columns["k"] = rows["k"].astype(np.int64)
        if self.kind is KeyKind.UUID:
            for end in ("s", "t"):
                columns[f"{end}h"] = rows[end]["h"].astype(np.uint64)
                columns[f"{end}l"] = rows[end]["l"].astype(np.uint64)
        else:
            columns["s"] = rows["s"].astype(np.int64)
            columns["t"] = rows["t"].astype(np.int64)
        if self.kind is KeyKind.SQL:  # Postgres numbered the endpoints: they are positions
            columns["source"] = columns.pop("s")
            columns["target"] = columns.pop("t")
        else:
            columns["null"] = rows["null"] != 0
            if self._positions is not None and self._ends is not None:
                for output, names in zip(("source", "target"), self._ends, strict=True):
                    columns[output] = self._positions(*(columns.pop(name) for name in names))
        for name, values in columns.items():
            self._pieces.setdefault(name, []).append(values)
        self.rows += rows.shape[0]

    def take(self, name: str, dtype: npt.DTypeLike, count: int) -> npt.NDArray[Any]:
        """The first `count` values of a column, which is given up (its pieces freed)."""
        pieces = self._pieces.pop(name, [])
        whole = np.concatenate(pieces) if pieces else np.zeros(0, dtype=dtype)
        del pieces
        return whole[:count]


def edges_from_columns(
    corpus: StoreCorpus,
    kind: KeyKind,
    docs: DocumentColumns,
    edges: EdgeColumns,
    limits: LoadLimits,
    revision: int,
) -> GraphArrays:
    """The graph from decoded documents and edges (pure; `edges` is used up)."""
    truncated = docs.truncated
    count = edges.rows
    if count > limits.max_edges:
        _exceeded(corpus, "edges", limits.max_edges, limits)
        truncated = True
        count = limits.max_edges
    edges.attach(docs)
    source = edges.take("source", np.int64, count)
    target = edges.take("target", np.int64, count)
    if kind is not KeyKind.SQL:
        missing = edges.take("null", np.bool_, count)
        if missing.any():
            source[missing] = -1
            target[missing] = -1
    return GraphArrays(
        corpus=corpus.name,
        revision=revision,
        ids=docs.ids,
        titles=docs.titles,
        bodies=docs.bodies,
        edge_source=source,
        edge_target=target,
        edge_type=edges.take("e", np.int8, count),
        edge_weight=edges.take("w", np.float64, count),
        truncated=truncated,
        documents_without_id=docs.without_id,
        edge_key=edges.take("k", np.int64, count) if edges.keyed else None,
    )


def _exceeded(corpus: StoreCorpus, what: str, limit: int, limits: LoadLimits) -> None:
    if limits.on_exceed == "fail":
        raise RowLimitExceededError(corpus.name, what, limit)


def _uuid_positions(
    keys: npt.NDArray[np.uint64],
) -> Callable[[npt.NDArray[np.uint64], npt.NDArray[np.uint64]], IndexArray]:
    """Positions of 16-byte endpoint keys (given as their high and low 8 bytes, native order)
    among document keys sorted in byte order (-1: absent)."""
    high = keys[:, 0].astype(np.uint64) if keys.size else np.zeros(0, np.uint64)
    low = keys[:, 1].astype(np.uint64) if keys.size else np.zeros(0, np.uint64)
    n = high.shape[0]
    # Random uuids almost never share their first 8 bytes; then the high half alone finds the key.
    unique_high = n < 2 or bool((high[1:] != high[:-1]).all())
    index = _ExactIndex(high) if unique_high else None

    def lookup(want_high: npt.NDArray[np.uint64], want_low: npt.NDArray[np.uint64]) -> IndexArray:
        if n == 0:
            return np.full(want_high.shape[0], -1, dtype=np.int64)
        if index is not None:
            position, found = index.lookup(want_high)
            found &= low.take(position) == want_low
        else:
            packed = np.frombuffer(keys.astype(">u8").tobytes(), dtype="S16")
            pairs = np.empty((want_high.shape[0], 2), dtype=">u8")
            pairs[:, 0], pairs[:, 1] = want_high, want_low
            wanted = np.frombuffer(pairs.tobytes(), dtype="S16")
            position = np.minimum(_search_sorted(packed, wanted), n - 1)
            found = (high.take(position) == want_high) & (low.take(position) == want_low)
        position[~found] = -1
        return position

    return lookup


def _int_positions(
    keys: npt.NDArray[np.int64],
) -> Callable[[npt.NDArray[np.int64]], IndexArray]:
    """Positions of integer endpoint keys among document keys in text order (-1: absent)."""
    native = keys.astype(np.int64)
    order = np.argsort(native, kind="stable")
    n = native.shape[0]
    index = _ExactIndex(native[order], values=order)

    def lookup(wanted: npt.NDArray[np.int64]) -> IndexArray:
        if n == 0:
            return np.full(wanted.shape[0], -1, dtype=np.int64)
        position, found = index.lookup(wanted.astype(np.int64))
        position[~found] = -1
        return position

    return lookup


class _ExactIndex:
    """Where each of many 64-bit keys sits among sorted ones, in about one random read per key.

    The sorted keys are laid out in a table of about two slots per key, each key at the slot of its
    value (its offset from the smallest, shifted right) or, when that slot is taken, at the next
    free one, so the table stays in key order (linear probing, computed in one pass: a key's slot
    is the running maximum of its own slot and the previous key's plus one). A lookup reads the
    slot of the wanted value and steps forward while the slot holds a smaller key: random uuids
    and dense integer ids sit within a few slots of their own (at most 9 steps at a million uuids,
    most keys none). Keys crowded into few slots (ids sharing a long prefix, such as time-ordered
    uuids) are searched in sorted order instead. A binary search per key misses the cache at every
    step once the keys outgrow it: 5M endpoints among 1M uuids took over 2 s per column, buckets
    scanned from their start 0.7 s, this table 0.3 s (bench/README.md).
    """

    def __init__(
        self,
        keys: npt.NDArray[np.uint64] | npt.NDArray[np.int64],
        values: IndexArray | None = None,
    ) -> None:
        n = keys.shape[0]
        self._base = keys[:1].astype(keys.dtype.newbyteorder("=")).view(np.uint64).copy()
        self._offsets = keys.astype(keys.dtype.newbyteorder("=")).view(np.uint64) - self._base
        spread = int(self._offsets[-1]) if n else 0
        self._shift = np.uint64(max(0, spread.bit_length() - (n.bit_length() + 1)))
        own = (self._offsets >> self._shift).astype(np.int64)
        rank = np.arange(n, dtype=np.int64)
        placed = np.maximum.accumulate(own - rank) + rank if n else own
        self._crowded = n > 0 and int((placed - own).max()) > _BUCKET_SCAN_LIMIT
        self._given = values
        # One empty slot past the last key ends every probe (an empty slot holds the largest value).
        size = (int(placed[-1]) + 2) if n and not self._crowded else 1
        self._slots = np.full(size, np.iinfo(np.uint64).max, dtype=np.uint64)
        self._values = np.zeros(size, dtype=np.int64)
        if n and not self._crowded:
            self._slots[placed] = self._offsets
            self._values[placed] = rank if values is None else values

    def positions(self, wanted: npt.NDArray[np.uint64] | npt.NDArray[np.int64]) -> IndexArray:
        """The position of each wanted key that is present; some position in range otherwise."""
        return self.lookup(wanted)[0]

    def lookup(
        self, wanted: npt.NDArray[np.uint64] | npt.NDArray[np.int64]
    ) -> tuple[IndexArray, npt.NDArray[np.bool_]]:
        """For each wanted key its position (the value given for it, when `values` were given) and
        whether it is present; the position of an absent key is some position in range."""
        n = self._offsets.shape[0]
        offsets = wanted.astype(wanted.dtype.newbyteorder("=")).view(np.uint64) - self._base
        if self._crowded:
            position: IndexArray = np.minimum(_search_sorted(self._offsets, offsets), n - 1)
            found = self._offsets.take(position) == offsets
            return (position if self._given is None else self._given.take(position)), found
        # A key below the smallest wraps around to a huge offset: it lands on the last, empty slot.
        slot = np.minimum(offsets >> self._shift, np.uint64(self._slots.shape[0] - 1))
        slot = slot.astype(np.intp)
        held = self._slots.take(slot)
        behind = np.flatnonzero(held < offsets)
        while behind.size:
            slot[behind] += 1
            moved = self._slots.take(slot.take(behind))
            held[behind] = moved
            behind = behind[moved < offsets.take(behind)]
        return self._values.take(slot), held == offsets


def _search_sorted(keys: npt.NDArray[_Key], wanted: npt.NDArray[_Key]) -> IndexArray:
    """`np.searchsorted(keys, wanted)`, the queries taken in ascending order.

    In random order every step of every binary search misses the cache once the keys outgrow it
    (a million uuids, five million endpoints: over 2 s per column); in ascending order each search
    starts where the last one ended. With the sort it costs about a third (bench/README.md).
    """
    order = np.argsort(wanted)
    position = np.empty(len(wanted), dtype=np.int64)
    position[order] = np.searchsorted(keys, wanted.take(order))
    return position
