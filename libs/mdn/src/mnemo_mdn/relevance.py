"""Lexical relevance (spec §4.2): term index, idf, BM25 normalised to [0, 1], query-term coverage.

Only the query's terms matter to relevance and to information gain, so a query is reduced to a small
view: the documents containing at least one query term (the candidates) and, for each, which query
terms it contains. Every per-step computation then runs over that view, not over the whole graph.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from mnemo_mdn.edge_classification import FUNCTION_WORDS, QUALIFIER
from mnemo_mdn.graph import STRUCTURAL_MEMO_PREFIX, CorpusGraph, FloatArray, IndexArray
from mnemo_mdn.params import MdnParams
from mnemo_mdn.tokenization import many_token_lists, token_list, tokens

BoolMatrix = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True, eq=False)
class Postings:
    """Inverted lists in compressed rows: `documents[starts[t]:starts[t + 1]]` (ascending) hold
    term t, `counts` (same slice) how often.

    A refreshed graph's lists may be *layered* (`mnemo_mdn.incremental`): the rows above are then
    an earlier graph's, at its positions; `moved[k]` is where that graph's document k is now (-1:
    gone, or changed and listed again in `added`), and `added` holds the lists of the documents
    changed since, at the current positions. A refresh then costs its changed documents plus one
    gather over the documents, not one over every entry; a term's list is put together when read.
    """

    starts: IndexArray
    documents: npt.NDArray[np.int32]
    counts: npt.NDArray[np.int32]
    moved: IndexArray | None = None
    added: Postings | None = None

    @classmethod
    def of(
        cls,
        term: npt.NDArray[np.int32],
        document: npt.NDArray[np.int32],
        n_terms: int,
        n_documents: int,
    ) -> Postings:
        """Group occurrences (in document order) by term, counting repeats within a document.

        A sparse (term × document) matrix of ones: the CSR conversion is a stable counting sort,
        so each term's documents stay ascending, and summing duplicates counts the repeats.
        """
        matrix = sp.coo_matrix(
            (np.ones(len(term), dtype=np.int32), (term, document)), shape=(n_terms, n_documents)
        ).tocsr()
        matrix.sum_duplicates()
        return cls(
            matrix.indptr.astype(np.int64, copy=False),
            matrix.indices.astype(np.int32, copy=False),
            matrix.data.astype(np.int32, copy=False),
        )

    @property
    def layered(self) -> bool:
        return self.moved is not None

    @property
    def entries(self) -> int:
        """Stored entries, the layers' included (a layered index's size, not its lists')."""
        added = 0 if self.added is None else self.added.entries
        return len(self.documents) + added

    @property
    def nbytes(self) -> int:
        arrays = self.starts.nbytes + self.documents.nbytes + self.counts.nbytes
        moved = 0 if self.moved is None else self.moved.nbytes
        added = 0 if self.added is None else self.added.nbytes
        return int(arrays + moved + added)

    def documents_of(self, term: int) -> npt.NDArray[np.int32]:
        if self.moved is None:
            return self.documents[self.starts[term] : self.starts[term + 1]]
        return self._merged(self.moved, term)[0]

    def counts_of(self, term: int) -> npt.NDArray[np.int32]:
        if self.moved is None:
            return self.counts[self.starts[term] : self.starts[term + 1]]
        return self._merged(self.moved, term)[1]

    def length_of(self, term: int) -> int:
        """How many documents hold `term`."""
        if self.moved is None:
            return int(self.starts[term + 1] - self.starts[term])
        return len(self._merged(self.moved, term)[0])

    def per_document(self, n_documents: int) -> npt.NDArray[np.int64]:
        """How many terms each document holds."""
        if self.moved is None:
            return np.bincount(self.documents, minlength=n_documents)
        moved = self.moved.take(self.documents)
        result = np.bincount(moved[moved >= 0], minlength=n_documents)
        if self.added is not None:
            result += np.bincount(self.added.documents, minlength=n_documents)
        return result

    def _merged(
        self, moved: IndexArray, term: int
    ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]:
        """One term's list of a layered index: the earlier lists' entries still in place, at their
        positions now (`moved` keeps their order), and the added ones, merged ascending."""
        if term + 1 < len(self.starts):
            first, last = int(self.starts[term]), int(self.starts[term + 1])
            documents = moved.take(self.documents[first:last])
            kept = documents >= 0
            documents, counts = documents[kept], self.counts[first:last][kept]
        else:  # a term the earlier graph did not hold
            documents, counts = np.zeros(0, dtype=np.int64), _NOWHERE
        added = self.added
        if added is not None and term + 1 < len(added.starts):
            first, last = int(added.starts[term]), int(added.starts[term + 1])
            if last > first:
                documents = np.concatenate((documents, added.documents[first:last]))
                counts = np.concatenate((counts, added.counts[first:last]))
                order = np.argsort(documents, kind="stable")
                documents, counts = documents.take(order), counts.take(order)
        return documents.astype(np.int32, copy=False), counts.astype(np.int32, copy=False)


_NOWHERE = np.zeros(0, dtype=np.int32)


