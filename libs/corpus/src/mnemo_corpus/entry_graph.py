"""A corpus as a graph for the MDN engine: one document per entry, one edge per link.

Two kinds of link become edges:
- `related` paths (a directory corpus fills them from its cross-links file), as `depend` edges of
  weight 0.5 unless configured otherwise: structure that lets a navigation reach the neighbour;
- `[[alias]]` wiki-links in an entry's text (outside code), resolved through the corpus's
  aliases, as `cite` edges: the text vouches for what it cites.

A link whose target cannot be resolved is never dropped silently and never invented: it is
listed in `unresolved_links`. A `related` path that would be a document of this corpus if the
file existed is also kept as a pending edge, which the write path holds until the document
arrives; the in-process graph leaves it out, since an edge must join two loaded documents.
"""

from __future__ import annotations

import math
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from mnemo_mdn import RELATION_TYPES, CorpusGraph, Document, Edge
from mnemo_mdn.lexical_index import classify_corpus

from mnemo_corpus.entry import RetrievalEntry
from mnemo_corpus.errors import DuplicateAliasError
from mnemo_corpus.markdown import entry_title, wiki_links
from mnemo_corpus.protocol import CorpusProtocol

DEFAULT_RELATED_ETYPE = "depend"
DEFAULT_RELATED_WEIGHT = 0.5
DEFAULT_WIKI_LINK_ETYPE = "cite"
DEFAULT_WIKI_LINK_WEIGHT = 0.5


class LinkKind(StrEnum):
    """Where a link was found."""

    RELATED = "related"
    WIKI_LINK = "wiki-link"


@dataclass(frozen=True, slots=True)
class LinkOptions:
    """The edge type and weight each kind of link becomes."""

    related_etype: str = DEFAULT_RELATED_ETYPE
    related_weight: float = DEFAULT_RELATED_WEIGHT
    wiki_link_etype: str = DEFAULT_WIKI_LINK_ETYPE
    wiki_link_weight: float = DEFAULT_WIKI_LINK_WEIGHT

    def __post_init__(self) -> None:
        for option, etype in (
            ("related_etype", self.related_etype),
            ("wiki_link_etype", self.wiki_link_etype),
        ):
            if etype not in RELATION_TYPES:
                catalog = ", ".join(sorted(RELATION_TYPES))
                raise ValueError(f"{option} {etype!r} is not a relation type (one of: {catalog})")
        for option, weight in (
            ("related_weight", self.related_weight),
            ("wiki_link_weight", self.wiki_link_weight),
        ):
            if not (math.isfinite(weight) and 0.0 < weight <= 1.0):
                raise ValueError(f"{option} must be in (0, 1], got {weight}")


@dataclass(frozen=True, slots=True)
class UnresolvedLink:
    """A link that leads to no entry of the corpus.

    `source` is the linking entry's path, `target` the link as written, `reason` why it does
    not resolve. `pending` is true when it is still published as an edge (see `pending_edges`).
    """

    source: str
    target: str
    kind: LinkKind
    reason: str
    pending: bool = False

    def describe(self) -> str:
        kept = "; kept as a pending edge" if self.pending else ""
        return f"{self.source} -> {self.target} ({self.kind.value}: {self.reason}{kept})"


@dataclass(frozen=True, slots=True)
class EntryGraph:
    """The documents and edges of a corpus, and the links that did not resolve.

    Documents are in the corpus's entry order (path order for a directory corpus), which is the
    declared order the engine breaks ties by.
    """

    documents: tuple[Document, ...]
    edges: tuple[Edge, ...]
    pending_edges: tuple[Edge, ...]
    unresolved_links: tuple[UnresolvedLink, ...]

    def to_corpus_graph(self, *, classify: bool = False) -> CorpusGraph:
        """The engine's graph: documents and resolved edges (pending edges join no document).

        With `classify`, plus the edges the lexical edge classifier finds between the documents
        (`mnemo_mdn.lexical_index.classify_corpus`, the edge-classifier service's rules); an edge
        the links already give (same ends and type) is not added twice.
        """
        edges = list(self.edges)
        if classify:
            known = {(edge.source, edge.target, edge.etype) for edge in edges}
            edges += [
                decision.to_edge()
                for decision in classify_corpus(self.documents)
                if (decision.source, decision.target, decision.etype) not in known
            ]
        return CorpusGraph.build(list(self.documents), edges, order="declared")


