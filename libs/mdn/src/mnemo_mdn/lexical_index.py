"""A whole corpus classified in process: the counts and candidates `edge_classification` needs.

The edge-classifier service can ask Postgres's full-text index for a new document's candidates and
the rarity of its keys; this index answers the same questions from memory, for a corpus held in
process (`mnemo graph navigate --dir`, the benchmarks). Phrase containment is found the way a
full-text index finds it: intersect the postings of the phrase's tokens, then check the phrase.

`ScopeIndex` is the same lookups over a corpus that changes a document at a time: the service
keeps one per (tenant, corpus, scope) it serves, fed from the store's changed rows, instead of
asking Postgres per event (the candidates, frequencies and edges are those of `LexicalIndex`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from mnemo_mdn.edge_classification import (
    DEFAULT_OPTIONS,
    QUALIFIER,
    CandidateQuery,
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
from mnemo_mdn.edge_classification import _words as _words  # the tokens `document_keys` reads
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


# -- a corpus kept in memory as it changes ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class IndexedDocument:
    """What a `ScopeIndex` keeps of a document: its text (the classifier reads candidates from
    it), the names it is known by (`DocumentKeys.title_names`) and its tokens lowercased
    (`DocumentKeys.lowered`), read as `document_keys` reads them."""

    id: str
    title: str
    body: str | None
    title_names: tuple[str, ...]
    lowered: str

    def contains(self, phrase: str) -> bool:
        return bool(phrase) and f" {phrase} " in self.lowered

    @property
    def nbytes(self) -> int:
        """About what the document costs in an index: its strings, the entry, and one posting
        (a set slot and a dict share) per distinct token (within 5% of tracemalloc's count on
        MuSiQue passages with distinct titles)."""
        text = len(self.title) + len(self.body or "") + len(self.lowered)
        names = sum(len(n) + 60 for n in self.title_names)
        return 600 + text + names + 100 * len(set(self.lowered.split()))


def indexed_document(document: TextDocument) -> IndexedDocument:
    """`document` read for a `ScopeIndex`: the part of `document_keys` a candidate lookup needs
    (title key, alias key, lowered tokens), without the sentences and names."""
    title = document.title
    text = title if not document.body else f"{title}\n\n{document.body}"
    title_key = " ".join(w.lower() for w in _words(title))
    alias_key = " ".join(w.lower() for w in _words(QUALIFIER.sub(" ", title)))
    if alias_key == title_key:
        alias_key = ""
    return IndexedDocument(
        id=document.id,
        title=title,
        body=document.body,
        title_names=tuple(k for k in (title_key, alias_key) if k),
        lowered=f" {' '.join(w.lower() for w in _words(text))} ",
    )


class ScopeIndex:
    """The documents of one corpus scope, changed one at a time (`put`, `remove`), answering what
    the edge-classifier service asks for a new document (`neighbourhood`): the key frequencies
    and candidates `LexicalIndex` finds for a corpus read at once, and the store's
    `neighbourhood` read finds in SQL. The cost of a lookup grows with the documents holding the
    phrases looked up, not with the documents in the scope."""

    def __init__(self, documents: Iterable[TextDocument] = ()) -> None:
        self._documents: dict[str, IndexedDocument] = {}
        self._postings: dict[str, set[str]] = {}
        self._by_title: dict[str, set[str]] = {}
        self.nbytes = 0
        for document in documents:
            self.put(document)

    def __len__(self) -> int:
        return len(self._documents)

    def __contains__(self, document_id: str) -> bool:
        return document_id in self._documents

    def get(self, document_id: str) -> IndexedDocument | None:
        return self._documents.get(document_id)

    def put(self, document: TextDocument) -> None:
        """Add `document`, or replace the one with its id."""
        entry = indexed_document(document)
        old = self._documents.get(entry.id)
        if old is not None:
            if (old.title, old.body) == (entry.title, entry.body):
                return
            self.remove(entry.id)
        self._documents[entry.id] = entry
        for token in set(entry.lowered.split()):
            self._postings.setdefault(token, set()).add(entry.id)
        for name in entry.title_names:
            self._by_title.setdefault(name, set()).add(entry.id)
        self.nbytes += entry.nbytes

    def remove(self, document_id: str) -> None:
        entry = self._documents.pop(document_id, None)
        if entry is None:
            return
        for token in set(entry.lowered.split()):
            _discard(self._postings, token, entry.id)
        for name in entry.title_names:
            _discard(self._by_title, name, entry.id)
        self.nbytes -= entry.nbytes

    def holders(self, phrase: str) -> set[str]:
        """Ids of the documents holding `phrase` (lowercased tokens joined by spaces)."""
        sets = sorted((self._postings.get(t, _NO_IDS) for t in set(phrase.split())), key=len)
        if not sets or not sets[0]:
            return set()
        documents = self._documents
        return {i for i in sets[0].intersection(*sets[1:]) if documents[i].contains(phrase)}

    def neighbourhood(
        self,
        document_id: str,
        query: CandidateQuery,
        keys: Iterable[str],
        options: ClassifierOptions = DEFAULT_OPTIONS,
        limit: int | None = None,
    ) -> tuple[list[IndexedDocument], dict[str, int]]:
        """How many documents hold each of `keys` (`keys_of` of the new document), and the
        candidates of `query` (`candidate_query`): as `LexicalIndex.candidates`, in id order
        (code points: the store's byte order), the document itself left out, at most `limit`."""
        frequencies = {key: len(self.holders(key)) for key in keys}
        found: set[str] = set()
        for phrase in query.titles:
            found.update(self._by_title.get(phrase, ()))
        for phrase in query.cited:
            found.update(self.holders(phrase))
        for name in query.rare_names(Rarity(frequencies), options):
            found.update(self.holders(name))
        found.discard(document_id)
        ids = sorted(found)[:limit] if limit is not None else sorted(found)
        return [self._documents[i] for i in ids], frequencies


_NO_IDS: frozenset[str] = frozenset()


def _discard(index: dict[str, set[str]], key: str, document_id: str) -> None:
    held = index.get(key)
    if held is not None:
        held.discard(document_id)
        if not held:
            del index[key]
