"""The corpus graph `C = (D, R, τ, ω, σ)` of spec §1, held as arrays in document order.

Documents are columns (ids, titles, bodies, priors) indexed by their position in document order;
edges are four parallel arrays (source index, target index, type code, weight). Both constructors
apply the engine's read rules: an edge whose endpoint is not a loaded document, whose type is not in
the catalog or whose weight is not a finite number is skipped, a finite weight is clamped into
`[1e-9, 1]`, and every skip and clamp is counted in `CorpusGraph.diagnostics`.

A graph never changes after it is built. Derived structures (id index, adjacency, term index, EPR)
are computed on first use and memoised on the instance.
"""

from __future__ import annotations

import itertools
import math
import operator
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal, TypeVar, cast

import numpy as np
import numpy.typing as npt

from mnemo_mdn.errors import GraphFormatError, ParameterError
from mnemo_mdn.relations import POLARITY_BY_CODE, RELATION_TYPES, TYPE_CODE

DocumentOrder = Literal["declared", "id"]

#: Smallest weight an edge keeps after clamping (spec §1).
MIN_EDGE_WEIGHT: Final = 1e-9
DEFAULT_DEPTH: Final = 0.0
DEFAULT_RECENCY: Final = 0.5
DEFAULT_LEVEL: Final = "believe"
_MAX_DOCUMENTS: Final = 2**31 - 1  # edge endpoints are stored as int32

# Memo keys with this prefix depend only on documents and edge endpoints, never on weights, so a
# graph that differs only by weights (memory) can share them.
STRUCTURAL_MEMO_PREFIX: Final = "structure:"
INDEX_MEMO: Final = f"{STRUCTURAL_MEMO_PREFIX}index"

_Memoised = TypeVar("_Memoised")
_Array = TypeVar("_Array", bound=npt.NDArray[Any])
FloatArray = npt.NDArray[np.float64]
IndexArray = npt.NDArray[np.int64]
EndpointArray = npt.NDArray[np.int32]  # edge endpoints: document indexes (int32 halves the traffic)
CodeArray = npt.NDArray[np.int8]


@dataclass(frozen=True, slots=True)
class Document:
    """A document: `depth >= 0` and `recency in [0, 1]` are the teleport priors of EPR."""

    id: str
    title: str
    body: str | None = None
    depth: float = DEFAULT_DEPTH
    recency: float = DEFAULT_RECENCY
    level: str = DEFAULT_LEVEL  # σ, the epistemic level: kept, not used by any computation


@dataclass(frozen=True, slots=True)
class Edge:
    """A directed, typed, weighted edge between two document ids."""

    source: str
    target: str
    etype: str
    weight: float


@dataclass(frozen=True, slots=True)
class GraphDiagnostics:
    """What the read rules did to the edges handed in: never silent (spec §1)."""

    unknown_endpoint: int = 0
    unknown_type: int = 0
    non_finite_weight: int = 0
    clamped_weight: int = 0

    @property
    def skipped_edges(self) -> int:
        return self.unknown_endpoint + self.unknown_type + self.non_finite_weight

    def to_json(self) -> dict[str, object]:
        return {
            "skipped_edges": self.skipped_edges,
            "skipped": {
                "unknown_endpoint": self.unknown_endpoint,
                "unknown_type": self.unknown_type,
                "non_finite_weight": self.non_finite_weight,
            },
            "clamped_weights": self.clamped_weight,
        }


