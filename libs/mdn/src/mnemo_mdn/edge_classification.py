"""The lexical edge classifier: which typed, weighted edges a new document makes with others.

Pure: text and counts in, edge decisions out. The edge-classifier service, the benchmarks and
`mnemo graph navigate --dir` call the same functions, so a change here changes all three.

Evidence is read off the text with rules that say why an edge exists:

- **keys**: the phrases a document can share with another: its title and its names (runs of
  capitalised words, e.g. `Hilda Hilst`, `Treaty of Paris`, without leading or trailing function
  words). A key's rarity is its document frequency `df(k)`: how many documents of the corpus
  contain the phrase (case-insensitively, as whole tokens).
- **cite**: a document names another's id (an explicit reference: weight 1), or contains another's
  title as written (a title mention), or the title without its qualifier: the parenthesised part
  that tells apart things of the same name (`Henry Worrall (artist)` is mentioned as `Henry
  Worrall`, `Brand (play)` as `Brand`). A name borne by `m` documents (as their title, or as their
  title without its qualifier) is ambiguous between them: each gets weight `1/m`.
- **supersede**: a replacement cue (`supersedes`, `replaces`, `obsoletes`, …) in a sentence that
  names the other document (title or id): the newer document supersedes the one it names.
- **contradict**: an opposition cue (`contradicts`, `contrary to`, `is incorrect`, …) in a sentence
  that names the other document or a key they share; or negation over shared content: a sentence of
  each with mostly the same words (more shared than not), exactly one of them negated.
- **corroborate / elaborate**: documents sharing rare keys. A key held by `df(k)` documents joins
  each of them to the `df(k) − 1` others and gives each such link the share `1/(df(k) − 1)` (the
  resource-allocation index of link prediction); a key held by more documents than a document may
  have links (`max_links`) is too common to be evidence. Keys combine as independent evidence:
  `w = 1 − Π(1 − w_k)`. Documents with the same title, or where a sentence of one restates a sentence
  of the other, corroborate each other (both ways); otherwise the new document elaborates the other.
  A document keeps its `max_links` strongest shared-key links; citations are all kept.

Every weight is in `(0, 1]`, every type is in the relation catalog, no edge joins a document to
itself, and the result depends only on the inputs, never on iteration order.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from mnemo_mdn.graph import Edge
from mnemo_mdn.relations import RELATION_TYPES
from mnemo_mdn.tokenization import token_list

# -- vocabulary ------------------------------------------------------------------------------------


def _word_set(words: str) -> frozenset[str]:
    return frozenset(words.split())


# Closed-class English words: they neither start nor end a name, and a run of only these
# (`The`, `In`, `He`) is not one. A fact of the grammar, not a tuned list.
FUNCTION_WORDS: Final = _word_set(
    """a an the of in on at to for from by with and or but nor as is are was were be been being
    it its this that these those he she they we you i his her their our your my him them us me
    who whom whose which what when where why how not no de la le du des del da di von van der
    den af y et"""
)
# Lowercase words that may sit inside a name: `Treaty of Paris`, `Leonardo da Vinci`.
NAME_CONNECTORS: Final = _word_set("of de la le du des del da di von van der den af y the")
NEGATIONS: Final = _word_set(
    "not no never neither nor none nobody nothing cannot without false untrue"
)
# `isn't` splits into `isn` + `t`: these count as negations only when a `t` or `not` follows.
CONTRACTED_NEGATIONS: Final = _word_set(
    "isn aren wasn weren doesn don didn won wouldn shouldn can couldn hasn haven hadn"
)
REPLACEMENT_CUES: Final = (
    "supersedes", "superseded", "supersede", "replaces", "replaced", "replacing",
    "replacement for", "replacement of", "obsoletes", "deprecates", "deprecated", "instead of",
    "no longer", "new version of", "updated version of", "revised version of", "revision of",
    "takes the place of",
)  # fmt: skip
OPPOSITION_CUES: Final = (
    "contradicts", "contradicted", "contradict", "contrary to", "disputes", "disputed", "refutes",
    "refuted", "rebuts", "disagrees with", "disagree with", "denies", "denied", "is incorrect",
    "was incorrect", "is wrong", "was wrong", "is false", "was false", "is mistaken",
    "inaccurate", "debunks", "debunked", "retracts", "retracted",
)  # fmt: skip

MAX_KEY_WORDS: Final = 12
"""Longest key (title or name) in words; longer titles are not matched as mentions."""

_WORD: Final = re.compile(r"[^\W_]+")
_SENTENCE_END: Final = re.compile(r"(?<=[.!?])\s+|\n\s*\n")
QUALIFIER: Final = re.compile(r"\([^()]*\)")
"""A title's qualifier: a parenthesised part (`(artist)`, `(1917 film)`). The store's candidate
query removes the same pattern in SQL (`mnemo_store.candidates.alias_key_sql`)."""
_ID_SHAPE: Final = re.compile(r"^(?=.*[^\W\d_])(?=.*[0-9_\-/.:]).{4,}$")


def _cue_pattern(cues: Iterable[str]) -> re.Pattern[str]:
    phrases = sorted(cues, key=len, reverse=True)
    return re.compile(r"\b(?:" + "|".join(re.escape(p) for p in phrases) + r")\b", re.IGNORECASE)


_REPLACEMENT: Final = _cue_pattern(REPLACEMENT_CUES)
_OPPOSITION: Final = _cue_pattern(OPPOSITION_CUES)


# -- values ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TextDocument:
    """A document as the classifier reads it."""

    id: str
    title: str
    body: str | None = None


@dataclass(frozen=True, slots=True)
class EdgeDecision:
    """One edge the classifier decided on, and the evidence that decided it (for people)."""

    source: str
    target: str
    etype: str
    weight: float
    evidence: str = ""

    def __post_init__(self) -> None:
        if self.etype not in RELATION_TYPES:
            raise ValueError(f"edge type {self.etype!r} is not in the relation catalog")
        if not (math.isfinite(self.weight) and 0.0 < self.weight <= 1.0):
            raise ValueError(f"edge weight must be in (0, 1], got {self.weight!r}")
        if self.source == self.target:
            raise ValueError(f"an edge joins two documents, got {self.source!r} at both ends")

    def to_edge(self) -> Edge:
        return Edge(self.source, self.target, self.etype, self.weight)


@dataclass(frozen=True, slots=True)
class Rarity:
    """How many documents contain each key (`keys_of`). A key not listed counts as held by just
    the two documents compared, the rarest a shared key can be."""

    document_frequency: Mapping[str, int] = field(default_factory=dict)

    def df(self, key: str) -> int:
        return max(2, self.document_frequency.get(key, 2))


@dataclass(frozen=True, slots=True)
class ClassifierOptions:
    """`max_links`: the most shared-key links a new document makes; a key held by more than
    `max_links + 1` documents is too common to be evidence. Citations are not capped."""

    max_links: int = 10

    def __post_init__(self) -> None:
        if self.max_links < 1:
            raise ValueError(f"max_links must be at least 1, got {self.max_links}")


DEFAULT_OPTIONS: Final = ClassifierOptions()


# -- reading a document ----------------------------------------------------------------------------


def _words(text: str) -> list[str]:
    """The spec's tokens (MDN §3) with their case kept."""
    return [w for w in _WORD.findall(text) if len(w) >= 2 or ord(w[0]) >= 0x80]