@dataclass(frozen=True, slots=True, eq=False)
class TermIndex:
    """Inverted lists over `T(d) = tokens(title) ∪ tokens(body)`, plus title-only lists (parity)."""

    n_documents: int
    terms: dict[str, int]  # every token of the corpus → its row in the postings
    postings: Postings  # documents whose title or body has the term, and its count there
    title_postings: Postings  # documents whose title has the term
    lengths: FloatArray  # tokens per document, title + body, repeats counted
    average_length: float
    title_terms: npt.NDArray[np.int64]  # distinct tokens per document's title

    def document_frequency(self, term: str) -> int:
        row = self.terms.get(term)
        return 0 if row is None else self.postings.length_of(row)

    def idf(self, term: str) -> float:
        """`ln(1 + (N − df + 0.5)/(df + 0.5))`."""
        df = self.document_frequency(term)
        return math.log(1.0 + (self.n_documents - df + 0.5) / (df + 0.5))

    def documents_with(self, term: str) -> npt.NDArray[np.int32]:
        """Documents (ascending) whose title or body has `term`."""
        row = self.terms.get(term)
        return _NOWHERE if row is None else self.postings.documents_of(row)

    def frequencies(self, term: str) -> npt.NDArray[np.int32]:
        """How often `term` occurs in each document of `documents_with(term)`."""
        row = self.terms.get(term)
        return _NOWHERE if row is None else self.postings.counts_of(row)

    def titles_with(self, term: str) -> npt.NDArray[np.int32]:
        """Documents (ascending) whose title has `term`."""
        row = self.terms.get(term)
        return _NOWHERE if row is None else self.title_postings.documents_of(row)


#: The memo key of a graph's term index (`incremental.carry_over` may fill it in beforehand).
TERMS_MEMO: Final = f"{STRUCTURAL_MEMO_PREFIX}terms"


def term_index(graph: CorpusGraph) -> TermIndex:
    """The graph's term index, built once per graph (it reads no weights)."""
    return graph.memo(TERMS_MEMO, lambda: _build_term_index(graph))


def text_pairs(titles: Sequence[str], bodies: Sequence[str | None] | None) -> Sequence[str]:
    """The texts the term index tokenises: title, body, title, body… (text `2k` is document k's
    title, `2k + 1` its body); the titles alone when there are no bodies."""
    if bodies is None:
        return titles
    pairs = zip(titles, ("" if body is None else body for body in bodies), strict=True)
    return list(itertools.chain.from_iterable(pairs))


def has_bodies(graph: CorpusGraph) -> bool:
    """Whether any document has a body (the first one's answers at once, mostly)."""
    bodies = graph.bodies
    return bool(bodies) and (bodies[0] is not None or bodies.count(None) != len(bodies))


def _build_term_index(graph: CorpusGraph) -> TermIndex:
    """Tokenise every title and body in bulk (`many_token_lists`), then group by term in numpy.

    With bodies, the texts are title, body, title, body…: text `2k` is document k's title and
    `2k + 1` its body, so occurrences stay in document order.
    """
    n = graph.n_documents
    with_bodies = has_bodies(graph)
    texts = text_pairs(graph.titles, graph.bodies if with_bodies else None)
    found = many_token_lists(texts)
    document = found.text // 2 if with_bodies else found.text
    postings = Postings.of(found.term, document, len(found.terms), n)
    if with_bodies:
        in_title = np.flatnonzero(found.text % 2 == 0)
        title_postings = Postings.of(
            found.term.take(in_title), document.take(in_title), len(found.terms), n
        )
    else:
        title_postings = postings
    lengths = np.bincount(document, minlength=n).astype(np.float64)
    average = float(lengths.mean()) if n else 0.0
    terms = dict(zip(found.terms, range(len(found.terms)), strict=True))
    title_terms = title_postings.per_document(n)
    return TermIndex(n, terms, postings, title_postings, lengths, average, title_terms)


@dataclass(frozen=True, slots=True)
class QueryView:
    """A query against one graph, reduced to the documents that contain its terms.

    For the default mode the terms are the query's tokens present in at least one document and the
    text is title + body; for parity mode they are all the query's tokens and the text is the title.
    """

    terms: tuple[str, ...]
    weights: FloatArray  # idf per term (default mode) or 1 per term (parity: gains count tokens)
    candidates: IndexArray  # documents containing at least one term, ascending
    contains: BoolMatrix  # (candidate, term) → the candidate's text has the term
    relevance: FloatArray  # r(d) for every document of the graph, in [0, 1]

    @property
    def mass(self) -> float:
        """`M`: total weight of the terms (0 when no query term occurs in the graph)."""
        return float(self.weights.sum())

    def rows_of(self, documents: IndexArray) -> IndexArray:
        """Candidate row of each document; -1 for a document that contains no term."""
        if not len(self.candidates):
            return np.full(len(documents), -1, dtype=np.int64)
        rows = np.minimum(np.searchsorted(self.candidates, documents), len(self.candidates) - 1)
        return np.where(self.candidates[rows] == documents, rows, -1)

    def gains(self, covered: npt.NDArray[np.bool_]) -> FloatArray:
        """`g(d | S)` for every candidate: weight of its terms not yet covered."""
        result: FloatArray = (self.contains & ~covered) @ self.weights
        return result