@dataclass(frozen=True, slots=True, eq=False)
class CorpusGraph:
    """Documents and edges in document order. Build it with `build` or `from_arrays`."""

    ids: tuple[str, ...]
    titles: tuple[str, ...]
    bodies: tuple[str | None, ...]
    levels: tuple[str, ...]
    depth: FloatArray
    recency: FloatArray
    edge_source: EndpointArray
    edge_target: EndpointArray
    edge_type: CodeArray
    edge_weight: FloatArray
    diagnostics: GraphDiagnostics
    # The ids are strings in strictly ascending order (a store graph's): `index` searches them.
    ids_ascending: bool = field(default=False, repr=False)
    _memo: dict[str, object] = field(default_factory=dict, repr=False)

    # ----------------------------------------------------------------------------- constructors

    @classmethod
    def build(
        cls,
        documents: Iterable[Document],
        edges: Iterable[Edge],
        order: DocumentOrder = "declared",
    ) -> CorpusGraph:
        """A graph from document and edge values.

        `order="declared"` keeps the documents in the order given (declared corpora);
        `order="id"` sorts them by id as text in byte order (store corpora). Edges naming an
        unknown document or type, or carrying a weight that is not a finite number, are skipped.
        """
        docs = list(documents)
        ids = [doc.id for doc in docs]
        position = _index_unique_ids(ids)
        edge_list = list(edges)
        source = np.fromiter(
            (position.get(edge.source, -1) for edge in edge_list), np.int64, len(edge_list)
        )
        target = np.fromiter(
            (position.get(edge.target, -1) for edge in edge_list), np.int64, len(edge_list)
        )
        codes = np.fromiter(
            (TYPE_CODE.get(edge.etype, -1) for edge in edge_list), np.int64, len(edge_list)
        )
        weights = np.fromiter(
            (_weight_as_float(edge.weight) for edge in edge_list), np.float64, len(edge_list)
        )
        return cls._assemble(
            ids=ids,
            titles=[doc.title for doc in docs],
            bodies=[doc.body for doc in docs],
            levels=[doc.level for doc in docs],
            depth=_prior_column([doc.depth for doc in docs], len(docs), DEFAULT_DEPTH, "depth"),
            recency=_prior_column(
                [doc.recency for doc in docs], len(docs), DEFAULT_RECENCY, "recency"
            ),
            source=source,
            target=target,
            codes=codes,
            weights=weights,
            order=order,
            position=position,
        )

    @classmethod
    def from_arrays(
        cls,
        ids: Sequence[str],
        titles: Sequence[str],
        *,
        bodies: Sequence[str | None] | None = None,
        depth: npt.ArrayLike | None = None,
        recency: npt.ArrayLike | None = None,
        levels: Sequence[str] | None = None,
        edge_source: npt.ArrayLike = (),
        edge_target: npt.ArrayLike = (),
        edge_type: npt.ArrayLike = (),
        edge_weight: npt.ArrayLike = (),
        order: DocumentOrder = "declared",
        ids_ascending: bool = False,
    ) -> CorpusGraph:
        """A graph from columns, without building a Python object per row (the storage layer's path).

        - `ids`, `titles`: one entry per document, in document order for `order="declared"`; with
          `order="id"` they are sorted by id here (pass them already sorted, e.g. `ORDER BY id
          COLLATE "C"`, and the sort is a cheap check).
        - `bodies`, `levels`: per document, or `None` for no body / `believe`.
        - `depth`, `recency`: float arrays per document, or `None` for the defaults (0 and 0.5),
          which make the teleport vectors uniform.
        - `edge_source`, `edge_target`: integer arrays of document indexes (positions in `ids` as
          given); any value outside `[0, len(ids))`, such as -1 for an id that did not load, is an
          unknown endpoint and the edge is skipped.
        - `edge_type`: integer codes (positions in `RELATION_TYPES`) or type names; an unknown code
          or name is skipped.
        - `edge_weight`: float64 array; NaN (SQL NULL) and infinities are skipped, finite values
          clamped into `[1e-9, 1]`.
        - `ids_ascending`: the caller has proved `ids` strings in strictly ascending order (a graph
          refreshed from rows that were, by removals and insertions at their sorted places), so
          the pass that would prove it (most of a refresh's build at 100k documents) is skipped.
        """
        n = len(ids)
        return cls._assemble(
            ids=ids,
            titles=titles,
            bodies=bodies if bodies is not None else (None,) * n,
            levels=levels if levels is not None else (DEFAULT_LEVEL,) * n,
            depth=_prior_column(depth, n, DEFAULT_DEPTH, "depth"),
            recency=_prior_column(recency, n, DEFAULT_RECENCY, "recency"),
            source=_index_column(edge_source, "edge_source"),
            target=_index_column(edge_target, "edge_target"),
            codes=_type_codes(edge_type),
            weights=_weight_column(edge_weight),
            order=order,
            position=None,
            ids_ascending=ids_ascending,
        )

    @classmethod
    def _assemble(
        cls,
        *,
        ids: Sequence[str],
        titles: Sequence[str],
        bodies: Sequence[str | None],
        levels: Sequence[str],
        depth: FloatArray,
        recency: FloatArray,
        source: npt.NDArray[np.integer],
        target: npt.NDArray[np.integer],
        codes: npt.NDArray[np.integer],
        weights: FloatArray,
        order: DocumentOrder,
        position: dict[str, int] | None,
        ids_ascending: bool = False,
    ) -> CorpusGraph:
        if order not in ("declared", "id"):
            raise ParameterError(f"order must be 'declared' or 'id', got {order!r}")
        n = len(ids)
        for name, column in (("titles", titles), ("bodies", bodies), ("levels", levels)):
            if len(column) != n:
                raise GraphFormatError(f"{name} has {len(column)} entries for {n} document ids")
        for name, prior in (("depth", depth), ("recency", recency)):
            if prior.shape != (n,):
                raise GraphFormatError(f"{name} has shape {prior.shape}, expected ({n},)")
        m = len(source)
        for name, column_length in (
            ("edge_target", len(target)),
            ("edge_type", len(codes)),
            ("edge_weight", len(weights)),
        ):
            if column_length != m:
                raise GraphFormatError(f"{name} has {column_length} entries for {m} edge sources")
        id_tuple, title_tuple = tuple(ids), tuple(titles)
        body_tuple, level_tuple = tuple(bodies), tuple(levels)
        # Ids handed over already ascending (the store's `ORDER BY id COLLATE "C"`, or numbered
        # ids) are unique, and in place for `order="id"`: one pass of comparisons proves both,
        # instead of a set (and a sort). Ids out of order fail that pass at once, mostly.
        ascending = ids_ascending or (_all_strings(id_tuple) and _strictly_ascending(id_tuple))
        if position is None and not ascending:
            _check_unique_ids(id_tuple)
        _check_priors(ids, depth, recency)

        if n > _MAX_DOCUMENTS:
            raise GraphFormatError(f"a graph holds at most {_MAX_DOCUMENTS} documents, got {n}")
        edges = _read_edges(n, source, target, codes, weights)

        permuted = False
        if order == "id" and not ascending:
            permutation = sorted(range(n), key=id_tuple.__getitem__)
            perm = np.array(permutation, dtype=np.int64)
            permuted = bool((perm != np.arange(n)).any())
            if permuted:
                new_position = np.empty(n, dtype=np.int32)
                new_position[perm] = np.arange(n, dtype=np.int32)
                id_tuple = tuple(id_tuple[k] for k in permutation)
                title_tuple = tuple(title_tuple[k] for k in permutation)
                body_tuple = tuple(body_tuple[k] for k in permutation)
                level_tuple = tuple(level_tuple[k] for k in permutation)
                depth, recency = depth[perm], recency[perm]
                edges = replace(
                    edges, source=new_position[edges.source], target=new_position[edges.target]
                )

        graph = cls(
            ids=id_tuple,
            titles=title_tuple,
            bodies=body_tuple,
            levels=level_tuple,
            depth=_frozen(np.array(depth, dtype=np.float64)),
            recency=_frozen(np.array(recency, dtype=np.float64)),
            edge_source=_frozen(edges.source),
            edge_target=_frozen(edges.target),
            edge_type=_frozen(edges.codes),
            edge_weight=_frozen(edges.weights),
            diagnostics=edges.diagnostics,
            ids_ascending=ascending,
        )
        if position is not None and not permuted:
            known: Mapping[str, int] = position
            graph.memo(INDEX_MEMO, lambda: known)
        return graph

    # ----------------------------------------------------------------------------- views

    @property
    def n_documents(self) -> int:
        return len(self.ids)

    @property
    def n_edges(self) -> int:
        return len(self.edge_source)

    @property
    def index(self) -> Mapping[str, int]:
        """Document id → index in document order."""
        return self.memo(
            INDEX_MEMO,
            lambda: (
                AscendingIndex(self.ids)
                if self.ids_ascending
                else {doc_id: k for k, doc_id in enumerate(self.ids)}
            ),
        )

    def index_of(self, doc_id: str) -> int | None:
        return self.index.get(doc_id)

    @property
    def edge_polarity(self) -> CodeArray:
        """Polarity (-1, 0, 1) of every edge, from its type code."""
        return self.memo(
            f"{STRUCTURAL_MEMO_PREFIX}polarity", lambda: _frozen(POLARITY_BY_CODE[self.edge_type])
        )

    @property
    def documents(self) -> tuple[Document, ...]:
        return tuple(
            Document(
                id=self.ids[k],
                title=self.titles[k],
                body=self.bodies[k],
                depth=float(self.depth[k]),
                recency=float(self.recency[k]),
                level=self.levels[k],
            )
            for k in range(self.n_documents)
        )

    @property
    def edges(self) -> tuple[Edge, ...]:
        return tuple(self.edge_at(k) for k in range(self.n_edges))

    def edge_at(self, k: int) -> Edge:
        return Edge(
            source=self.ids[int(self.edge_source[k])],
            target=self.ids[int(self.edge_target[k])],
            etype=RELATION_TYPES[int(self.edge_type[k])],
            weight=float(self.edge_weight[k]),
        )

    def with_edge_weights(self, weights: npt.ArrayLike) -> CorpusGraph:
        """The same documents and edges with new weights (memory), sharing structural memos."""
        new_weights = np.asarray(weights, dtype=np.float64)
        if new_weights.shape != self.edge_weight.shape:
            raise GraphFormatError(
                f"expected {self.n_edges} weights, got an array of shape {new_weights.shape}"
            )
        structural = {
            key: value
            for key, value in self._memo.items()
            if key.startswith(STRUCTURAL_MEMO_PREFIX)
        }
        return CorpusGraph(
            ids=self.ids,
            titles=self.titles,
            bodies=self.bodies,
            levels=self.levels,
            depth=self.depth,
            recency=self.recency,
            edge_source=self.edge_source,
            edge_target=self.edge_target,
            edge_type=self.edge_type,
            edge_weight=_frozen(np.clip(new_weights, MIN_EDGE_WEIGHT, 1.0)),
            diagnostics=self.diagnostics,
            ids_ascending=self.ids_ascending,
            _memo=structural,
        )

    def memoised(self, key: str) -> object | None:
        """What `memo` holds for `key`, without computing it (None: nothing yet)."""
        return self._memo.get(key)

    def memo_items(self) -> list[tuple[str, object]]:
        """Every memoised value with its key (what a successor graph may take over)."""
        return list(self._memo.items())

    def memo(self, key: str, compute: Callable[[], _Memoised]) -> _Memoised:
        """`compute()` once per graph and key. Keys starting `structure:` must not read weights."""
        try:
            return cast(_Memoised, self._memo[key])
        except KeyError:
            value = compute()
            self._memo[key] = value
            return value

    def __repr__(self) -> str:
        return f"CorpusGraph({self.n_documents} documents, {self.n_edges} edges)"


