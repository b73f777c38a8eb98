"""A store-sourced corpus (form (d)) resolved against its stores: what graph loading reads.

The navigator finds a corpus in the registry (`mnemo.corpora.definition`, the IR of the corpus
plus the stores it reads) and turns it into a `StoreCorpus` once; loading and reinforcement take it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mnemo_axon.column_types import AxonType
from mnemo_axon.ir import IR_FORMAT, CorpusKind, Deployment, StoreDecl

from mnemo_store.errors import NotAStoreCorpusError, UnknownStoreError


@dataclass(frozen=True, slots=True)
class StoreCorpus:
    """A form (d) corpus: which store and columns give documents, and which give edges."""

    name: str
    documents: StoreDecl
    id_column: str
    title_column: str
    body_column: str | None
    relations: StoreDecl
    from_column: str
    to_column: str
    etype_column: str
    weight_column: str
    adaptive: bool

    @property
    def scope_columns(self) -> tuple[str, ...]:
        """The sub-tenant scope of the corpus's edges: the columns its documents and edges stores
        share (same name and type, no default), other than the graph's own columns. For the memory
        corpus that is `tenant_id`. Ingest keeps an edge's ends in one scope by them; the edge
        classifier looks for candidates only in the new document's."""
        own = {
            self.id_column,
            self.title_column,
            self.body_column,
            self.from_column,
            self.to_column,
            self.etype_column,
            self.weight_column,
        }
        shared = []
        for column in self.relations.columns:
            twin = self.documents.column(column.name)
            if (
                twin is not None
                and twin.type is column.type
                and column.name not in own
                and column.default is None
                and twin.default is None
            ):
                shared.append(column.name)
        return tuple(shared)

    @property
    def id_type(self) -> AxonType:
        """The declared type of the document id column (the edge endpoints have the same type)."""
        column = self.documents.column(self.id_column)
        if column is None:  # the checker guarantees it; a hand-written definition may not
            raise UnknownStoreError(
                f"corpus {self.name!r}: store {self.documents.name!r} has no column "
                f"{self.id_column!r} (the document id)"
            )
        return column.type

    @classmethod
    def from_deployment(cls, deployment: Deployment, name: str) -> StoreCorpus:
        """The store corpus called `name` of a compiled deployment."""
        corpus = deployment.corpus(name)
        if corpus is None:
            raise NotAStoreCorpusError(f"no corpus named {name!r} in these declarations")
        documents, relations = corpus.documents_store, corpus.relations_store
        if corpus.kind is not CorpusKind.STORE_GRAPH or documents is None or relations is None:
            raise NotAStoreCorpusError(
                f"corpus {name!r} is a {corpus.kind.value} corpus; only `corpus {name} from "
                "axonstore { ... }` (store_graph) corpora are loaded from stores"
            )
        return cls(
            name=name,
            documents=_store(deployment, name, documents.store),
            id_column=documents.id_column,
            title_column=documents.title_column,
            body_column=documents.body_column,
            relations=_store(deployment, name, relations.store),
            from_column=relations.from_column,
            to_column=relations.to_column,
            etype_column=relations.etype_column,
            weight_column=relations.weight_column,
            adaptive=corpus.adaptive,
        )

    @classmethod
    def from_definition(cls, definition: Mapping[str, Any]) -> StoreCorpus:
        """From a registry row's `definition` (`Deployment.corpus_definition` output)."""
        corpus = definition.get("corpus")
        if not isinstance(corpus, Mapping) or not isinstance(corpus.get("name"), str):
            raise NotAStoreCorpusError(
                "a corpus definition must be Deployment.corpus_definition output with a 'corpus'"
            )
        deployment = Deployment.from_dict(
            {
                "format": definition.get("format", IR_FORMAT),
                "stores": definition.get("stores", []),
                "documents": definition.get("documents", []),
                "corpora": [corpus],
            }
        )
        return cls.from_deployment(deployment, corpus["name"])


def _store(deployment: Deployment, corpus: str, name: str) -> StoreDecl:
    store = deployment.store(name)
    if store is None:
        raise UnknownStoreError(f"corpus {corpus!r} reads store {name!r}, which is not declared")
    return store
