"""Signed EPR brought up to date after a small change, by residual push instead of a new run.

One channel's EPR is the fixed point of `x = (1 − d)·u + d·Pᵀx + d·(D·x)/n·1` (spec §2; `D·x` is
the mass on dangling documents, those with no outgoing edge of the channel). The last term couples
every document to every other, so a change anywhere moves every value a little. It splits off:
with `s` the floored raw teleport (`u = s/Σs`) and the two *leaky* solutions

```
Y = s + d·PᵀY        Z = 1 + d·PᵀZ        (no dangling redistribution)
```

the fixed point is `x = (1 − d)/Σs·Y + c/n·Z`, `c = d·D·x = d·D·y / (1 − d/n·D·Z)` (`y` the first
term). `Y` and `Z` do not depend on `n` or `Σs`: adding, removing or editing a few documents and
edges changes their equations only at those documents and at the targets of the sources whose
out-weights changed. `ChannelState` keeps them; `update_channel` carries them to a successor graph:

1. the residual `r = source + d·Pᵀv − v` of the carried vectors on the new graph (one mat-vec);
   it is zero wherever nothing changed, up to rounding;
2. residual push: each round moves every residual above a per-document threshold into the vector
   and sends `d·P` of it along the out-edges (one sparse product over those rows only). A round
   lowers the L1 residual by at least `(1 − d)` of what it pushes; it stops when the L1 residual
   is within its budget; when most documents hold residual, a round is one full mat-vec instead;
3. `x` from `Y` and `Z` as above; exactly, `T(x) − x = r_y + c·r_z` (normalised), so the budgets
   bound the step. The result is `T(x)` with `‖T(x) − x‖₁` measured on the real operator and
   accepted only below `tol/10`: the same certificate as a warm power iteration's stop
   (`signed_pagerank._power_iteration`), hence within `1.1·d/(1 − d)·tol` (L1, per channel) of a
   cold run, 1e-9 for net EPR at the defaults.

A run that would cost more than its work budget (the change reached most of the graph, or the state
is too far off) answers no vector: the caller computes that channel by a warm power iteration and
stops updating it (`signed_pagerank`: on a graph where a change spreads that far, as on random
graphs, the push's dense rounds cost more than the warm passes). Pure numpy/scipy, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from mnemo_mdn.graph import CorpusGraph, FloatArray, IndexArray
from mnemo_mdn.relations import Polarity

#: Added to every raw teleport entry so that no document has zero teleport mass (spec §2 step 1).
TELEPORT_FLOOR: Final = 1e-9
#: The accepted step `‖T(x) − x‖₁` as a share of `tol` (a warm power iteration's stop).
CERTIFIED_SHARE: Final = 0.1
# The L1 residual budget of both leaky columns together, as a share of the accepted step (c < 1).
_RESIDUAL_SHARE: Final = 0.8
# Past this share of documents holding residual, a round is one full mat-vec.
_FULL_ROUND_SHARE: Final = 0.125
# Work (edges and documents touched) allowed to an update, in full passes over the graph; a cold
# run takes about 90 at the defaults.
UPDATE_PASSES: Final = 30.0
#: Work allowed when there is no state to start from (both columns solved from a guess).
BOOTSTRAP_PASSES: Final = 400.0
# Below every float64's binary exponent (subnormals reach -1073), so exponents index from 0.
_LOWEST_EXPONENT: Final = -1080
# Exponent groups: up to float64's largest exponent (1024) above the lowest.
_EXPONENT_BINS: Final = 1024 - _LOWEST_EXPONENT + 1
_NO_DOCUMENTS: Final = np.zeros(0, dtype=np.intp)
# A budget not met at the certificate is tightened this many times before giving up.
_TIGHTENINGS: Final = 4


@dataclass(frozen=True, slots=True, eq=False)
class ChannelState:
    """The leaky solutions of one channel, in document order, unnormalised (see the module)."""

    y: FloatArray  # Y = s + d·PᵀY
    z: FloatArray  # Z = 1 + d·PᵀZ


@dataclass(frozen=True, slots=True, eq=False)
class ChannelUpdate:
    """An updated channel: its EPR vector (`T(x)`; None when the update gave up, the caller then
    computes it), the state for the next update (as far as it got), the rounds."""

    vector: FloatArray | None
    state: ChannelState
    rounds: int
    work: float  # in full passes over the channel's edges and documents


@dataclass(frozen=True, slots=True)
class _Rows:
    """A square sparse matrix as CSR arrays, duplicates kept (parallel edges add up in every
    product, spec §2 step 2). Products go straight to scipy's kernel: a scipy matrix object checks
    its index arrays when made, a scan of every entry that a refresh need not pay twice a channel."""

    indptr: npt.NDArray[np.int32]
    indices: npt.NDArray[np.int32]
    data: FloatArray


@dataclass(frozen=True, slots=True)
class _Operator:
    """One channel of a graph: `d·P` by source rows and by target rows, the raw teleport."""

    # Rows: sources, columns: targets, values d·w/(out-weight of source). Read by columns (the
    # arrays of `d·P` by rows are those of `d·Pᵀ` by columns), its product with v is `d·Pᵀ·v`:
    # no second copy of the entries sorted by target.
    forward: _Rows
    raw: FloatArray  # s, floored
    loops: FloatArray  # per document, the share d·w/(out-weight) of its self-loops (0: none)
    dangling: IndexArray  # the documents with no outgoing edge of this polarity
    damping: float

    @property
    def n(self) -> int:
        return len(self.raw)

    @property
    def pass_work(self) -> int:
        """The work of one full round: every entry and every document."""
        return len(self.forward.indices) + self.n

    def spread(self, vector: FloatArray) -> FloatArray:
        """`d·Pᵀ·vector`."""
        result = np.zeros(self.n)
        rows = self.forward
        csc_matvec(self.n, self.n, rows.indptr, rows.indices, rows.data, vector, result)
        return result


def raw_teleport(graph: CorpusGraph, polarity: Polarity) -> FloatArray:
    """`max(raw, 0) + 1e-9`: `1/(depth + 1)` for trust, recency for distrust (spec §2 step 1)."""
    raw = 1.0 / (graph.depth + 1.0) if polarity == Polarity.POSITIVE else graph.recency
    floored: FloatArray = np.maximum(raw, 0.0) + TELEPORT_FLOOR
    return floored


def _operator(graph: CorpusGraph, polarity: Polarity, damping: float) -> _Operator:
    n = graph.n_documents
    selected = np.flatnonzero(graph.edge_polarity == polarity)
    source = graph.edge_source.take(selected).astype(np.int32, copy=False)
    target = graph.edge_target.take(selected).astype(np.int32, copy=False)
    weight = graph.edge_weight.take(selected)
    out_weight = np.bincount(source, weights=weight, minlength=n).astype(np.float64, copy=False)
    scaled = damping * weight / out_weight.take(source)
    loop = source == target
    loops = np.bincount(source[loop], weights=scaled[loop], minlength=n).astype(np.float64)
    return _Operator(
        forward=_rows(source, target, scaled, n),
        raw=raw_teleport(graph, polarity),
        loops=loops,
        dangling=np.flatnonzero(out_weight == 0.0),
        damping=damping,
    )


def _rows(
    row: npt.NDArray[np.int32], column: npt.NDArray[np.int32], data: FloatArray, n: int
) -> _Rows:
    """CSR by `row`, duplicates kept: one counting sort, no canonicalising pass (the cold path's
    reason, `signed_pagerank`)."""
    entries = len(row)
    indptr = np.empty(n + 1, dtype=np.int32)
    indices = np.empty(entries, dtype=np.int32)
    values = np.empty(entries, dtype=np.float64)
    coo_tocsr(n, n, entries, row, column, data, indptr, indices, values)
    return _Rows(indptr, indices, values)


def update_channel(
    graph: CorpusGraph,
    polarity: Polarity,
    damping: float,
    tol: float,
    start: ChannelState | FloatArray | None,
) -> ChannelUpdate | None:
    """The channel's EPR on `graph` from `start`: the predecessor's state at `graph`'s positions,
    or an EPR vector of a nearby graph (the predecessor's, moved), or None (no edges assumed);
    None when `start` does not fit the graph. `start` is only read."""
    operator = _operator(graph, polarity, damping)
    n, d = operator.n, damping
    if n == 0:
        return None
    total_raw = float(operator.raw.sum())
    # Normalised columns: y = (1 − d)/Σs·Y solves y = (1 − d)·u + d·Pᵀy, z = Z/n solves
    # z = 1/n + d·Pᵀz; both have mass of order 1, so one budget serves both.
    to_y, to_z = (1.0 - d) / total_raw, 1.0 / n
    sources = (operator.raw * to_y, np.full(n, to_z))
    if start is None:
        vectors = (sources[0] / (1.0 - d), sources[1] / (1.0 - d))  # exact with no edges
        passes = BOOTSTRAP_PASSES
    elif isinstance(start, ChannelState):
        if start.y.shape != (n,) or start.z.shape != (n,):
            return None
        # Copies: two requests may compute one graph's EPR at once, from the same carried state.
        vectors = (start.y * to_y, start.z * to_z)
        passes = UPDATE_PASSES
    else:
        if start.shape != (n,):
            return None
        vectors = _split(operator, start)
        passes = BOOTSTRAP_PASSES
    step_limit = CERTIFIED_SHARE * tol
    budget = _RESIDUAL_SHARE * step_limit
    residuals = (
        sources[0] + operator.spread(vectors[0]) - vectors[0],
        sources[1] + operator.spread(vectors[1]) - vectors[1],
    )
    work_limit = passes * operator.pass_work
    work, rounds = 0.0, 0
    vector: FloatArray | None = None
    for _ in range(_TIGHTENINGS + 1):
        pushed_work, pushed_rounds, settled = _push(
            operator, vectors, residuals, budget, work_limit - work
        )
        work += pushed_work
        rounds += pushed_rounds
        if not settled:
            break
        following, step = _combined(operator, vectors)
        if step < step_limit:
            vector = following
            break
        budget /= 8.0  # rounding drift in the tracked residual: push further
    # Unsettled, the state still starts the next update closer than the previous one did.
    state = ChannelState(
        np.divide(vectors[0], to_y, out=vectors[0]), np.divide(vectors[1], to_z, out=vectors[1])
    )
    return ChannelUpdate(vector, state, rounds, work / operator.pass_work)


def _push(
    operator: _Operator,
    vectors: tuple[FloatArray, FloatArray],
    residuals: tuple[FloatArray, FloatArray],
    budget: float,
    work_limit: float,
) -> tuple[float, int, bool]:
    """Push `residuals` into `vectors` (all changed in place) until their L1 norms together are
    below `budget`; returns (work, rounds, whether it got there). It stops short as soon as the
    rounds still needed at full rounds' contraction would pass `work_limit`.

    A round pushes the documents `_Sizes.holding` picks: all but the smallest residuals, which
    together stay below half the goal. Once a round has to be a full mat-vec (the residual is
    spread thin over the graph), the goal drops to an eighth of the budget, so that what is left is
    small enough for the next updates to leave alone. A sparse round costs what it pushes: the
    residuals' sizes are kept up to date at the documents it changed only (`_Sizes`).

    A document pushes `r/(1 − a)`, `a` its self-loop's share: the loop's share of the push comes
    back to it, and with this amount its residual is exactly zero after the round (a document whose
    only edge is a loop is settled in one round, not in the hundreds its geometric series takes).
    What the other edges receive is at most `(d − a)/(1 − a) ≤ d` of it, so each round still lowers
    the L1 residual by at least `1 − d` of what it pushed.
    """
    n = operator.n
    full_round = _FULL_ROUND_SHARE * n
    indptr, indices, data = (
        operator.forward.indptr,
        operator.forward.indices,
        operator.forward.data,
    )
    keep = 1.0 / (1.0 - operator.loops)
    work, rounds, goal = 0.0, 0, budget
    sizes = _Sizes(residuals)
    while sizes.total >= goal or sizes.rescanned() >= goal:
        active = sizes.holding(goal / 2.0)
        if not len(active):
            return work, rounds, False  # cannot happen (what is left sums below goal/2)
        rounds += 1
        if len(active) > full_round:
            goal = budget / 8.0
            left = np.log(sizes.total / goal) / -np.log(operator.damping)
            if work + left * operator.pass_work > work_limit:
                return work, rounds, False
            for vector, residual in zip(vectors, residuals, strict=True):
                moved = residual * keep
                vector += moved
                residual -= moved
                residual += operator.spread(moved)
            work += operator.pass_work
            sizes.rescan()
        else:
            first, last = indptr[active], indptr[active + 1]
            counts = last - first
            entries = np.repeat(last - np.cumsum(counts), counts) + np.arange(int(counts.sum()))
            targets, shares = indices.take(entries), data.take(entries)
            for vector, residual in zip(vectors, residuals, strict=True):
                moved = residual.take(active) * keep.take(active)
                vector[active] += moved
                residual[active] -= moved
                np.add.at(residual, targets, shares * np.repeat(moved, counts))
            work += len(entries) + len(active)
            sizes.changed(np.unique(np.concatenate((active, targets))))
        if work > work_limit:
            return work, rounds, False
    return work, rounds, True


class _Sizes:
    """The residuals' sizes `|r_y| + |r_z|` per document, their total and their mass per binary
    exponent, kept up to date where a round changed them.

    A round picks the documents above a cut (a power of two). A full scan finds them among all
    documents and remembers its cut; until the cut falls below it, a document above the cut must
    be one whose residual changed since (every other one was at or below the scan's cut), so the
    round looks among those only. What the updates add up drifts by rounding: before the push
    stops, `rescanned` recomputes the total from the residuals themselves."""

    def __init__(self, residuals: tuple[FloatArray, FloatArray]) -> None:
        self._residuals = residuals
        self._touched = np.zeros(len(residuals[0]), dtype=np.bool_)
        self._touched_list: list[IndexArray] = []
        self._touched_count = 0
        self.rescan()

    def rescan(self) -> None:
        r_y, r_z = self._residuals
        self._size = np.abs(r_y) + np.abs(r_z)
        self._exponent = _exponents(self._size)
        self._mass = np.bincount(self._exponent, weights=self._size, minlength=_EXPONENT_BINS)
        self.total = float(self._size.sum())
        self._scanned_cut: int | None = None  # no scan's cut holds: the next pick scans

    def rescanned(self) -> float:
        """The exact total (after a rescan); the push's last word before it stops."""
        self.rescan()
        return self.total

    def holding(self, left: float) -> IndexArray:
        """The documents to push: all but the smallest, as long as those left sum below `left`.

        Residuals are grouped by binary exponent, so the cut is at a power of two: a document with
        residual under the cut, and every smaller one, stays; together they are below `left`. A
        residual spread thinly over the whole graph (what a previous update left, within its
        budget) thus stays where it is, and a round pushes only where the change put residual.
        Every document picked must be `changed` before the next pick (a round pushes them).
        """
        mass = np.cumsum(np.maximum(self._mass, 0.0))
        cut = int(np.searchsorted(mass, left, side="right")) - 1  # largest group with mass <= left
        scanned = self._scanned_cut
        if (
            scanned is None
            or cut < scanned
            or self._touched_count > _FULL_ROUND_SHARE * len(self._size)
        ):
            self._scanned_cut = cut
            self._forget_touched()
            return np.flatnonzero(self._exponent > cut)
        candidates = np.concatenate(self._touched_list) if self._touched_list else _NO_DOCUMENTS
        self._touched_list = [candidates]
        return candidates[self._exponent.take(candidates) > cut]

    def _forget_touched(self) -> None:
        if self._touched_count > _FULL_ROUND_SHARE * len(self._touched):
            self._touched[:] = False
        else:
            for touched in self._touched_list:
                self._touched[touched] = False
        self._touched_list, self._touched_count = [], 0

    def changed(self, documents: IndexArray) -> None:
        """`documents` (distinct) hold other residuals now."""
        r_y, r_z = self._residuals
        old_size, old_exponent = self._size.take(documents), self._exponent.take(documents)
        size = np.abs(r_y.take(documents)) + np.abs(r_z.take(documents))
        exponent = _exponents(size)
        self._size[documents] = size
        self._exponent[documents] = exponent
        self._mass -= np.bincount(old_exponent, weights=old_size, minlength=_EXPONENT_BINS)
        self._mass += np.bincount(exponent, weights=size, minlength=_EXPONENT_BINS)
        self.total += float(size.sum()) - float(old_size.sum())
        fresh = documents[~self._touched.take(documents)]
        self._touched[fresh] = True
        self._touched_list.append(fresh)
        self._touched_count += len(fresh)


def _exponents(size: FloatArray) -> npt.NDArray[np.intp]:
    """Each size's binary exponent, from 0 (a zero size, and every size below 2**-1080) up."""
    exponent = np.frexp(size)[1].astype(np.intp) - _LOWEST_EXPONENT
    exponent[size == 0.0] = 0  # frexp gives 0 for 0.0, the exponent of values near 1
    return exponent


def _split(operator: _Operator, x: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Normalised `y` and `z` guessed from an EPR vector `x`: `x = y + c·z` with `c = d·D·x`, and
    `y = (1 − d)·z` when the teleport is uniform, so `z = x/(1 − d + c)`. Exact for a uniform
    teleport and the graph's own `x`; otherwise a start that the push corrects."""
    c = operator.damping * float(x.take(operator.dangling).sum())
    z = x / (1.0 - operator.damping + c)
    return x - c * z, z


def _combined(
    operator: _Operator, vectors: tuple[FloatArray, FloatArray]
) -> tuple[FloatArray, float]:
    """`T(x)` for `x = y + c·z` (see the module) and `‖T(x) − x‖₁`, on the real operator."""
    d, n = operator.damping, operator.n
    y, z = vectors
    # Sums over the dangling documents by gather, not a dot product: BLAS threads spin on a
    # busy machine for a product this short.
    dangling = operator.dangling
    c = d * float(y.take(dangling).sum()) / (1.0 - d * float(z.take(dangling).sum()))
    x = y + c * z
    following = operator.spread(x)
    following += (1.0 - d) / float(operator.raw.sum()) * operator.raw
    following += d * float(x.take(dangling).sum()) / n
    step = float(np.abs(following - x).sum())
    return following, step


def moved_state(state: ChannelState, moved: IndexArray, n: int) -> ChannelState:
    """`state` at a successor's positions (`moved[k]`: old document k's new position, -1 gone);
    a new document starts at its own source terms (Y at 1, the order of a raw teleport entry, and
    Z at 1)."""
    kept = moved >= 0
    y, z = np.ones(n), np.ones(n)
    y[moved[kept]] = state.y[kept]
    z[moved[kept]] = state.z[kept]
    return ChannelState(y, z)


try:  # scipy's compiled sparse kernels: private, stable for over a decade (see signed_pagerank)
    from scipy.sparse._sparsetools import coo_tocsr, csc_matvec
except ImportError:  # pragma: no cover - depends on the installed scipy

    def csc_matvec(
        rows: int,
        columns: int,
        indptr: npt.NDArray[np.int32],
        indices: npt.NDArray[np.int32],
        data: FloatArray,
        x: FloatArray,
        out: FloatArray,
    ) -> None:
        """`out += A·x` for the CSC arrays of A, through the public classes."""
        out += sp.csc_matrix((data, indices, indptr), shape=(rows, columns)) @ x

    def coo_tocsr(
        rows: int,
        columns: int,
        entries: int,
        row: npt.NDArray[np.int32],
        column: npt.NDArray[np.int32],
        data: FloatArray,
        indptr: npt.NDArray[np.int32],
        indices: npt.NDArray[np.int32],
        values: FloatArray,
    ) -> None:
        """The kernel's contract through the public classes (a stable conversion, duplicates
        kept)."""
        coordinates = sp.coo_matrix((data, (row, column)), shape=(rows, columns))
        coordinates.has_canonical_format = True
        converted = coordinates.tocsr()
        indptr[:] = converted.indptr
        indices[:entries] = converted.indices
        values[:entries] = converted.data


__all__ = [
    "BOOTSTRAP_PASSES",
    "CERTIFIED_SHARE",
    "TELEPORT_FLOOR",
    "UPDATE_PASSES",
    "ChannelState",
    "ChannelUpdate",
    "moved_state",
    "raw_teleport",
    "update_channel",
]