# --------------------------------------------------------------------------------- column checks


@dataclass(frozen=True, slots=True)
class _EdgeColumns:
    """Edges that passed the read rules, in fresh arrays the graph owns."""

    source: EndpointArray
    target: EndpointArray
    codes: CodeArray
    weights: FloatArray
    diagnostics: GraphDiagnostics


def _read_edges(
    n: int,
    source: npt.NDArray[np.integer],
    target: npt.NDArray[np.integer],
    codes: npt.NDArray[np.integer],
    weights: FloatArray,
) -> _EdgeColumns:
    """Apply spec §1's read rules. Each input column is copied once (a graph owns its arrays)."""
    if _all_edges_valid(n, source, target, codes, weights):
        # The common case, proved with a few reductions instead of a mask per rule.
        return _EdgeColumns(
            source=source.astype(np.int32),
            target=target.astype(np.int32),
            codes=codes.astype(np.int8),
            weights=np.array(weights, dtype=np.float64),
            diagnostics=GraphDiagnostics(),
        )
    endpoint_known = (source >= 0) & (source < n) & (target >= 0) & (target < n)
    type_known = (codes >= 0) & (codes < len(RELATION_TYPES))
    weight_finite = np.isfinite(weights)
    # Each skipped edge is counted once, for the first rule it breaks.
    unknown_endpoint = int(len(source) - np.count_nonzero(endpoint_known))
    keep = endpoint_known & type_known
    unknown_type = int(len(source) - unknown_endpoint - np.count_nonzero(keep))
    kept_before_weights = int(np.count_nonzero(keep))
    keep &= weight_finite
    non_finite = kept_before_weights - int(np.count_nonzero(keep))
    if not keep.all():
        source, target, codes, weights = source[keep], target[keep], codes[keep], weights[keep]
    clamped = np.clip(weights, MIN_EDGE_WEIGHT, 1.0)
    return _EdgeColumns(
        source=source.astype(np.int32),
        target=target.astype(np.int32),
        codes=codes.astype(np.int8),
        weights=clamped,
        diagnostics=GraphDiagnostics(
            unknown_endpoint=unknown_endpoint,
            unknown_type=unknown_type,
            non_finite_weight=non_finite,
            clamped_weight=int(np.count_nonzero(clamped != weights)),
        ),
    )