def query_view(graph: CorpusGraph, query: str, params: MdnParams) -> QueryView:
    """The default mode's view: BM25 relevance and idf-weighted coverage over title + body."""
    index = term_index(graph)
    terms = tuple(sorted(term for term in tokens(query) if index.document_frequency(term) > 0))
    weights = np.array([index.idf(term) for term in terms], dtype=np.float64)
    candidates, contains, frequency = _incidence(
        [index.documents_with(term) for term in terms],
        [index.frequencies(term) for term in terms],
    )
    relevance = np.zeros(graph.n_documents, dtype=np.float64)
    if len(candidates):
        k1, b = params.bm25_k1, params.bm25_b
        lengths = index.lengths[candidates]
        norm = k1 * (1.0 - b + b * lengths / index.average_length)
        # Only where the term occurs: with k1 = 0 an absent term would be 0/0.
        saturation = np.divide(
            frequency * (k1 + 1.0),
            frequency + norm[:, None],
            out=np.zeros_like(frequency),
            where=frequency > 0,
        )
        bm25 = saturation @ weights
        top = float(bm25.max())
        if top > 0.0:
            relevance[candidates] = bm25 / top
    relevance.setflags(write=False)
    return QueryView(terms, weights, candidates, contains, relevance)


#: Qualifier tokens (`(1917 film)`: 2) a title may carry beyond the words a query names it by.
_MOST_QUALIFIER_TOKENS: Final = 3


def title_term_counts(graph: CorpusGraph) -> npt.NDArray[np.int64]:
    """How many distinct tokens each document's title has (the term index keeps the count)."""
    return term_index(graph).title_terms


def named_by_query(graph: CorpusGraph, query: str, view: QueryView) -> npt.NDArray[np.bool_]:
    """For each of `view`'s candidates: whether the query names it by its title, as written or
    without its qualifier (`edge_classification.QUALIFIER`: `Dark River (2017 film)` is named by
    `dark river`), as whole consecutive tokens, and the name has a word that is not a function
    word (a title `The Who` is not named by `... the director who ...`: not consecutive; `The`
    alone names nothing).

    Only the titles of documents whose title tokens are all in the query, or all but a few (a
    qualifier's), are read: numpy finds them from the title postings of the query's terms."""
    named = np.zeros(len(view.candidates), dtype=bool)
    sequence = token_list(query)
    if not sequence or not len(view.candidates):
        return named
    index = term_index(graph)
    postings = [index.titles_with(term) for term in set(sequence)]
    if not any(len(docs) for docs in postings):
        return named
    documents, in_query = np.unique(np.concatenate(postings), return_counts=True)
    missing = title_term_counts(graph)[documents] - in_query
    phrase = f" {' '.join(sequence)} "
    shortlist = missing <= _MOST_QUALIFIER_TOKENS
    for document, left in zip(
        documents[shortlist].tolist(), missing[shortlist].tolist(), strict=True
    ):
        title = graph.titles[document]
        if left and QUALIFIER.search(title) is None:
            continue  # title tokens the query lacks, and no qualifier they could be
        names = (" ".join(token_list(title)), " ".join(token_list(QUALIFIER.sub(" ", title))))
        if any(_holds_name(phrase, name) for name in names):
            row = int(view.rows_of(np.array([document], dtype=np.int64))[0])
            if row >= 0:
                named[row] = True
    return named


def _holds_name(phrase: str, name: str) -> bool:
    """Whether `phrase` (tokens, space-padded) holds `name` (tokens) whole, and `name` has a
    word that is not a function word."""
    words = name.split()
    return any(w not in FUNCTION_WORDS for w in words) and f" {name} " in phrase


def title_view(graph: CorpusGraph, query: str, relevance: FloatArray) -> QueryView:
    """Parity mode's view: every query token counts 1, matched against titles only."""
    index = term_index(graph)
    terms = tuple(sorted(tokens(query)))
    postings = [index.titles_with(term) for term in terms]
    candidates, contains, _ = _incidence(postings, [np.ones(len(docs)) for docs in postings])
    return QueryView(terms, np.ones(len(terms)), candidates, contains, relevance)


def _incidence(
    postings: Sequence[npt.NDArray[np.integer]], counts: Sequence[npt.NDArray[np.number]]
) -> tuple[IndexArray, BoolMatrix, FloatArray]:
    """Candidates (union of the postings) and their (candidate, term) incidence and counts."""
    if not postings or not any(len(docs) for docs in postings):
        empty = np.zeros(0, dtype=np.int64)
        return empty, np.zeros((0, len(postings)), dtype=bool), np.zeros((0, len(postings)))
    documents = [np.asarray(docs, dtype=np.int64) for docs in postings]
    candidates = np.unique(np.concatenate(documents))
    frequency = np.zeros((len(candidates), len(postings)), dtype=np.float64)
    for column, (docs, tf) in enumerate(zip(documents, counts, strict=True)):
        frequency[np.searchsorted(candidates, docs), column] = tf
    return candidates, frequency > 0, frequency
