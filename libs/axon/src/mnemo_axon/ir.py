"""The intermediate representation of checked declarations: frozen values that round-trip through JSON.

The store layer creates tables from `StoreDecl`s, the registry records each corpus with its
`Deployment.fingerprint(name)`, and the navigator builds graphs from `CorpusDecl`s. Nothing here
carries source positions (moving a declaration in its file does not change a corpus version) or the
ignored `connection:` string of a store (it may hold credentials; the deployment's database is used).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from mnemo_axon.column_types import AxonType
from mnemo_axon.errors import IrFormatError

IR_FORMAT: Final = "mnemo.axon.ir/1"

# The closed relation catalog of the seed, in the order the G3 message lists it.
RELATION_CATALOG: Final[tuple[str, ...]] = (
    "cite",
    "corroborate",
    "contradict",
    "depend",
    "elaborate",
    "exemplify",
    "implement",
    "supersede",
)


class CorpusKind(StrEnum):
    """Which of the seed's four corpus forms a declaration uses."""

    INLINE = "inline"  # form (a): a document list, no relations
    MCP = "mcp"  # form (b): `from mcp("server", "uri")`
    GRAPH = "graph"  # form (c): a document list with `relations:`
    STORE_GRAPH = "store_graph"  # form (d): `from axonstore { ... }`


class DefaultKind(StrEnum):
    """What a column's `default(...)` modifier holds."""

    NOW = "now"  # default(now()); `literal` is None
    TEXT = "text"  # a string literal; `literal` is its content
    NUMBER = "number"  # a number literal; `literal` is its text as written
    BOOLEAN = "boolean"  # true or false; `literal` is "true" or "false"
    NULL = "null"  # default(null); `literal` is None


class DocumentOrigin(StrEnum):
    """Where a corpus member's name was resolved."""

    DECLARATION = "declaration"  # a `document` declaration of the same deployment
    DIRECTORY = "directory"  # the deployment's document directory (by alias, else path stem)


@dataclass(frozen=True, slots=True)
class ColumnDefault:
    """A column default; the store layer renders it into DDL according to `kind`."""

    kind: DefaultKind
    literal: str | None = None


@dataclass(frozen=True, slots=True)
class ColumnDecl:
    """One column of an `axonstore` schema."""

    name: str
    type: AxonType
    primary_key: bool = False
    unique: bool = False
    not_null: bool = False
    default: ColumnDefault | None = None


@dataclass(frozen=True, slots=True)
class StoreDecl:
    """An `axonstore`: one table, created by `mnemo apply` in the deployment's database."""

    name: str
    columns: tuple[ColumnDecl, ...]
    backend: str = "postgresql"

    def column(self, name: str) -> ColumnDecl | None:
        """The column called `name` (case-sensitive), or None."""
        return next((column for column in self.columns if column.name == name), None)

    @property
    def column_types(self) -> dict[str, AxonType]:
        """Column name → type, in schema order (what the `where:` renderer needs)."""
        return {column.name: column.type for column in self.columns}


@dataclass(frozen=True, slots=True)
class DocumentDecl:
    """A `document` declaration: a corpus member written in the `.axon` file itself."""

    name: str
    title: str | None = None
    source: str | None = None
    content: str | None = None


@dataclass(frozen=True, slots=True)
class DocumentRef:
    """A resolved member of an inline or graph corpus (`path` is set for directory documents)."""

    name: str
    origin: DocumentOrigin
    path: str | None = None


@dataclass(frozen=True, slots=True)
class RelationDecl:
    """A typed weighted edge `etype(from, to, weight)` of a graph corpus."""

    etype: str
    from_document: str
    to_document: str
    weight: float


@dataclass(frozen=True, slots=True)
class McpSource:
    """The foreign MCP server and resource URI of a form (b) corpus."""

    server: str
    resource_uri: str