def _all_edges_valid(
    n: int,
    source: npt.NDArray[np.integer],
    target: npt.NDArray[np.integer],
    codes: npt.NDArray[np.integer],
    weights: FloatArray,
) -> bool:
    """No read rule applies to any edge: endpoints and codes in range, weights within `[1e-9, 1]`
    (NaN fails every comparison, so a NULL weight sends the edges through the rules)."""
    if not len(source):
        return False
    return (
        int(source.min()) >= 0
        and int(target.min()) >= 0
        and max(int(source.max()), int(target.max())) < n
        and int(codes.min()) >= 0
        and int(codes.max()) < len(RELATION_TYPES)
        and bool(weights.min() >= MIN_EDGE_WEIGHT)
        and bool(weights.max() <= 1.0)
    )


def _frozen(array: _Array) -> _Array:
    array.setflags(write=False)
    return array


def _index_unique_ids(ids: Sequence[str]) -> dict[str, int]:
    """Id → position; `GraphFormatError` for an id that is not a string or appears twice."""
    position = {doc_id: k for k, doc_id in enumerate(ids)}
    if len(position) != len(ids) or not _all_strings(position):
        _raise_for_first_bad_id(ids)
    return position


def _check_unique_ids(ids: Sequence[str]) -> None:
    """The same check without building the index (a set is about three times cheaper)."""
    distinct = set(ids)
    if len(distinct) != len(ids) or not _all_strings(ids):
        _raise_for_first_bad_id(ids)


