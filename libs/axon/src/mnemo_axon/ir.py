"""The intermediate representation of checked declarations: frozen values that round-trip through JSON.

The store layer creates tables from `StoreDecl`s, the registry records each corpus with its
`Deployment.fingerprint(name)`, and the navigator builds graphs from `CorpusDecl`s. Nothing here
carries source positions (moving a declaration in its file does not change a corpus version) or the
ignored `connection:` string of a store (it may hold credentials; the deployment's database is used).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final, TypeVar

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
            "corpus": _corpus_to_dict(corpus),
            "documents": [_document_to_dict(d) for d in self.documents if d.name in declared],
            "stores": [_store_to_dict(s) for s in self.stores if s.name in store_names],
        }

    def fingerprint(self, name: str) -> str:
        """The version of one corpus: first 16 hex digits of SHA-256 over its canonical definition."""
        canonical = canonical_json(self.corpus_definition(name))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]

    def to_dict(self) -> dict[str, Any]:
        """The JSON object form of the IR."""
        return {
            "format": IR_FORMAT,
            "stores": [_store_to_dict(store) for store in self.stores],
            "documents": [_document_to_dict(document) for document in self.documents],
            "corpora": [_corpus_to_dict(corpus) for corpus in self.corpora],
        }

    def to_json(self, *, indent: int | None = None) -> str:
        """JSON text of the IR (canonical when `indent` is None)."""
        if indent is None:
            return canonical_json(self.to_dict())
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: object) -> Deployment:
        """Rebuild a deployment from `to_dict()` output; raises IrFormatError naming the bad path."""
        root = _Fields(data, "$")
        fmt = root.text("format")
        if fmt != IR_FORMAT:
            raise IrFormatError(f"$.format: expected {IR_FORMAT!r}, got {fmt!r}")
        deployment = cls(
            stores=tuple(_store_from(item) for item in root.objects("stores")),
            documents=tuple(_document_from(item) for item in root.objects("documents")),
            corpora=tuple(_corpus_from(item) for item in root.objects("corpora")),
        )
        root.finish()
        return deployment

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


# --- to JSON -------------------------------------------------------------------------------------


def _store_to_dict(store: StoreDecl) -> dict[str, Any]:
    return {
        "name": store.name,
        "backend": store.backend,
        "columns": [
            {
                "name": column.name,
                "type": column.type.value,
                "primary_key": column.primary_key,
                "unique": column.unique,
                "not_null": column.not_null,
                "default": None
                if column.default is None
                else {"kind": column.default.kind.value, "literal": column.default.literal},
            }
            for column in store.columns
        ],
    }


def _document_to_dict(document: DocumentDecl) -> dict[str, Any]:
    return {
        "name": document.name,
        "title": document.title,
        "source": document.source,
        "content": document.content,
    }


def _corpus_to_dict(corpus: CorpusDecl) -> dict[str, Any]:
    documents_store = corpus.documents_store
    relations_store = corpus.relations_store
    return {
        "name": corpus.name,
        "kind": corpus.kind.value,
        "documents": [
            {"name": ref.name, "origin": ref.origin.value, "path": ref.path}
            for ref in corpus.documents
        ],
        "relations": [
            {
                "etype": relation.etype,
                "from": relation.from_document,
                "to": relation.to_document,
                "weight": relation.weight,
            }
            for relation in corpus.relations
        ],
        "adaptive": corpus.adaptive,
        "mcp": None
        if corpus.mcp is None
        else {"server": corpus.mcp.server, "resource_uri": corpus.mcp.resource_uri},
        "documents_store": None
        if documents_store is None
        else {
            "store": documents_store.store,
            "id_column": documents_store.id_column,
            "title_column": documents_store.title_column,
            "body_column": documents_store.body_column,
        },
        "relations_store": None
        if relations_store is None
        else {
            "store": relations_store.store,
            "from_column": relations_store.from_column,
            "to_column": relations_store.to_column,
            "etype_column": relations_store.etype_column,
            "weight_column": relations_store.weight_column,
        },
    }


# --- from JSON -----------------------------------------------------------------------------------

_Enum = TypeVar("_Enum", bound=StrEnum)


class _Fields:
    """Strict reader of one JSON object: typed fields, JSONPath-like errors, no unknown keys."""

    def __init__(self, data: object, path: str) -> None:
        if not isinstance(data, Mapping):
            raise IrFormatError(f"{path}: expected an object, got {type(data).__name__}")
        self._data: Mapping[str, object] = data
        self.path = path
        self._read: set[str] = set()

    def _get(self, key: str, *, optional: bool = False) -> object:
        self._read.add(key)
        if key not in self._data:
            if optional:
                return None
            raise IrFormatError(f"{self.path}: missing field {key!r}")
        return self._data[key]

    def text(self, key: str) -> str:
        value = self._get(key)
        if not isinstance(value, str):
            raise IrFormatError(f"{self.path}.{key}: expected a string, got {value!r}")
        return value

    def optional_text(self, key: str) -> str | None:
        value = self._get(key, optional=True)
        if value is not None and not isinstance(value, str):
            raise IrFormatError(f"{self.path}.{key}: expected a string or null, got {value!r}")
        return value

    def flag(self, key: str) -> bool:
        value = self._get(key)
        if not isinstance(value, bool):
            raise IrFormatError(f"{self.path}.{key}: expected true or false, got {value!r}")
        return value

    def number(self, key: str) -> float:
        value = self._get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise IrFormatError(f"{self.path}.{key}: expected a number, got {value!r}")
        return float(value)

    def choice(self, key: str, enum: type[_Enum]) -> _Enum:
        value = self.text(key)
        try:
            return enum(value)
        except ValueError:
            allowed = ", ".join(member.value for member in enum)
            raise IrFormatError(
                f"{self.path}.{key}: expected one of {allowed}, got {value!r}"
            ) from None

    def objects(self, key: str) -> list[_Fields]:
        value = self._get(key)
        if not isinstance(value, list):
            raise IrFormatError(f"{self.path}.{key}: expected a list, got {value!r}")
        return [_Fields(item, f"{self.path}.{key}[{index}]") for index, item in enumerate(value)]

    def optional_object(self, key: str) -> _Fields | None:
        value = self._get(key, optional=True)
        return None if value is None else _Fields(value, f"{self.path}.{key}")

    def finish(self) -> None:
        unknown = sorted(set(self._data) - self._read)
        if unknown:
            raise IrFormatError(f"{self.path}: unknown field(s) {', '.join(map(repr, unknown))}")


def _store_from(fields: _Fields) -> StoreDecl:
    columns = []
    for column in fields.objects("columns"):
        type_name = column.text("type")
        column_type = AxonType.from_name(type_name)
        if column_type is None:
            raise IrFormatError(
                f"{column.path}.type: expected one of {', '.join(AxonType.names())}, "
                f"got {type_name!r}"
            )
        default_fields = column.optional_object("default")
        default = None
        if default_fields is not None:
            default = ColumnDefault(
                kind=default_fields.choice("kind", DefaultKind),
                literal=default_fields.optional_text("literal"),
            )
            default_fields.finish()
        columns.append(
            ColumnDecl(
                name=column.text("name"),
                type=column_type,
                primary_key=column.flag("primary_key"),
                unique=column.flag("unique"),
                not_null=column.flag("not_null"),
                default=default,
            )
        )
        column.finish()
    store = StoreDecl(
        name=fields.text("name"), columns=tuple(columns), backend=fields.text("backend")
    )
    fields.finish()
    return store


def _document_from(fields: _Fields) -> DocumentDecl:
    document = DocumentDecl(
        name=fields.text("name"),
        title=fields.optional_text("title"),
        source=fields.optional_text("source"),
        content=fields.optional_text("content"),
    )
    fields.finish()
    return document


def _corpus_from(fields: _Fields) -> CorpusDecl:
    documents = []
    for ref in fields.objects("documents"):
        documents.append(
            DocumentRef(
                name=ref.text("name"),
                origin=ref.choice("origin", DocumentOrigin),
                path=ref.optional_text("path"),
            )
        )
        ref.finish()
    relations = []
    for relation in fields.objects("relations"):
        relations.append(
            RelationDecl(
                etype=relation.text("etype"),
                from_document=relation.text("from"),
                to_document=relation.text("to"),
                weight=relation.number("weight"),
            )
        )
        relation.finish()
    mcp_fields = fields.optional_object("mcp")
    mcp = None
    if mcp_fields is not None:
        mcp = McpSource(
            server=mcp_fields.text("server"), resource_uri=mcp_fields.text("resource_uri")
        )
        mcp_fields.finish()
    documents_fields = fields.optional_object("documents_store")
    documents_store = None
    if documents_fields is not None:
        documents_store = DocumentsStoreMapping(
            store=documents_fields.text("store"),
            id_column=documents_fields.text("id_column"),
            title_column=documents_fields.text("title_column"),
            body_column=documents_fields.optional_text("body_column"),
        )
        documents_fields.finish()
    relations_fields = fields.optional_object("relations_store")
    relations_store = None
    if relations_fields is not None:
        relations_store = RelationsStoreMapping(
            store=relations_fields.text("store"),
            from_column=relations_fields.text("from_column"),
            to_column=relations_fields.text("to_column"),
            etype_column=relations_fields.text("etype_column"),
            weight_column=relations_fields.text("weight_column"),
        )
        relations_fields.finish()
    corpus = CorpusDecl(
        name=fields.text("name"),
        kind=fields.choice("kind", CorpusKind),
        documents=tuple(documents),
        relations=tuple(relations),
        adaptive=fields.flag("adaptive"),
        mcp=mcp,
        documents_store=documents_store,
        relations_store=relations_store,
    )
    fields.finish()
    _require_kind_fields(corpus, fields.path)
    return corpus


def _require_kind_fields(corpus: CorpusDecl, path: str) -> None:
    if corpus.kind is CorpusKind.MCP and corpus.mcp is None:
        raise IrFormatError(f"{path}: an mcp corpus needs 'mcp'")
    if corpus.kind is CorpusKind.STORE_GRAPH and (
        corpus.documents_store is None or corpus.relations_store is None
    ):
        raise IrFormatError(
            f"{path}: a store_graph corpus needs 'documents_store' and 'relations_store'"
        )