@dataclass(frozen=True, slots=True)
class DocumentKeys:
    """What the classifier reads off one document, once."""

    id: str
    title_key: str  # title tokens, lowercased, joined by spaces ('' when there is none)
    title_cased: str  # title words as written, joined by spaces
    alias_key: str  # the title without its qualifier, as title_key ('' when it has none)
    alias_cased: str  # the same words as written
    names: frozenset[str]  # name keys (lowercased), the title's own key excluded
    cased: str  # every word as written, space-separated, padded with a space at both ends
    lowered: str  # the same, lowercased: phrase containment of keys
    sentences: tuple[str, ...]
    sentence_words: tuple[str, ...]  # each sentence's tokens, space-joined and padded: phrase tests
    sentence_content: tuple[tuple[frozenset[str], bool], ...]  # content words, negated: restatement
    sentence_cues: tuple[tuple[bool, bool], ...]  # a replacement cue, an opposition cue
    cased_text: str  # the text as written (title and body)

    def contains(self, key: str) -> bool:
        """Whether the document holds `key` as whole consecutive tokens."""
        return bool(key) and f" {key} " in self.lowered

    @property
    def title_names(self) -> tuple[str, ...]:
        """The names this document is known by: its title key, and its alias key when it has one."""
        return tuple(k for k in (self.title_key, self.alias_key) if k)

    def mentions_title(self, other: DocumentKeys) -> str:
        """`other`'s name this document contains with the title's capitalisation: the title as
        written, else the title without its qualifier; '' when neither."""
        if other.title_key == self.title_key:
            return ""
        if _is_linkable(other.title_cased) and f" {other.title_cased} " in self.cased:
            return other.title_key
        if (
            other.alias_key
            and other.alias_key not in (self.title_key, self.alias_key)
            and _is_linkable(other.alias_cased)
            and f" {other.alias_cased} " in self.cased
        ):
            return other.alias_key
        return ""

    def references_id(self, other: DocumentKeys) -> bool:
        """An explicit reference to `other.id`: written out whole, and shaped like an id (a letter
        and a digit or separator, four characters or more: `doc-17`, a uuid; not a plain word)."""
        target = other.id
        if _ID_SHAPE.match(target) is None or target not in self.cased_text:
            return False
        pattern = re.compile(r"(?<![\w-])" + re.escape(target) + r"(?![\w-])")
        return any(target in s and pattern.search(s) for s in self.sentences)