def ids_in_order(ids: Sequence[object]) -> bool:
    """Whether `ids` are strings in strictly ascending order (code point order): what
    `from_arrays(..., ids_ascending=True)` takes on trust."""
    return _all_strings(ids) and _strictly_ascending(cast("Sequence[str]", ids))


def _all_strings(ids: Iterable[object]) -> bool:
    """Every id is a `str` (or a subclass): `str.join` checks each item in C, and says which not."""
    try:
        "".join(cast("Iterable[str]", ids))
    except TypeError:
        return False
    return True


def _strictly_ascending(ids: Sequence[str]) -> bool:
    """Each id sorts after the one before it (code point order, the byte order of their UTF-8)."""
    return all(map(operator.lt, ids, itertools.islice(ids, 1, None)))


def _raise_for_first_bad_id(ids: Sequence[object]) -> None:
    seen: set[object] = set()
    for k, doc_id in enumerate(ids):
        if not isinstance(doc_id, str):
            raise GraphFormatError(f"document id at position {k} must be a string, got {doc_id!r}")
        if doc_id in seen:
            raise GraphFormatError(f"document id '{doc_id}' appears twice; ids must be unique")
        seen.add(doc_id)


CARRIED_IDS: Final = 16_384
"""Found ids an `AscendingIndex` hands to its successor's: a scope's memory bias reads up to
`horizon` (1,000) outcomes of a few documents each."""