@dataclass(frozen=True, slots=True)
class DocumentsStoreMapping:
    """Form (d): which store holds the documents and which columns give id, title and body."""

    store: str
    id_column: str
    title_column: str
    body_column: str | None = None


@dataclass(frozen=True, slots=True)
class RelationsStoreMapping:
    """Form (d): which store holds the edges and which columns give from, to, type and weight."""

    store: str
    from_column: str
    to_column: str
    etype_column: str
    weight_column: str


@dataclass(frozen=True, slots=True)
class CorpusDecl:
    """A `corpus` declaration; the fields that are set depend on `kind`."""

    name: str
    kind: CorpusKind
    documents: tuple[DocumentRef, ...] = ()
    relations: tuple[RelationDecl, ...] = ()
    adaptive: bool = False
    mcp: McpSource | None = None
    documents_store: DocumentsStoreMapping | None = None
    relations_store: RelationsStoreMapping | None = None


@dataclass(frozen=True, slots=True)
class Deployment:
    """Every checked declaration of a deployment, in source order (files in the order given)."""

    stores: tuple[StoreDecl, ...] = ()
    documents: tuple[DocumentDecl, ...] = ()
    corpora: tuple[CorpusDecl, ...] = ()

    def store(self, name: str) -> StoreDecl | None:
        """The store called `name`, or None."""
        return next((store for store in self.stores if store.name == name), None)

    def document(self, name: str) -> DocumentDecl | None:
        """The declared document called `name`, or None."""
        return next((document for document in self.documents if document.name == name), None)

    def corpus(self, name: str) -> CorpusDecl | None:
        """The corpus called `name`, or None."""
        return next((corpus for corpus in self.corpora if corpus.name == name), None)

    def corpus_definition(self, name: str) -> dict[str, Any]:
        """A self-contained JSON object for one corpus: the corpus plus what it reads.

        That is the declared documents it lists and the stores a form (d) corpus reads, so that a
        change to any of them changes the corpus's fingerprint. Raises KeyError for an unknown name.
        """
        from mnemo_axon import ir_json

        corpus = self.corpus(name)
        if corpus is None:
            raise KeyError(f"no corpus named {name!r} in this deployment")
        declared = {
            ref.name for ref in corpus.documents if ref.origin is DocumentOrigin.DECLARATION
        }
        store_names = {
            mapping.store
            for mapping in (corpus.documents_store, corpus.relations_store)
            if mapping is not None
        }
        return {
            "format": IR_FORMAT,
            "corpus": ir_json.corpus_to_dict(corpus),
            "documents": [
                ir_json.document_to_dict(d) for d in self.documents if d.name in declared
            ],
            "stores": [ir_json.store_to_dict(s) for s in self.stores if s.name in store_names],
        }

    def fingerprint(self, name: str) -> str:
        """The version of one corpus: first 16 hex digits of SHA-256 over its canonical definition."""
        canonical = canonical_json(self.corpus_definition(name))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]

    def to_dict(self) -> dict[str, Any]:
        """The JSON object form of the IR."""
        from mnemo_axon import ir_json  # it builds on the classes of this module

        return ir_json.deployment_to_dict(self)

    def to_json(self, *, indent: int | None = None) -> str:
        """JSON text of the IR (canonical when `indent` is None)."""
        if indent is None:
            return canonical_json(self.to_dict())
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: object) -> Deployment:
        """Rebuild a deployment from `to_dict()` output; raises IrFormatError naming the bad path."""
        from mnemo_axon import ir_json

        return ir_json.deployment_from_dict(data)

    @classmethod
    def from_json(cls, text: str) -> Deployment:
        """Rebuild a deployment from `to_json()` output; raises IrFormatError when it is not one."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise IrFormatError(f"not JSON: {error}") from error
        return cls.from_dict(data)


def canonical_json(value: object) -> str:
    """Sorted keys, no insignificant whitespace, UTF-8 text: the form every fingerprint hashes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