def _names(text: str) -> set[str]:
    """Runs of capitalised words not broken by punctuation (connector words allowed inside)."""
    names: set[str] = set()
    run: list[str] = []
    previous_end = -1

    def close() -> None:
        while run and run[-1].lower() in FUNCTION_WORDS:
            run.pop()
        while run and run[0].lower() in FUNCTION_WORDS:
            run.pop(0)
        if run and len(run) <= MAX_KEY_WORDS:
            key = " ".join(token_list(" ".join(run)))
            if key:
                names.add(key)
        run.clear()

    for match in _WORD.finditer(text):
        word = match.group()
        if run and text[previous_end : match.start()].strip(" ") != "":
            close()  # punctuation or a line break ends a name
        if word[0].isupper() or (run and word in NAME_CONNECTORS):
            run.append(word)
        elif run:
            close()
        previous_end = match.end()
    close()
    return names


def document_keys(document: TextDocument) -> DocumentKeys:
    """Read `document` once: its keys, its words and its sentences."""
    text = document.title if not document.body else f"{document.title}\n\n{document.body}"
    words = _words(text)
    title_words = _words(document.title)
    title_key = " ".join(w.lower() for w in title_words)
    alias_words = _words(QUALIFIER.sub(" ", document.title))
    alias_key = " ".join(w.lower() for w in alias_words)
    if alias_key == title_key:
        alias_words, alias_key = [], ""
    lowered_words = [w.lower() for w in words]
    sentences = tuple(s for s in _SENTENCE_END.split(text) if s.strip())
    sentence_tokens = [token_list(s) for s in sentences]
    return DocumentKeys(
        id=document.id,
        title_key=title_key,
        title_cased=" ".join(title_words),
        alias_key=alias_key,
        alias_cased=" ".join(alias_words),
        names=frozenset(_names(text) - {title_key}),
        cased=f" {' '.join(words)} ",
        lowered=f" {' '.join(lowered_words)} ",
        sentences=sentences,
        sentence_words=tuple(f" {' '.join(tokens)} " for tokens in sentence_tokens),
        sentence_content=tuple((_content(tokens), _negated(tokens)) for tokens in sentence_tokens),
        sentence_cues=tuple(
            (_REPLACEMENT.search(s) is not None, _OPPOSITION.search(s) is not None)
            for s in sentences
        ),
        cased_text=text,
    )


def keys_of(keys: DocumentKeys) -> tuple[str, ...]:
    """The keys whose document frequency a classification of this document reads, sorted."""
    return tuple(sorted(keys.names | ({keys.title_key} if keys.title_key else set())))


@dataclass(frozen=True, slots=True)
class CandidateQuery:
    """Which documents may share an edge with a new one, as lookups a corpus index answers (the
    in-process `LexicalIndex` and the store's `neighbourhood` read answer the same three):

    - `titles`: documents whose title key or alias key (`DocumentKeys.title_names`) is one of these
      (the new document's capitalised phrases): those it may cite;
    - `cited`: documents holding one of these phrases (its title key, its alias key, its id as
      tokens): those that may cite it;
    - `names`: documents holding one of these name keys, when the name is rare enough to be
      evidence (held by at most `max_links + 1` documents, the new one included).
    """

    titles: tuple[str, ...]
    cited: tuple[str, ...]
    names: tuple[str, ...]

    def rare_names(self, rarity: Rarity, options: ClassifierOptions = DEFAULT_OPTIONS) -> list[str]:
        """The names whose holders are candidates, by their document frequency."""
        return [
            n for n in self.names if rarity.document_frequency.get(n, 0) - 1 <= options.max_links
        ]


def capitalised_phrases(keys: DocumentKeys) -> set[str]:
    """Runs of up to MAX_KEY_WORDS words starting at a capitalised word or a number, lowercased:
    the title keys a document may mention."""
    words = keys.cased.split()
    lowered = keys.lowered.split()
    return {
        " ".join(lowered[start:end])
        for start, word in enumerate(words)
        if word[0].isupper() or word[0].isdigit()
        for end in range(start + 1, min(start + MAX_KEY_WORDS, len(words)) + 1)
    }


