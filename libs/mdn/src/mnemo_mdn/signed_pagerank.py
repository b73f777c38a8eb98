"""Signed Epistemic PageRank (spec §2): one PageRank over trust edges, one over distrust edges.

```
EPR⁺ = (1 − d)·u⁺ + d·(P⁺)ᵀ·EPR⁺      u⁺ ∝ 1/(depth + 1)
EPR⁻ = (1 − d)·u⁻ + d·(P⁻)ᵀ·EPR⁻      u⁻ ∝ recency
EPR  = EPR⁺ − λ·EPR⁻
```

Each channel is a sparse matrix built once with numpy (no Python loop over edges) and iterated with
one sparse mat-vec per pass. Each channel stops by its own L1 rule, exactly as the spec says: a
channel that has converged is not iterated further, since every extra pass moves its values.
"""

from __future__ import annotations

import itertools
import os
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from mnemo_mdn.epr_update import TELEPORT_FLOOR, ChannelState, raw_teleport, update_channel
from mnemo_mdn.graph import CorpusGraph, FloatArray, IndexArray
from mnemo_mdn.params import DEFAULT_PARAMS, MdnParams
from mnemo_mdn.relations import Polarity

# From this many edges on, each pass is split into row blocks computed by parallel threads (scipy's
# mat-vec and numpy's array loops release the GIL); below it a thread costs more than it saves.
_PARALLEL_MIN_EDGES: Final = 200_000
_MAX_BLOCKS: Final = 4
# Rows are ordered by in-degree, bucketed at this value so the sort key fits 16 bits (radix sort).
_DEGREE_BUCKETS: Final = 255
# How many vector updates one matrix entry costs, when splitting a pass into blocks of equal work.
_ENTRY_COST: Final = 3.0
# Rows a pass handles at a time: its vectors' slices (several arrays of 512 KB) stay in cache.
_ROWS_PER_STEP: Final = 65_536
#: Memo keys of EPR results start with this; a starting vector for one is memoised under
#: `WARM_START_PREFIX` + its key, or a callable that makes it (`incremental.carry_over` puts it
#: there).
EPR_MEMO_PREFIX: Final = "epr:"
WARM_START_PREFIX: Final = "warm-start:"
#: Under `STATE_PREFIX` + an EPR's key, a graph keeps the `States` an update of its EPR left (the
#: leaky solutions of `epr_update`); under `UPDATE_PREFIX` + the key, a successor holds its
#: predecessor's states at its own positions (`incremental.carry_over` puts them there), or
#: the predecessor's EPR⁺ and EPR⁻ vectors there (the states are then solved from them). A
#: channel's state is None once an update of it gave up: a change to that channel's graph reaches
#: most of it (an expander), where a warm power iteration costs less than a push, so its later
#: refreshes go straight to the warm start instead of paying for an update first.
STATE_PREFIX: Final = "epr-state:"
UPDATE_PREFIX: Final = "epr-update:"
States = tuple[ChannelState | None, ChannelState | None]  # EPR⁺'s and EPR⁻'s
ChannelStart = ChannelState | FloatArray | None

#: A warm start stops at this fraction of `tol` (see `_power_iteration`).
_WARM_TOL_FACTOR: Final = 0.1

Start = tuple[FloatArray, FloatArray]  # EPR⁺ and EPR⁻ to start from, in document order


@dataclass(frozen=True, slots=True, eq=False)
class EprResult:
    """EPR vectors in document order; `iterations` is the positive channel's count (spec §2)."""

    ids: tuple[str, ...]
    epr: FloatArray
    epr_plus: FloatArray
    epr_minus: FloatArray
    iterations: int
    iterations_minus: int

    def to_json(self) -> dict[str, object]:
        """`{"epr": {id: x}, "epr_plus": {...}, "epr_minus": {...}, "iterations": n}`."""
        return {
            "epr": dict(zip(self.ids, self.epr.tolist(), strict=True)),
            "epr_plus": dict(zip(self.ids, self.epr_plus.tolist(), strict=True)),
            "epr_minus": dict(zip(self.ids, self.epr_minus.tolist(), strict=True)),
            "iterations": self.iterations,
        }


