"""A whole corpus classified in process: the counts and candidates `edge_classification` needs.

The edge-classifier service asks Postgres's full-text index for a new document's candidates and
the rarity of its keys; this index answers the same questions from memory, for a corpus held in
process (`mnemo graph navigate --dir`, the benchmarks). Phrase containment is found the way a
full-text index finds it: intersect the postings of the phrase's tokens, then check the phrase.
"""

from __future__ import annotations

from collections.abc import Iterable

from mnemo_mdn.edge_classification import (
    DEFAULT_OPTIONS,
    ClassifierOptions,
    DocumentKeys,
    EdgeDecision,
    Rarity,
    TextDocument,
    candidate_query,
    classify,
    document_keys,
    keys_of,
)
from mnemo_mdn.graph import Document

_NONE: frozenset[int] = frozenset()


class LexicalIndex:
    """Documents read once (`document_keys`), token postings, and phrase document frequencies."""

    def __init__(self, documents: Iterable[TextDocument | Document]) -> None:
        self.keys: list[DocumentKeys] = [
            document_keys(TextDocument(d.id, d.title, d.body)) for d in documents
        ]
        self._postings: dict[str, set[int]] = {}
        for position, keys in enumerate(self.keys):
            for token in set(keys.lowered.split()):
                self._postings.setdefault(token, set()).add(position)
        self.title_counts: dict[str, int] = {}
        self._by_title: dict[str, list[int]] = {}
        for position, keys in enumerate(self.keys):
            for name in keys.title_names or ("",):
                self.title_counts[name] = self.title_counts.get(name, 0) + 1
            for name in keys.title_names:
                self._by_title.setdefault(name, []).append(position)
        self._holders: dict[str, tuple[int, ...]] = {}

    def holders(self, phrase: str) -> tuple[int, ...]:
        """Positions of the documents containing `phrase` (lowercased tokens joined by spaces)."""
        found = self._holders.get(phrase)
        if found is not None:
            return found
        sets = sorted((self._postings.get(t, _NONE) for t in set(phrase.split())), key=len)
        if not sets or not sets[0]:
            found = ()
        else:
            found = tuple(
                sorted(p for p in sets[0].intersection(*sets[1:]) if self.keys[p].contains(phrase))
            )
        self._holders[phrase] = found
        return found

    def rarity(self, keys: DocumentKeys) -> Rarity:
        return Rarity({key: len(self.holders(key)) for key in keys_of(keys)})

    def candidates(self, position: int, options: ClassifierOptions = DEFAULT_OPTIONS) -> list[int]:
        """Documents that may share an edge with document `position`: those whose title (or title
        without its qualifier) it contains, those containing its title, its title without its
        qualifier or its id, and those holding one of its rare keys."""
        keys = self.keys[position]
        query = candidate_query(keys)
        found: set[int] = set()
        for phrase in query.titles:
            found.update(self._by_title.get(phrase, ()))
        for phrase in query.cited:
            found.update(self.holders(phrase))  # documents that may name its title or id
        for key in query.rare_names(self.rarity(keys), options):
            found.update(self.holders(key))
        found.discard(position)
        return sorted(found)

    def classify(
        self, position: int, options: ClassifierOptions = DEFAULT_OPTIONS
    ) -> tuple[EdgeDecision, ...]:
        """Document `position` classified as new against every other document."""
        keys = self.keys[position]
        return classify(
            keys,
            [self.keys[p] for p in self.candidates(position, options)],
            self.rarity(keys),
            options,
            title_counts=self.title_counts,
        )


def classify_corpus(
    documents: Iterable[TextDocument | Document], options: ClassifierOptions = DEFAULT_OPTIONS
) -> tuple[EdgeDecision, ...]:
    """Every document classified against all the others; one decision per (source, target,
    type), the strongest, sorted."""
    index = LexicalIndex(documents)
    decided: dict[tuple[str, str, str], EdgeDecision] = {}
    for position in range(len(index.keys)):
        for decision in index.classify(position, options):
            key = (decision.source, decision.target, decision.etype)
            known = decided.get(key)
            if known is None or decision.weight > known.weight:
                decided[key] = decision
    return tuple(decided[key] for key in sorted(decided))