def candidate_query(keys: DocumentKeys) -> CandidateQuery:
    """The lookups that find every document `classify` could join to `keys`'s document."""
    cited = {*keys.title_names, " ".join(token_list(keys.id))} - {""}
    return CandidateQuery(
        titles=tuple(sorted(capitalised_phrases(keys))),
        cited=tuple(sorted(cited)),
        names=tuple(sorted(keys.names)),
    )


def _is_linkable(title_cased: str) -> bool:
    """A title names something when it has a word that is not a function word and, if it is one
    word, that word starts with a capital or a digit (`Music` may be cited, `music` is a word)."""
    words = title_cased.split()
    if len(words) > MAX_KEY_WORDS or not any(w.lower() not in FUNCTION_WORDS for w in words):
        return False
    return len(words) > 1 or words[0][0].isupper() or words[0][0].isdigit()


# -- sentences: negation, restatement, cues ----------------------------------------------------------


def _negated(tokens: Sequence[str]) -> bool:
    for k, token in enumerate(tokens):
        if token in NEGATIONS:
            return True
        if token in CONTRACTED_NEGATIONS and tokens[k + 1 : k + 2] in (["t"], ["not"]):
            return True
    return False


def _content(tokens: Sequence[str]) -> frozenset[str]:
    return frozenset(
        t
        for t in tokens
        if t not in FUNCTION_WORDS
        and t not in NEGATIONS
        and t not in CONTRACTED_NEGATIONS
        and t != "t"
    )


def _restatement(a: DocumentKeys, b: DocumentKeys) -> tuple[float, float]:
    """Best overlap (Jaccard) of a sentence pair restating each other with the same polarity, and
    with opposite polarity (one of the two negated); 0 when there is none.

    Two sentences restate each other when they share at least three content words and more
    content words than they differ in (Jaccard above one half)."""
    same = opposite = 0.0
    right = b.sentence_content
    for content, negated in a.sentence_content:
        if len(content) < 3:
            continue
        for other, other_negated in right:
            shared = len(content & other)
            if shared < 3:
                continue
            overlap = shared / len(content | other)
            if overlap > 0.5:
                if negated == other_negated:
                    same = max(same, overlap)
                else:
                    opposite = max(opposite, overlap)
    return same, opposite


def _cues_naming(keys: DocumentKeys, phrases: Iterable[str]) -> list[tuple[bool, bool]]:
    """The cues (replacement, opposition) of each sentence of `keys` naming one of `phrases`."""
    wanted = [f" {p} " for p in phrases if p]
    return [
        cues
        for cues, words in zip(keys.sentence_cues, keys.sentence_words, strict=True)
        if any(p in words for p in wanted)
    ]


# -- deciding --------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Pair:
    other: DocumentKeys
    cite_out: float = 0.0  # new → other
    cite_out_evidence: str = ""
    cite_in: float = 0.0  # other → new
    cite_in_evidence: str = ""
    shared: list[tuple[str, float]] = field(default_factory=list)

    @property
    def strength(self) -> float:
        """Independent shared keys combined: `1 − Π(1 − w_k)`."""
        return 1.0 - math.prod(1.0 - w for _, w in self.shared)


_Decide = Callable[[str, str, str, float, str], None]


