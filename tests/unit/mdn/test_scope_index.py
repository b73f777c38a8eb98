"""`ScopeIndex`, the edge classifier's in-memory corpus, changed one document at a time, finds
exactly the candidates, key frequencies and edges of `LexicalIndex` read at once over the same
documents (the pure function), whatever the corpus and the order of the changes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from mnemo_mdn.edge_classification import (
    DEFAULT_OPTIONS,
    ClassifierOptions,
    Rarity,
    TextDocument,
    candidate_query,
    classify,
    document_keys,
    keys_of,
)
from mnemo_mdn.lexical_index import LexicalIndex, ScopeIndex, indexed_document

WORDS = [
    "Hilda",
    "Hilst",
    "Paris",
    "Treaty",
    "of",
    "the",
    "poet",
    "wrote",
    "Brand",
    "play",
    "Ibsen",
    "not",
    "never",
    "novel",
    "City",
    "a",
    "de",
    "la",
    "São",
    "Paulo",
    "Ünter",
    "x",
    "2020",
    "doc-3",
    "contradicts",
    "replaces",
    "is",
    "incorrect",
    "Peer",
    "Gynt",
    "Sea",
    "sea",
]
IDS = [f"doc-{k}" for k in range(8)] + ["7", "ä-1"]

titles = st.builds(
    lambda words, qualifier: " ".join(words) + (f" ({qualifier})" if qualifier else ""),
    st.lists(st.sampled_from(WORDS), min_size=0, max_size=4),
    st.sampled_from(["", "", "play", "1917 film", "artist"]),
)
bodies = st.one_of(
    st.none(),
    st.lists(
        st.one_of(st.sampled_from(WORDS), st.sampled_from([".", ",", "\n\n", "(", ")"])),
        max_size=30,
    ).map(" ".join),
)
documents = st.builds(TextDocument, st.sampled_from(IDS), titles, bodies)
# A change: a document written (new, or a new version of one), or a document deleted.
changes = st.lists(
    st.one_of(documents, st.sampled_from(IDS).map(lambda i: ("delete", i))),
    min_size=1,
    max_size=25,
)


def _agree(index: ScopeIndex, corpus: dict[str, TextDocument], doc_id: str, max_links: int) -> None:
    options = ClassifierOptions(max_links=max_links)
    whole = LexicalIndex(list(corpus.values()))
    position = [k.id for k in whole.keys].index(doc_id)
    keys = whole.keys[position]
    expected = [whole.keys[p].id for p in whole.candidates(position, options)]
    rarity = whole.rarity(keys)
    found, frequencies = index.neighbourhood(doc_id, candidate_query(keys), keys_of(keys), options)
    assert [d.id for d in found] == sorted(expected)
    assert frequencies == dict(rarity.document_frequency)
    pure = classify(
        keys, [whole.keys[p] for p in whole.candidates(position, options)], rarity, options
    )
    held = classify(
        keys,
        [document_keys(TextDocument(d.id, d.title, d.body)) for d in found],
        Rarity(frequencies),
        options,
    )
    assert held == pure


@settings(max_examples=150, deadline=None)
@given(changes, st.sampled_from([1, 2, DEFAULT_OPTIONS.max_links]))
def test_an_index_changed_in_any_order_finds_what_the_corpus_read_at_once_finds(
    steps: list[TextDocument | tuple[str, str]], max_links: int
) -> None:
    index = ScopeIndex()
    corpus: dict[str, TextDocument] = {}
    for step in steps:
        if isinstance(step, tuple):
            index.remove(step[1])
            corpus.pop(step[1], None)
            continue
        index.put(step)
        corpus[step.id] = step
        _agree(index, corpus, step.id, max_links)  # the event of the document just written
    assert len(index) == len(corpus)
    for doc_id in corpus:
        _agree(index, corpus, doc_id, max_links)


@given(documents)
def test_an_indexed_document_reads_the_keys_document_keys_reads(document: TextDocument) -> None:
    keys = document_keys(document)
    entry = indexed_document(document)
    assert entry.title_names == keys.title_names
    assert entry.lowered == keys.lowered


@given(changes)
def test_the_size_of_an_index_is_the_size_of_its_documents(
    steps: list[TextDocument | tuple[str, str]],
) -> None:
    index = ScopeIndex()
    corpus: dict[str, TextDocument] = {}
    for step in steps:
        if isinstance(step, tuple):
            index.remove(step[1])
            corpus.pop(step[1], None)
        else:
            index.put(step)
            corpus[step.id] = step
    assert index.nbytes == sum(indexed_document(d).nbytes for d in corpus.values())
    assert index.nbytes == ScopeIndex(corpus.values()).nbytes