def epr(graph: CorpusGraph, params: MdnParams = DEFAULT_PARAMS) -> EprResult:
    """Signed EPR of `graph` (memoised on the graph per damping, λ, tol and max_iter).

    When the graph holds its predecessor's update states for these parameters (`epr_update`,
    carried by `incremental.carry_over`), EPR is the predecessor's brought up to date by residual
    push, certified like a warm run; when that does not pay, or there are only the predecessor's
    EPR vectors (a warm start), each channel's power iteration starts from them instead of the
    uniform vector; the stop rule is the same.
    """
    key = epr_key(params)
    return graph.memo(key, lambda: _updated_or_computed(graph, params, key))


def epr_key(params: MdnParams) -> str:
    """The memo key of EPR at these parameters."""
    return (
        f"{EPR_MEMO_PREFIX}{params.damping!r}:{params.distrust_penalty!r}:{params.tol!r}"
        f":{params.max_iter}"
    )


def _updated_or_computed(graph: CorpusGraph, params: MdnParams, key: str) -> EprResult:
    updated = _updated(graph, params, key)
    if updated is not None:
        return updated
    return _compute(graph, params, _warm_start(graph, key))


def _updated(graph: CorpusGraph, params: MdnParams, key: str) -> EprResult | None:
    """EPR from the carried states, or None (no states: the caller computes it).

    Each channel is brought up to date by `epr_update` when it has a state; a channel without one
    (an earlier update of it gave up) or whose update gives up now is computed alone by a warm power
    iteration, and keeps no state for the next refresh. The states reached are kept either way."""
    carried = graph.memoised(UPDATE_PREFIX + key)
    if not isinstance(carried, tuple) or len(carried) != 2 or graph.n_documents == 0:
        return None
    if not all(start is None or isinstance(start, ChannelState | np.ndarray) for start in carried):
        return None
    if carried[0] is None and carried[1] is None:
        return None
    channels = []
    for polarity, start in zip((Polarity.POSITIVE, Polarity.NEGATIVE), carried, strict=True):
        update = (
            None
            if start is None
            else update_channel(graph, polarity, params.damping, params.tol, start)
        )
        channels.append(update)
    states: States = tuple(  # type: ignore[assignment]
        None if update is None or update.vector is None else update.state for update in channels
    )
    graph.memo(STATE_PREFIX + key, lambda: states)
    if all(state is None for state in states):
        return None  # the caller's warm start computes both channels (in parallel when large)
    vectors, iterations = [], []
    for index, (polarity, update) in enumerate(
        zip((Polarity.POSITIVE, Polarity.NEGATIVE), channels, strict=True)
    ):
        if update is not None and update.vector is not None:
            vectors.append(update.vector)
            iterations.append(update.rounds)
            continue
        warm = _warm_start(graph, key)
        vector, passes = _single_channel(
            graph, polarity, params, None if warm is None else warm[index]
        )
        vectors.append(vector)
        iterations.append(passes)
    plus, minus = vectors
    net = plus - params.distrust_penalty * minus
    for vector in (plus, minus, net):
        vector.setflags(write=False)
    return EprResult(
        ids=graph.ids,
        epr=net,
        epr_plus=plus,
        epr_minus=minus,
        iterations=iterations[0],
        iterations_minus=iterations[1],
    )


def _teleport(graph: CorpusGraph, polarity: Polarity) -> FloatArray:
    """The channel's teleport `u` (spec §2 step 1)."""
    floored = raw_teleport(graph, polarity)
    result: FloatArray = floored / floored.sum()
    return result


def _single_channel(
    graph: CorpusGraph, polarity: Polarity, params: MdnParams, start: FloatArray | None
) -> tuple[FloatArray, int]:
    """One channel by power iteration, its passes shared by threads on a large graph."""
    u = _teleport(graph, polarity)
    if graph.n_edges < _PARALLEL_MIN_EDGES:
        return _whole_channel(graph, polarity, u, params, start)
    blocks = max(1, min(_MAX_BLOCKS, os.cpu_count() or 1))
    with ThreadPoolExecutor(blocks, thread_name_prefix="mnemo-epr") as pool:
        return _power_iteration(
            _channel(graph, polarity, u, params.damping, blocks), params, pool, start
        )


