"""`KeywordRetriever`: embeddings-free ranking of a corpus's entries against a query.

An entry's score counts the distinct query words found in each of its fields, weighted by field,
times a per-category weight. Words are the MDN engine's tokens (`mnemo_mdn.tokens`, MDN.md §3), so
a word that matches here also matches in graph navigation:

    score = category_weight · ( 2.0 · |Q ∩ path words|
                              + 1.5 · |Q ∩ summary words|
                              + 2.0 · best alias overlap, counted only when >= 2 words
                              + 1.0 · |Q ∩ words of the first 500 characters of content|
                              + 0.5 · |Q ∩ words of the summaries of the related entries| )

Path words leave out the file extension, which says nothing about the topic. A one-word alias
never counts: a single shared word is what the path, summary and content already measure, and
an alias is there to recognise a phrase. Entries scoring below `min_score` (or 0) are dropped;
the rest are ordered by score, highest first, ties by path.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from types import MappingProxyType

from mnemo_mdn import tokens

from mnemo_corpus.entry import RetrievalEntry
from mnemo_corpus.protocol import CorpusProtocol

PATH_WEIGHT = 2.0
SUMMARY_WEIGHT = 1.5
ALIAS_WEIGHT = 2.0
CONTENT_WEIGHT = 1.0
RELATED_SUMMARY_WEIGHT = 0.5
CONTENT_PREFIX_CHARACTERS = 500
MINIMUM_ALIAS_OVERLAP = 2
DEFAULT_MIN_SCORE = 1.0


@dataclass(frozen=True, slots=True)
class RetrievalHit:
    """An entry the retriever kept, with the score it was ranked by."""

    entry: RetrievalEntry
    score: float

    @property
    def path(self) -> str:
        return self.entry.path


@dataclass(frozen=True, slots=True)
class KeywordRetriever:
    """Scores entries by weighted word overlap; see the module docstring for the formula.

    `category_weights` multiplies the score of entries in a category (1.0 for any category not
    listed); `min_score` is the smallest score that is still a hit.
    """

    category_weights: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    min_score: float = DEFAULT_MIN_SCORE

    def retrieve(self, query: str, corpus: CorpusProtocol, k: int = 3) -> list[RetrievalHit]:
        """The best `k` entries of `corpus` for `query`, highest score first, ties by path."""
        if k < 0:
            raise ValueError(f"k must be 0 or more, got {k}")
        query_words = tokens(query)
        hits = []
        for entry in corpus.entries():
            score = self.score(query_words, entry, corpus)
            if score > 0 and score >= self.min_score:
                hits.append(RetrievalHit(entry=entry, score=score))
        hits.sort(key=lambda hit: (-hit.score, hit.entry.path))
        return hits[:k]

    def score(
        self, query_words: frozenset[str], entry: RetrievalEntry, corpus: CorpusProtocol
    ) -> float:
        """The score of one entry for an already split query."""
        path_words = tokens(str(PurePosixPath(entry.path).with_suffix("")))
        summary_words = tokens(entry.summary or "")
        alias_overlap = max(
            (len(query_words & tokens(alias)) for alias in entry.aliases), default=0
        )
        content_words = tokens(entry.content[:CONTENT_PREFIX_CHARACTERS])
        related_summary_words: frozenset[str] = frozenset()
        for related_path in entry.related:
            related = corpus.get(related_path)
            if related is not None and related.summary:
                related_summary_words |= tokens(related.summary)
        field_score = (
            PATH_WEIGHT * len(query_words & path_words)
            + SUMMARY_WEIGHT * len(query_words & summary_words)
            + (ALIAS_WEIGHT * alias_overlap if alias_overlap >= MINIMUM_ALIAS_OVERLAP else 0.0)
            + CONTENT_WEIGHT * len(query_words & content_words)
            + RELATED_SUMMARY_WEIGHT * len(query_words & related_summary_words)
        )
        return self.category_weights.get(entry.category, 1.0) * field_score