def classify(
    document: TextDocument | DocumentKeys,
    candidates: Iterable[TextDocument | DocumentKeys],
    rarity: Rarity,
    options: ClassifierOptions = DEFAULT_OPTIONS,
    *,
    title_counts: Mapping[str, int] | None = None,
) -> tuple[EdgeDecision, ...]:
    """The edges between `document` (the new one) and `candidates` (already in the corpus).

    `rarity` holds the document frequency of the new document's keys (`keys_of`), counted over
    the corpus with the new document in it. `title_counts` says how many documents of the corpus
    bear each name, as their title key or alias key (`DocumentKeys.title_names`; default: count
    among the document and the candidates). A candidate with
    the document's id is ignored. The result is sorted by (source, target, type), one decision
    per triple.
    """
    new = document if isinstance(document, DocumentKeys) else document_keys(document)
    others: dict[str, DocumentKeys] = {}
    for candidate in candidates:
        keys = candidate if isinstance(candidate, DocumentKeys) else document_keys(candidate)
        if keys.id != new.id:
            others.setdefault(keys.id, keys)
    if title_counts is None:
        counted: dict[str, int] = {}
        for keys in (new, *others.values()):
            for name in keys.title_names or ("",):
                counted[name] = counted.get(name, 0) + 1
        title_counts = counted

    decisions: dict[tuple[str, str, str], EdgeDecision] = {}

    def decide(source: str, target: str, etype: str, weight: float, evidence: str) -> None:
        if not (math.isfinite(weight) and weight > 0.0):
            return
        known = decisions.get((source, target, etype))
        if known is None or weight > known.weight:
            decisions[(source, target, etype)] = EdgeDecision(
                source, target, etype, min(1.0, weight), evidence
            )

    def name_share(name: str) -> float:
        return 1.0 / max(1, title_counts.get(name, 1))

    def mention(citing: DocumentKeys, cited: DocumentKeys) -> tuple[float, str]:
        name = citing.mentions_title(cited)
        if not name:
            return 0.0, ""
        if name == cited.title_key:
            return name_share(name), f"mentions the title {cited.title_cased!r}"
        return name_share(name), f"mentions {cited.alias_cased!r}, the title without its qualifier"

    # Keys rare enough to be evidence, with each link's share (`1/(df − 1)`), read once.
    rare_keys = [
        (key, 1.0 / (holders - 1))
        for key in sorted(new.names | ({new.title_key} if new.title_key else set()))
        if (holders := rarity.df(key)) - 1 <= options.max_links
    ]
    pairs: list[_Pair] = []
    for other_id in sorted(others):
        other = others[other_id]
        pair = _Pair(other)
        if new.references_id(other):
            pair.cite_out, pair.cite_out_evidence = 1.0, f"names the id {other.id!r}"
        else:
            pair.cite_out, pair.cite_out_evidence = mention(new, other)
        if other.references_id(new):
            pair.cite_in, pair.cite_in_evidence = 1.0, f"names the id {new.id!r}"
        else:
            pair.cite_in, pair.cite_in_evidence = mention(other, new)
        for key, share in rare_keys:
            if key == new.title_key and key != other.title_key:
                continue  # the other naming this title is a citation, weighed above
            if key == other.title_key and key != new.title_key:
                continue  # likewise the other way
            if other.contains(key):
                pair.shared.append((key, share))
        pairs.append(pair)
        _cues(new, pair, decide)

    for pair in pairs:
        if pair.cite_out:
            decide(new.id, pair.other.id, "cite", pair.cite_out, pair.cite_out_evidence)
        if pair.cite_in:
            decide(pair.other.id, new.id, "cite", pair.cite_in, pair.cite_in_evidence)
    linked = sorted(
        (p for p in pairs if p.shared and not (p.cite_out or p.cite_in)),
        key=lambda p: (-p.strength, p.other.id),
    )[: options.max_links]
    for pair in linked:
        other = pair.other
        names = ", ".join(repr(k) for k, _ in pair.shared)
        same_title = bool(new.title_key) and new.title_key == other.title_key
        restated, _ = _restatement(new, other) if not same_title else (1.0, 0.0)
        if same_title or restated:
            why = "the same title" if same_title else "a restated sentence"
            decide(new.id, other.id, "corroborate", pair.strength, f"{why}; shares {names}")
            decide(other.id, new.id, "corroborate", pair.strength, f"{why}; shares {names}")
        else:
            decide(new.id, other.id, "elaborate", pair.strength, f"shares the rare keys {names}")
    return tuple(decisions[key] for key in sorted(decisions))


def _cues(new: DocumentKeys, pair: _Pair, decide: _Decide) -> None:
    """supersede and contradict: a cue in a sentence naming the other document (or a shared key),
    or a sentence restated with the opposite negation."""
    other = pair.other
    label = other.title_cased or other.id
    naming = [" ".join(token_list(other.id)), *other.title_names]
    named = _cues_naming(new, naming) if pair.cite_out else []
    if any(replacement for replacement, _ in named):
        decide(new.id, other.id, "supersede", pair.cite_out, f"a replacement cue naming {label!r}")
    if any(opposition for _, opposition in named):
        decide(new.id, other.id, "contradict", pair.cite_out, f"an opposition cue naming {label!r}")
        return
    if not pair.shared:
        return
    if any(opposition for _, opposition in _cues_naming(new, [k for k, _ in pair.shared])):
        decide(new.id, other.id, "contradict", pair.strength, "an opposition cue on a shared key")
        return
    _, opposite = _restatement(new, other)
    if opposite:
        decide(
            new.id,
            other.id,
            "contradict",
            opposite,
            "a sentence restated with the opposite negation",
        )