def _warm_start(graph: CorpusGraph, key: str) -> Start | None:
    """The warm start carried for `key`: the vectors, or what moves them there when called."""
    start = graph.memoised(WARM_START_PREFIX + key)
    if callable(start):
        start = start()
    if not isinstance(start, tuple) or len(start) != 2:
        return None
    plus, minus = start
    n = graph.n_documents
    if not all(isinstance(v, np.ndarray) and v.shape == (n,) for v in (plus, minus)):
        return None
    return plus, minus


def teleport_vector(raw: FloatArray) -> FloatArray:
    """`f_k = max(raw_k, 0) + 1e-9`, divided by its sum (spec §2 step 1)."""
    floored = np.maximum(raw, 0.0) + TELEPORT_FLOOR
    result: FloatArray = floored / floored.sum()
    return result


@dataclass(frozen=True, slots=True)
class _Block:
    """Head positions `[start, stop)` of one pass and their matrix rows, computed by one thread."""

    start: int
    stop: int
    matrix: sp.csr_matrix  # d·Pᵀ rows of these positions, columns: head positions


@dataclass(frozen=True, slots=True)
class _Channel:
    """One polarity's iteration `next = (1 − d)·u + d·(dangling mass)/n + d·Pᵀ·x`, rearranged.

    The channel orders its documents: first the *head*, documents with an incoming edge, by
    decreasing in-degree (the mat-vec's inner loop then runs over predictably sized rows, about
    twice as fast on heavy-tailed graphs); then the *tail*, documents without one. Within each,
    documents with an outgoing edge come before dangling ones, so dangling mass sums two slices.

    A tail document only ever receives `(1 − d)·u_i + share_t` (`share_t` = d·dangling mass/n of
    pass t), so after the first pass the whole tail is `teleport + b` for one number `b`: it is not
    stored, and its edges enter the head through two fixed vectors, `Pᵀ_tail·teleport_tail` and
    `Pᵀ_tail·1`. Each pass then costs the head only; in exact arithmetic the iterates, the deltas
    and hence the stop are those of the plain iteration.
    """

    n: int
    damping: float
    order: IndexArray  # order[p]: the document at position p
    head: int  # positions [0, head) have incoming edges
    teleport: FloatArray  # (1 − d)·u, in channel order
    from_tail_teleport: FloatArray  # per head row: Σ over tail sources of d·P·teleport
    from_tail_unit: FloatArray  # per head row: Σ over tail sources of d·P
    head_dangling: slice
    tail_dangling: slice
    blocks: tuple[_Block, ...]  # tile the head


def _compute(graph: CorpusGraph, params: MdnParams, start: Start | None = None) -> EprResult:
    n = graph.n_documents
    if n == 0:
        empty = np.zeros(0, dtype=np.float64)
        return EprResult(graph.ids, empty, empty, empty, iterations=0, iterations_minus=0)
    d = params.damping
    u_plus = _teleport(graph, Polarity.POSITIVE)
    u_minus = _teleport(graph, Polarity.NEGATIVE)
    if graph.n_edges >= _PARALLEL_MIN_EDGES:
        blocks = max(1, min(_MAX_BLOCKS, os.cpu_count() or 1))
    else:
        blocks = 1
    start_plus, start_minus = start if start is not None else (None, None)
    if blocks == 1:
        positive = _channel(graph, Polarity.POSITIVE, u_plus, d, blocks)
        negative = _channel(graph, Polarity.NEGATIVE, u_minus, d, blocks)
        plus, plus_iterations = _power_iteration(positive, params, None, start_plus)
        minus, minus_iterations = _power_iteration(negative, params, None, start_minus)
    else:
        # The smaller channel (fewer edges; usually distrust) is built and iterated whole by a
        # worker while this thread builds the larger one, whose passes the threads then share.
        polarity = graph.edge_polarity
        negative_is_smaller = np.count_nonzero(polarity == Polarity.NEGATIVE) <= np.count_nonzero(
            polarity == Polarity.POSITIVE
        )
        with ThreadPoolExecutor(blocks - 1, thread_name_prefix="mnemo-epr") as pool:
            if negative_is_smaller:
                smaller = pool.submit(
                    _whole_channel, graph, Polarity.NEGATIVE, u_minus, params, start_minus
                )
                positive = _channel(graph, Polarity.POSITIVE, u_plus, d, blocks)
                minus, minus_iterations = smaller.result()
                plus, plus_iterations = _power_iteration(positive, params, pool, start_plus)
            else:
                smaller = pool.submit(
                    _whole_channel, graph, Polarity.POSITIVE, u_plus, params, start_plus
                )
                negative = _channel(graph, Polarity.NEGATIVE, u_minus, d, blocks)
                plus, plus_iterations = smaller.result()
                minus, minus_iterations = _power_iteration(negative, params, pool, start_minus)

    net = plus - params.distrust_penalty * minus
    for vector in (plus, minus, net):
        vector.setflags(write=False)
    return EprResult(
        ids=graph.ids,
        epr=net,
        epr_plus=plus,
        epr_minus=minus,
        iterations=plus_iterations,
        iterations_minus=minus_iterations,
    )


