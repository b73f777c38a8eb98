"""A small change to a graph made cheap: what a successor graph can take over from its predecessor.

A cached graph refreshed from a few changed rows is a new `CorpusGraph`, and everything derived from
it would be computed again for the whole graph: the term index (tokenising every text) and signed
EPR (a power iteration from the uniform vector). `carry_over` hands the successor what it can reuse,
given a `GraphChange` (where each old document went, and which documents are new or changed):

- the term index, updated: only the changed documents are tokenised; the other documents' postings
  stay where they are, as layers (`relevance.Postings`: the earlier lists, where their documents
  are now, and the changed documents' lists), folded into plain lists once the layers hold an
  eighth of the entries. The result equals a rebuild term by term (same documents, counts, title
  postings, lengths, average length); only the row numbers of terms may differ, and a term no
  document holds any more stays with empty postings (a rebuild leaves it out: both answer
  document frequency 0).
- a warm start for EPR: each EPR the predecessor computed becomes the starting vector of the same
  computation on the successor (`signed_pagerank.epr` reads it; moved to the successor's positions
  only when read, when there are update states that will most likely make it unneeded). It stops at a tenth of `tol`, so
  at the default parameters the result is within 1e-9 of a cold run (`_power_iteration` gives the
  bound), in fewer passes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import partial
from typing import Final

import numpy as np
import numpy.typing as npt

from mnemo_mdn.epr_update import ChannelState, moved_state
from mnemo_mdn.graph import INDEX_MEMO, AscendingIndex, CorpusGraph, FloatArray, IndexArray
from mnemo_mdn.relevance import TERMS_MEMO, Postings, TermIndex, has_bodies, text_pairs
from mnemo_mdn.signed_pagerank import (
    EPR_MEMO_PREFIX,
    STATE_PREFIX,
    UPDATE_PREFIX,
    WARM_START_PREFIX,
    EprResult,
    States,
)
from mnemo_mdn.tokenization import many_token_lists

# Past this share of changed documents an update costs about what a rebuild does: rebuild.
_MAX_CHANGED_SHARE: Final = 0.25
# Kept documents whose ids are compared, beyond the changed ones, to catch a mismatched change.
_SAMPLED_IDS: Final = 64
# Up to this many new postings entries are placed one binary search each; past it, by one search
# over keys made for every entry.
_LOOPED_INSERTS: Final = 4096
# Layered postings are folded into plain lists past this share of added entries or gone documents.
_LAYER_SHARE: Final = 0.125
_EMPTY: Final = Postings(
    np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32)
)


@dataclass(frozen=True, slots=True, eq=False)
class GraphChange:
    """How the documents of a graph map onto its successor's.

    `moved[k]`: the successor's position of old document k (-1: it left). `changed`: successor
    positions whose title or body is new or may differ, added documents included. Every other
    successor document is an old one with the same id, title and body.
    """

    moved: IndexArray
    changed: IndexArray


def carry_over(previous: CorpusGraph, graph: CorpusGraph, change: GraphChange) -> CorpusGraph:
    """Seed `graph`'s memos from `previous` (see the module's docstring); returns `graph`.

    Nothing is carried when the change does not fit the two graphs (lengths, positions out of range
    or out of order, sampled ids that differ): `graph` then computes everything from scratch.
    """
    kept = _checked(previous, graph, change)
    if kept is None or graph.n_documents == 0:
        return graph  # nothing fits, or nothing to seed (an empty scope's EPR has no start)
    old_index = previous.memoised(INDEX_MEMO)
    if isinstance(old_index, AscendingIndex) and isinstance(graph.index, AscendingIndex):
        graph.index.carry(old_index, change.moved)
    old_terms = previous.memoised(TERMS_MEMO)
    if isinstance(old_terms, TermIndex) and graph.memoised(TERMS_MEMO) is None:
        updated = updated_term_index(old_terms, graph, change, kept)
        if updated is not None:
            graph.memo(TERMS_MEMO, lambda: updated)
    small = len(np.unique(change.changed)) <= _MAX_CHANGED_SHARE * graph.n_documents
    for key, value in previous.memo_items():
        if key.startswith(EPR_MEMO_PREFIX) and isinstance(value, EprResult):
            moved_start = partial(_moved_start, value, change.moved, kept, graph.n_documents)
            states = (
                _moved_states(previous.memoised(STATE_PREFIX + key), change.moved, graph)
                if small
                else None
            )
            if states is not None:
                # The update will most likely settle: the warm start is moved only if it gives up.
                graph.memo(UPDATE_PREFIX + key, lambda states=states: states)  # type: ignore[misc]
                graph.memo(WARM_START_PREFIX + key, lambda lazy=moved_start: lazy)  # type: ignore[misc]
                continue
            start = moved_start()
            graph.memo(WARM_START_PREFIX + key, lambda start=start: start)  # type: ignore[misc]
            if small:
                graph.memo(UPDATE_PREFIX + key, lambda start=start: start)  # type: ignore[misc]
    return graph


def carry_epr(previous: CorpusGraph, graph: CorpusGraph) -> CorpusGraph:
    """Each EPR of `previous` as a warm start of `graph`, the same documents with other weights
    (memory's reinforcement); returns `graph`. Nothing when the documents differ."""
    if previous.ids is not graph.ids and previous.ids != graph.ids:
        return graph
    same = np.arange(graph.n_documents, dtype=np.int64)
    for key, value in previous.memo_items():
        if key.startswith(EPR_MEMO_PREFIX) and isinstance(value, EprResult):
            start = (value.epr_plus, value.epr_minus)
            graph.memo(WARM_START_PREFIX + key, lambda start=start: start)  # type: ignore[misc]
            states = _moved_states(previous.memoised(STATE_PREFIX + key), same, graph)
            update = start if states is None else states
            graph.memo(UPDATE_PREFIX + key, lambda update=update: update)  # type: ignore[misc]
    return graph


def _moved_states(states: object, moved: IndexArray, graph: CorpusGraph) -> States | None:
    """The predecessor's update states at `graph`'s positions; None when it has none (the
    successor's update then starts from its EPR vectors). A channel whose update gave up stays
    without a state (its refreshes start warm)."""
    if not isinstance(states, tuple) or len(states) != 2:
        return None
    if not all(state is None or isinstance(state, ChannelState) for state in states):
        return None
    n = graph.n_documents
    plus, minus = (None if state is None else moved_state(state, moved, n) for state in states)
    return plus, minus


def _checked(
    previous: CorpusGraph, graph: CorpusGraph, change: GraphChange
) -> npt.NDArray[np.bool_] | None:
    """Which old documents stay (a mask), or None when the change does not fit the graphs."""
    n_old, n_new = previous.n_documents, graph.n_documents
    moved, changed = change.moved, change.changed
    if moved.shape != (n_old,) or changed.ndim != 1:
        return None
    if len(changed) and (int(changed.min()) < 0 or int(changed.max()) >= n_new):
        return None
    kept = moved >= 0
    targets = moved[kept]
    if len(targets) and (int(targets.max()) >= n_new or bool((np.diff(targets) <= 0).any())):
        return None  # out of range, or not in the same order (the postings rely on it)
    covered = np.zeros(n_new, dtype=np.bool_)
    covered[targets] = True
    covered[changed] = True
    if not covered.all():
        return None
    sources = np.flatnonzero(kept)
    unchanged = ~np.isin(targets, changed)
    sample = sources[unchanged]
    if len(sample) > _SAMPLED_IDS:
        picks = sorted(random.Random(n_new).sample(range(len(sample)), _SAMPLED_IDS))
        sample = np.concatenate((sample[:1], sample[picks], sample[-1:]))
    for k in sample.tolist():
        if previous.ids[k] != graph.ids[int(moved[k])]:
            return None
    return kept


def updated_term_index(
    old: TermIndex, graph: CorpusGraph, change: GraphChange, kept: npt.NDArray[np.bool_]
) -> TermIndex | None:
    """`old` (the predecessor's term index) brought to `graph`; None when a rebuild is as cheap
    or the two differ in kind (one has bodies, the other none)."""
    n = graph.n_documents
    changed = np.unique(change.changed)
    if len(changed) > _MAX_CHANGED_SHARE * max(n, 1):
        return None
    with_bodies = has_bodies(graph)
    if with_bodies != (old.title_postings is not old.postings):
        return None
    texts = text_pairs(
        [graph.titles[k] for k in changed.tolist()],
        [graph.bodies[k] for k in changed.tolist()] if with_bodies else None,
    )
    found = many_token_lists(texts)
    terms = old.terms
    local_to_global = np.empty(len(found.terms), dtype=np.int64)
    for local, word in enumerate(found.terms):
        row = terms.get(word)
        if row is None:
            if terms is old.terms:
                terms = dict(old.terms)  # the predecessor's index stays as it was
            row = len(terms)
            terms[word] = row
        local_to_global[local] = row
    n_terms = len(terms)
    term = (
        local_to_global.take(found.term).astype(np.int64, copy=False)
        if len(found.term)
        else np.zeros(0, dtype=np.int64)
    )
    which = found.text // 2 if with_bodies else found.text
    document = changed.take(which) if len(which) else np.zeros(0, dtype=np.int64)

    # Old document -> new position, with the changed documents' old entries dropped too.
    target = np.where(kept, change.moved, -1)
    target[kept] = np.where(np.isin(change.moved[kept], changed), -1, change.moved[kept])
    postings = _layered(old.postings, target, *_counted(term, document, n), n_terms, n)
    in_title = np.flatnonzero(found.text % 2 == 0) if with_bodies else None
    title_rows, title_columns, title_counts = (
        _counted(term.take(in_title), document.take(in_title), n)
        if in_title is not None
        else _counted(term, document, n)
    )
    if with_bodies:
        title_postings = _layered(
            old.title_postings, target, title_rows, title_columns, title_counts, n_terms, n
        )
    else:
        title_postings = postings
    stays = target >= 0
    lengths = np.zeros(n, dtype=np.float64)
    lengths[target[stays]] = old.lengths[stays]
    lengths[changed] = np.bincount(which, minlength=len(changed)).astype(np.float64)
    title_terms = np.zeros(n, dtype=np.int64)
    title_terms[target[stays]] = old.title_terms[stays]
    title_terms += np.bincount(title_columns, minlength=n)
    average = float(lengths.mean()) if n else 0.0
    return TermIndex(n, terms, postings, title_postings, lengths, average, title_terms)


def _counted(
    term: IndexArray, document: IndexArray, n_documents: int
) -> tuple[IndexArray, IndexArray, npt.NDArray[np.int32]]:
    """Occurrences as distinct (term row, document) pairs in that order, each with its count."""
    if not len(term):
        nothing = np.zeros(0, dtype=np.int64)
        return nothing, nothing, np.zeros(0, dtype=np.int32)
    keys, counts = np.unique(term * n_documents + document, return_counts=True)
    rows = keys // n_documents
    return rows, keys - rows * n_documents, counts.astype(np.int32)


def _layered(
    old: Postings,
    target: IndexArray,
    rows: IndexArray,
    columns: IndexArray,
    counts: npt.NDArray[np.int32],
    n_terms: int,
    n_documents: int,
) -> Postings:
    """`old` brought to the successor as layers (`relevance.Postings`): its earlier lists kept as
    they are, their documents' positions composed with `target` (one gather over the documents),
    and the added lists moved and extended by the new entries (`rows`, `columns`, `counts`). Once
    the layers hold `_LAYER_SHARE` of the lists, or that share of the documents left them, they
    are folded into plain lists (a pass over every entry, paid once per that many changes)."""
    if old.moved is None:
        base, moved, added = old, target, _EMPTY
    else:
        moved = np.where(old.moved >= 0, target.take(np.maximum(old.moved, 0)), -1)
        base, added = old, old.added if old.added is not None else _EMPTY
    added = _moved_postings(added, target, rows, columns, counts, n_terms, n_documents)
    layered = Postings(base.starts, base.documents, base.counts, moved, added)
    gone = np.count_nonzero(moved < 0)
    if added.entries > _LAYER_SHARE * max(len(base.documents), 1) or gone > _LAYER_SHARE * max(
        len(moved), 1
    ):
        return _folded(layered, n_terms, n_documents)
    return layered


def _folded(layered: Postings, n_terms: int, n_documents: int) -> Postings:
    """A layered `Postings` as plain lists: the earlier entries moved, the added ones placed."""
    plain = Postings(layered.starts, layered.documents, layered.counts)
    added = layered.added if layered.added is not None else _EMPTY
    moved = layered.moved if layered.moved is not None else np.arange(n_documents)
    rows = np.repeat(np.arange(len(added.starts) - 1, dtype=np.int64), np.diff(added.starts))
    return _moved_postings(
        plain, moved, rows, added.documents.astype(np.int64), added.counts, n_terms, n_documents
    )


def _moved_postings(
    old: Postings,
    target: IndexArray,
    rows: IndexArray,
    columns: IndexArray,
    added: npt.NDArray[np.int32],
    n_terms: int,
    n_documents: int,
) -> Postings:
    """`old` (plain lists) with each entry's document moved to `target[document]` (entries of -1
    dropped), plus the entries (`rows[j]`, `columns[j]`) counted `added[j]`: distinct, ascending by
    row then column, none at a document an old entry of its row is moved to.

    `target` keeps the order of the documents it keeps, so each term's kept documents stay
    ascending. The work per entry is one gather and one comparison in numpy; dropped and new
    entries (a few, when little changed) are placed by binary searches.
    """
    old_rows = len(old.starts) - 1
    documents = target.take(old.documents) if len(old.documents) else np.zeros(0, np.int64)
    counts, starts = old.counts, old.starts
    dropped = np.flatnonzero(documents < 0)
    if len(dropped):
        starts = starts - np.searchsorted(dropped, starts)
        documents, counts = np.delete(documents, dropped), np.delete(counts, dropped)
    if n_terms > old_rows:
        starts = np.concatenate((starts, np.full(n_terms - old_rows, starts[-1], dtype=np.int64)))
    if len(rows):
        if len(rows) <= _LOOPED_INSERTS:
            at: IndexArray = np.array(
                [
                    first + int(np.searchsorted(documents[first:last], column))
                    for first, last, column in zip(
                        starts.take(rows).tolist(),
                        starts.take(rows + 1).tolist(),
                        columns.tolist(),
                        strict=True,
                    )
                ],
                dtype=np.int64,
            )
        else:
            row_of = np.repeat(np.arange(n_terms, dtype=np.int64), np.diff(starts))
            keys = rows * n_documents + columns
            at = np.asarray(np.searchsorted(row_of * n_documents + documents, keys), np.int64)
        documents = np.insert(documents, at, columns)
        counts = np.insert(counts, at, added.astype(np.int32))
        starts = starts + np.concatenate(([0], np.cumsum(np.bincount(rows, minlength=n_terms))))
    return Postings(
        starts.astype(np.int64, copy=False),
        documents.astype(np.int32, copy=False),
        counts.astype(np.int32, copy=False),
    )


def _moved_start(
    result: EprResult, moved: IndexArray, kept: npt.NDArray[np.bool_], n: int
) -> tuple[FloatArray, FloatArray]:
    """The predecessor's EPR⁺ and EPR⁻ at the successor's positions; a new document starts at
    `1/n`; each vector is scaled to sum 1."""
    starts = []
    for vector in (result.epr_plus, result.epr_minus):
        start = np.full(n, 1.0 / n)
        start[moved[kept]] = vector[kept]
        start /= start.sum()
        starts.append(start)
    return starts[0], starts[1]


__all__ = ["GraphChange", "carry_epr", "carry_over", "updated_term_index"]