def entry_graph(corpus: CorpusProtocol, options: LinkOptions | None = None) -> EntryGraph:
    """Turn `corpus` into documents (id = path, title, body = content) and edges.

    Wiki-links resolve through the entries' aliases (exactly, case-sensitive); an entry citing
    one of its own aliases gets no edge, since a text naming itself is not a citation.
    Repeated links between the same two entries give one edge per edge type.
    """
    options = options or LinkOptions()
    entries = tuple(corpus.entries())
    paths = {entry.path for entry in entries}
    alias_owners = _alias_owners(entries)

    documents = tuple(
        Document(id=entry.path, title=entry_title(entry), body=entry.content) for entry in entries
    )
    edges: dict[tuple[str, str, str], Edge] = {}
    pending_edges: dict[tuple[str, str, str], Edge] = {}
    unresolved: list[UnresolvedLink] = []
    for entry in entries:
        for target in entry.related:
            document_id, reason = _resolve_related_path(target, paths)
            if document_id is not None:
                key = (entry.path, document_id, options.related_etype)
                link = Edge(entry.path, document_id, options.related_etype, options.related_weight)
                (edges if reason is None else pending_edges).setdefault(key, link)
            if reason is not None:
                unresolved.append(
                    UnresolvedLink(
                        entry.path,
                        target,
                        LinkKind.RELATED,
                        reason,
                        pending=document_id is not None,
                    )
                )
        for alias in wiki_links(entry.content):
            owner = alias_owners.get(alias)
            if owner is None:
                unresolved.append(
                    UnresolvedLink(entry.path, alias, LinkKind.WIKI_LINK, "no entry has this alias")
                )
                continue
            if owner == entry.path:
                continue
            edges.setdefault(
                (entry.path, owner, options.wiki_link_etype),
                Edge(entry.path, owner, options.wiki_link_etype, options.wiki_link_weight),
            )
    return EntryGraph(
        documents=documents,
        edges=tuple(edges.values()),
        pending_edges=tuple(pending_edges.values()),
        unresolved_links=tuple(unresolved),
    )


def _alias_owners(entries: Iterable[RetrievalEntry]) -> dict[str, str]:
    """Alias → path, refusing an alias claimed by two entries (as a directory corpus does)."""
    owners: dict[str, str] = {}
    for entry in entries:
        for alias in entry.aliases:
            earlier = owners.setdefault(alias, entry.path)
            if earlier != entry.path:
                raise DuplicateAliasError(alias, earlier, entry.path)
    return owners


def _resolve_related_path(target: str, paths: set[str]) -> tuple[str | None, str | None]:
    """Where a related path leads: `(document id, reason it does not resolve)`.

    - `(id, None)`: an entry of the corpus;
    - `(id, reason)`: no such entry, but a document of this corpus could have that id, so the
      edge is kept pending;
    - `(None, reason)`: no document of this corpus can ever have it.

    Related paths are root-relative, written like the keys; `./` and `..` segments are
    normalised, so `guides/../setup.md` reaches `setup.md`.
    """
    if target in paths:
        return target, None
    if target.startswith("/"):
        return None, "an absolute path; links are relative to the corpus root"
    normalised = posixpath.normpath(target) if target else ""
    if normalised in ("", "."):
        return None, "an empty path"
    if normalised == ".." or normalised.startswith("../"):
        return None, "leaves the corpus root"
    if normalised in paths:
        return normalised, None
    return normalised, "no such entry"