def _whole_channel(
    graph: CorpusGraph,
    polarity: Polarity,
    u: FloatArray,
    params: MdnParams,
    start: FloatArray | None,
) -> tuple[FloatArray, int]:
    """One channel built and iterated in one block by the calling thread."""
    return _power_iteration(_channel(graph, polarity, u, params.damping, 1), params, None, start)


def _channel(
    graph: CorpusGraph, polarity: Polarity, u: FloatArray, d: float, block_count: int
) -> _Channel:
    n = graph.n_documents
    # Indexes and `take` rather than boolean masks: a mask over millions of randomly mixed edges
    # costs about eight times as much per column (measured, bench/README.md).
    selected = np.flatnonzero(graph.edge_polarity == polarity)
    source = graph.edge_source.take(selected)
    target = graph.edge_target.take(selected)
    weight = graph.edge_weight.take(selected)
    del selected

    # Weights are >= 1e-9, so the row sum of an edge's source is never zero. (bincount answers
    # integers when there is no edge at all, hence the cast.)
    out_weight = np.bincount(source, weights=weight, minlength=n).astype(np.float64, copy=False)
    scaled = out_weight.take(source)  # becomes d·w/row sum in place: one array of edge length
    np.divide(d, scaled, out=scaled)
    scaled *= weight
    del weight

    in_degree = np.bincount(target, minlength=n)
    # One 16-bit key, sorted stably by radix sort in linear time: part (head or tail, with
    # outgoing edges or dangling), then decreasing in-degree (bucketed at 255).
    part = (in_degree == 0).astype(np.uint16) * 2 + (out_weight == 0.0)
    key = part * 256 + (_DEGREE_BUCKETS - np.minimum(in_degree, _DEGREE_BUCKETS)).astype(np.uint16)
    order = np.argsort(key, kind="stable")
    del key, in_degree
    position = np.empty(n, dtype=np.int32)
    position[order] = np.arange(n, dtype=np.int32)
    bounds = np.concatenate(([0], np.cumsum(np.bincount(part, minlength=4)))).tolist()
    head = bounds[2]
    teleport = (1.0 - d) * u[order]

    row = position.take(target)
    del target
    column = position.take(source)
    del source
    from_tail = np.flatnonzero(column >= head)
    tail_rows, tail_scaled = row.take(from_tail), scaled.take(from_tail)
    from_tail_unit = np.bincount(tail_rows, weights=tail_scaled, minlength=head)
    tail_scaled *= teleport.take(column.take(from_tail))
    from_tail_teleport = np.bincount(tail_rows, weights=tail_scaled, minlength=head)
    del tail_rows, tail_scaled
    # Edges from the tail go to one extra row past the head, which the matrix leaves out: no pass
    # cuts the head's edges out of the columns.
    row[from_tail] = head
    del from_tail
    matrix = _head_matrix(row, column, scaled, head, n)
    del scaled, row, column
    return _Channel(
        n=n,
        damping=d,
        order=order,
        head=head,
        teleport=teleport,
        from_tail_teleport=from_tail_teleport.astype(np.float64, copy=False),
        from_tail_unit=from_tail_unit.astype(np.float64, copy=False),
        head_dangling=slice(bounds[1], bounds[2]),
        tail_dangling=slice(bounds[3], bounds[4]),
        blocks=_blocks(matrix, block_count),
    )


