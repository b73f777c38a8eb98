"""Retrieve answered from a cached graph's term index, when the graph is fresh (issue 29).

`mnemo_store.retrieval` ranks in Postgres: `ts_rank_cd(vector, a | b | …, 32)` over the stored
`to_tsvector('simple', title || ' ' || body)`, ordered by that rank (a `real`), then by id in "C"
collation. For a disjunction every occurrence of a query lexeme is a cover of one position, worth
`1/(1/0.1)` = 0.1 at the default weights, and a lexeme keeps at most 255 positions, so the rank is

```
W = 0.1 · Σ over the query's lexemes of min(occurrences, 255)        rank = W / (W + 1)
```

in double precision, rounded to `real`. A cached graph's term index holds each document's
occurrences of each token (`mnemo_mdn` tokens: runs of letters and digits, lower-cased), so the same
ranking is a few postings reads instead of a per-row test of every stored vector under row-level
security. Both are the same when the two tokenisers agree on the texts: `plain_texts` checks that
once per graph (ASCII letters, digits, white space and the punctuation `, ; ! ? ( ) " '`, a period
only before white space), and that no document is past the 16,383 positions a tsvector counts.
Anything else, or no fresh graph for the request's scope, and the caller asks Postgres.
"""

from __future__ import annotations

import re
from typing import Final

import numpy as np
from mnemo_mdn import CorpusGraph
from mnemo_mdn.graph import STRUCTURAL_MEMO_PREFIX
from mnemo_mdn.relevance import term_index
from mnemo_store.retrieval import FoundDocument, text_query

#: Positions a tsvector keeps per lexeme (occurrences past it are not counted).
MAX_POSITIONS: Final = 255
#: The last position a tsvector distinguishes: a longer document's counts differ.
MAX_POSITION: Final = 16_383
#: `ts_rank_cd`'s worth of one occurrence at the default weight of an unweighted vector.
COVER_WORTH: Final = 0.1
# Text both tokenisers split alike (see the module); a period only before white space or the end.
_UNSAFE: Final = re.compile(r"[^A-Za-z0-9\s,;!?()\"'.]|\.(?=\S)")
_PLAIN_MEMO: Final = f"{STRUCTURAL_MEMO_PREFIX}warm-retrieval-plain"


def plain_texts(graph: CorpusGraph) -> bool:
    """Whether every title and body is text the two tokenisers split alike (memoised per graph;
    it reads no weights, so a reinforced graph keeps it)."""
    return graph.memo(_PLAIN_MEMO, lambda: _plain(graph))


def _plain(graph: CorpusGraph) -> bool:
    texts = "\n".join(
        f"{title}\n{body}" if body is not None else title
        for title, body in zip(graph.titles, graph.bodies, strict=True)
    )
    return _UNSAFE.search(texts) is None


def retrieve_from_graph(graph: CorpusGraph, query: str, k: int) -> list[FoundDocument] | None:
    """The top `k` documents of `graph` for `query`, ranked and ordered as the Postgres statement
    ranks them; None when the graph's texts may tokenise otherwise (`plain_texts`)."""
    if not plain_texts(graph):
        return None
    index = term_index(graph)
    if graph.n_documents and float(index.lengths.max()) > MAX_POSITION:
        return None
    text = text_query(query)
    terms = text.split(" | ") if text else []
    counts = np.zeros(graph.n_documents, dtype=np.int64)
    for term in terms:
        documents = index.documents_with(term)
        if len(documents):
            counts[documents] += np.minimum(index.frequencies(term), MAX_POSITIONS)
    matched = np.flatnonzero(counts)
    worth = COVER_WORTH * counts[matched].astype(np.float64)
    rank = (worth / (worth + 1.0)).astype(np.float32)
    ids = graph.ids
    # Rank descending, then id ascending by code point ("C" collation of UTF-8 text).
    positions = matched.tolist()
    keys = zip((-rank).tolist(), [ids[k] for k in positions], positions, strict=True)
    ordered = sorted(keys)
    return [
        FoundDocument(doc_id, graph.titles[position], graph.bodies[position], -negative)
        for negative, doc_id, position in ordered[: max(k, 0)]
    ]


__all__ = ["COVER_WORTH", "MAX_POSITION", "MAX_POSITIONS", "plain_texts", "retrieve_from_graph"]