class AscendingIndex(Mapping[str, int]):
    """Id → position for ids in strictly ascending order, by binary search, each id found kept.

    A store graph's ids arrive sorted, and every refresh makes a new graph: a dict of every id
    would cost each refreshed graph a pass over all of them (about 30 ms at 100k documents and
    half a second at a million) before its first lookup, where a navigation looks up a few hundred
    (its seed, the documents of the scope's remembered paths). Thread-safe: a lookup only adds
    to a dict."""

    __slots__ = ("_found", "_ids")

    def __init__(self, ids: tuple[str, ...]) -> None:
        self._ids = ids
        self._found: dict[str, int] = {}

    def __getitem__(self, doc_id: str) -> int:
        found = self.get(doc_id)
        if found is None:
            raise KeyError(doc_id)
        return found

    def get(self, doc_id: str, default: int | None = None) -> int | None:  # type: ignore[override]
        """The position of `doc_id`, else `default` (a navigation asks a few thousand times)."""
        if not isinstance(doc_id, str):
            return default
        found = self._found.get(doc_id)
        if found is not None:
            return found
        k = bisect_left(self._ids, doc_id)
        if k < len(self._ids) and self._ids[k] == doc_id:
            self._found[doc_id] = k
            return k
        return default

    def carry(self, previous: AscendingIndex, moved: IndexArray) -> None:
        """Keep the ids `previous` found, at these ids' positions (`moved[k]`: old position k's
        new one, -1: gone), each checked against these ids: a refreshed graph's navigation looks up
        the ids its predecessor's did (the scope's remembered paths), and a search each costs
        about as much as the rest of the memory bias (bench/README.md, "The id index"). At most
        `CARRIED_IDS`, the last found first."""
        found = previous._found.copy()  # one C call: another thread may add meanwhile
        if not found:
            return
        names = list(found)[-CARRIED_IDS:]
        old = np.fromiter((found[name] for name in names), dtype=np.int64, count=len(names))
        if int(old.max()) >= len(moved):
            return  # not this index's predecessor
        ids, mine = self._ids, self._found
        for doc_id, k in zip(names, moved.take(old).tolist(), strict=True):
            if k >= 0 and ids[k] == doc_id:
                mine.setdefault(doc_id, k)

    def __contains__(self, doc_id: object) -> bool:
        try:
            self[doc_id]  # type: ignore[index]
        except KeyError:
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)


def _check_priors(ids: Sequence[str], depth: FloatArray, recency: FloatArray) -> None:
    bad_depth = ~(np.isfinite(depth) & (depth >= 0.0))
    if bad_depth.any():
        k = int(np.argmax(bad_depth))
        raise GraphFormatError(
            f"document '{ids[k]}': depth must be a finite number >= 0, got {float(depth[k])!r}"
        )
    bad_recency = ~((recency >= 0.0) & (recency <= 1.0))
    if bad_recency.any():
        k = int(np.argmax(bad_recency))
        raise GraphFormatError(
            f"document '{ids[k]}': recency must be in [0, 1], got {float(recency[k])!r}"
        )


def _prior_column(values: npt.ArrayLike | None, n: int, default: float, name: str) -> FloatArray:
    if values is None:
        return np.full(n, default, dtype=np.float64)
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise GraphFormatError(f"{name} must be an array of numbers: {error}") from None


def _index_column(values: npt.ArrayLike, name: str) -> npt.NDArray[np.integer]:
    array = np.asarray(values)
    if array.size == 0:
        return np.zeros(0, dtype=np.int64)
    if array.ndim != 1 or not np.issubdtype(array.dtype, np.integer):
        raise GraphFormatError(
            f"{name} must be a one-dimensional integer array of document indexes, "
            f"got dtype {array.dtype} and shape {array.shape}"
        )
    return array


def _type_codes(values: npt.ArrayLike) -> npt.NDArray[np.integer]:
    array = np.asarray(values)
    if array.size == 0:
        return np.zeros(0, dtype=np.int64)
    if np.issubdtype(array.dtype, np.integer):
        return array
    if array.dtype.kind in "US":
        codes = np.full(array.shape, -1, dtype=np.int64)
        for code, etype in enumerate(RELATION_TYPES):
            codes[array == (etype if array.dtype.kind == "U" else etype.encode())] = code
        return codes
    return np.fromiter(
        (TYPE_CODE.get(etype, -1) if isinstance(etype, str) else -1 for etype in array.tolist()),
        np.int64,
        array.size,
    )


def _weight_column(values: npt.ArrayLike) -> FloatArray:
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        # A column with NULLs as None: those rows are "not a finite number" and get skipped.
        return np.fromiter(
            (_weight_as_float(value) for value in np.asarray(values, dtype=object).tolist()),
            np.float64,
        )


def _weight_as_float(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.floating | np.integer):
        return math.nan
    return float(value)