def _head_matrix(
    row: npt.NDArray[np.int32],
    column: npt.NDArray[np.int32],
    data: FloatArray,
    head: int,
    n: int,
) -> sp.csr_matrix:
    """The `head × head` CSR matrix of the entries whose row is below `head` (row `head` holds
    the rest), in the order given within each row.

    Parallel edges add up (spec §2 step 2): the mat-vec sums duplicate entries by itself, so the
    conversion skips the canonicalising pass (a sort of every row), most of the build time. The
    conversion is scipy's counting sort by row, writing into arrays allocated here.
    """
    entries = len(row)
    indptr = np.empty(head + 2, dtype=np.int32)
    indices = np.empty(entries, dtype=np.int32)
    values = np.empty(entries, dtype=np.float64)
    _coo_tocsr(head + 1, n, entries, row, column, data, indptr, indices, values)
    kept = int(indptr[head])
    return sp.csr_matrix(
        (values[:kept], indices[:kept], indptr[: head + 1]), shape=(head, head), copy=False
    )


def _blocks(matrix: sp.csr_matrix, count: int) -> tuple[_Block, ...]:
    """Tile the head `[0, rows)` with at most `count` blocks of about equal work.

    Work counts each position once (its vector updates) and each matrix entry a few times (a
    random read of `x`). Each block's matrix is a view of the full matrix's arrays.
    """
    rows = matrix.shape[0]
    if count == 1 or rows < count:
        return (_Block(0, rows, matrix),)
    indptr = matrix.indptr
    work = indptr * _ENTRY_COST + np.arange(rows + 1)
    cuts = np.searchsorted(work, np.arange(1, count) * (work[-1] / count))
    bounds = sorted({0, rows, *np.clip(cuts, 1, rows - 1).tolist()})
    blocks = []
    for start, stop in itertools.pairwise(bounds):
        first_entry, end_entry = int(indptr[start]), int(indptr[stop])
        block_matrix = sp.csr_matrix(
            (
                matrix.data[first_entry:end_entry],
                matrix.indices[first_entry:end_entry],
                indptr[start : stop + 1] - first_entry,
            ),
            shape=(stop - start, rows),
            copy=False,
        )
        blocks.append(_Block(start, stop, block_matrix))
    return tuple(blocks)


def _power_iteration(
    channel: _Channel, params: MdnParams, pool: Executor | None, start: FloatArray | None = None
) -> tuple[FloatArray, int]:
    """Spec §2 step 3: from `x = 1/n`, at most `max_iter` passes, stop when `Σ|next − x| < tol`.

    The tail is `tail_scale·teleport + tail_shift`: uniform `1/n` before the first pass, then
    `teleport + share` of the last pass. Returns the vector in document order.

    A warm `start` (document order, summing to 1) replaces `1/n`: the head starts at its values,
    the tail at `teleport + shift` with the shift its mean distance from the teleport (the tail of a
    converged vector has exactly that form, so a start taken from a nearby graph is close to it).
    A warm run stops at a tenth of `tol`: the L1 map is a contraction by `d`, so a run stopped at
    a pass moving it by δ is within `d/(1 − d)·δ` of the fixed point, and a warm and a cold run then
    differ by at most `1.1·d/(1 − d)·tol` per channel: for EPR at the defaults, `1.1·1.5·5.7e-10 <
    1e-9`, the spec's precision. A warm run that has not converged within `max_iter` passes is
    redone from `1/n`.
    """
    tol = params.tol if start is None else params.tol * _WARM_TOL_FACTOR
    n, d, head = channel.n, channel.damping, channel.head
    tail_teleport = channel.teleport[head:]
    tail_size = n - head
    dangling_tail_teleport = float(channel.teleport[channel.tail_dangling].sum())
    dangling_tail_size = channel.tail_dangling.stop - channel.tail_dangling.start
    # Head base once the tail is `teleport + shift`: own teleport plus what the tail's teleport
    # part sends along tail → head edges.
    settled_base = channel.teleport[:head] + channel.from_tail_teleport

    if start is None:
        x = np.full(head, 1.0 / n)
        tail_scale, tail_shift = 0.0, 1.0 / n
    else:
        ordered = start.take(channel.order)
        x = ordered[:head].copy()
        tail_scale = 1.0
        tail_shift = float((ordered[head:] - tail_teleport).mean()) if tail_size else 0.0
    following = np.empty(head)
    difference = np.empty(head)
    first, *others = channel.blocks
    iteration, share = 0, 0.0
    for iteration in range(1, params.max_iter + 1):  # noqa: B007 (the count is the result)
        dangling_mass = (
            float(x[channel.head_dangling].sum())
            + tail_scale * dangling_tail_teleport
            + tail_shift * dangling_tail_size
        )
        share = d * dangling_mass / n
        base = settled_base if tail_scale else channel.teleport[:head]
        step = (channel, x, following, difference, base, share, tail_shift)
        if pool is None:
            delta = sum(_advance(block, *step) for block in channel.blocks)
        else:
            pending = [pool.submit(_advance, block, *step) for block in others]
            delta = _advance(first, *step) + sum(future.result() for future in pending)
        if tail_scale:
            delta += tail_size * abs(share - tail_shift)
        else:
            delta += float(np.abs(tail_teleport + (share - tail_shift)).sum())
        x, following = following, x
        tail_scale, tail_shift = 1.0, share
        if delta < tol:
            break
    else:
        if start is not None:
            # A warm start can excite a slowly decaying mode (a near-periodic part of the graph)
            # that the uniform start leaves alone: not converged, so the spec's cold run decides.
            return _power_iteration(channel, params, pool, None)
    in_channel_order = np.concatenate([x, tail_teleport + share])
    in_document_order = np.empty(n)
    in_document_order[channel.order] = in_channel_order
    return in_document_order, iteration


def _advance(
    block: _Block,
    channel: _Channel,
    x: FloatArray,
    following: FloatArray,
    difference: FloatArray,
    base: FloatArray,
    share: float,
    tail_shift: float,
) -> float:
    """Write one block of the next head; return its part of `Σ|next − x|`.

    The block goes in steps of `_ROWS_PER_STEP` rows: the vector operations around each step's
    product then run over arrays that are still in the core's cache.
    """
    total = 0.0
    for first in range(block.start, block.stop, _ROWS_PER_STEP):
        last = min(first + _ROWS_PER_STEP, block.stop)
        segment = following[first:last]
        np.multiply(channel.from_tail_unit[first:last], tail_shift, out=segment)
        segment += base[first:last]
        segment += share
        _add_product(block.matrix, first - block.start, x, segment)
        gap = difference[first:last]
        np.subtract(segment, x[first:last], out=gap)
        np.abs(gap, out=gap)
        total += float(gap.sum())
    return total


def _add_product_with_scipy(
    matrix: sp.csr_matrix, first_row: int, x: FloatArray, out: FloatArray
) -> None:
    """`out += rows [first_row, first_row + len(out)) of matrix @ x`, through the public classes."""
    out += matrix[first_row : first_row + len(out)] @ x


def _add_product_in_place(
    matrix: sp.csr_matrix, first_row: int, x: FloatArray, out: FloatArray
) -> None:
    """The same with no allocation: scipy's CSR kernel adds each row's products to `out`.

    The public `matrix @ x` allocates a zeroed result every pass; at a million documents that is
    fresh pages the kernel must fault in, about a fifth of the pass (bench/README.md). The kernel
    sums the same products in the same row order, starting from `out` instead of from zero; a
    slice of the row pointers selects the rows (they index the whole entry arrays).
    """
    rows = len(out)
    pointers = matrix.indptr[first_row : first_row + rows + 1]
    _csr_matvec(rows, matrix.shape[1], pointers, matrix.indices, matrix.data, x, out)


def _coo_tocsr_with_scipy(
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
    """The kernel's contract through the public classes (a stable conversion, duplicates kept)."""
    coordinates = sp.coo_matrix((data, (row, column)), shape=(rows, columns))
    coordinates.has_canonical_format = True
    converted = coordinates.tocsr()
    indptr[:] = converted.indptr
    indices[:entries] = converted.indices
    values[:entries] = converted.data


try:  # scipy's compiled CSR kernels: private, stable for over a decade; the public classes otherwise
    from scipy.sparse._sparsetools import coo_tocsr as _coo_tocsr
    from scipy.sparse._sparsetools import csr_matvec as _csr_matvec
except ImportError:  # pragma: no cover - depends on the installed scipy
    _add_product = _add_product_with_scipy
    _coo_tocsr = _coo_tocsr_with_scipy
else:
    _add_product = _add_product_in_place
