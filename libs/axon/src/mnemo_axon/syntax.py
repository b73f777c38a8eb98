"""The syntax tree of a `.axon` declarations file: what the parser read, with a position on every node.

The tree is as written (names are still names, types are still words); the checker turns it into the
IR of `mnemo_axon.ir`. Every node carries a 1-based `line` and `column` so that each diagnostic can
point at the exact token it is about.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Located:
    """A word, string or number as written, with its 1-based line and column."""

    text: str
    line: int
    column: int


@dataclass(frozen=True, slots=True)
class DefaultNode:
    """`default(...)`: `kind` is now, text, number, boolean or null; `value` the literal."""

    kind: str
    value: Located


@dataclass(frozen=True, slots=True)
class ColumnNode:
    """`name: Type modifier*` inside a `schema { ... }` block."""

    name: Located
    type_name: Located
    primary_key: bool
    unique: bool
    not_null: bool
    default: DefaultNode | None


@dataclass(frozen=True, slots=True)
class StoreNode:
    """An `axonstore Name { ... }` block."""

    keyword: Located
    name: Located
    backend: Located | None
    connection: Located | None
    schema: Located | None  # the `schema` keyword, None when the block has none
    columns: tuple[ColumnNode, ...]


@dataclass(frozen=True, slots=True)
class DocumentNode:
    """A `document Name { title: ... source: ... content: ... }` block."""

    keyword: Located
    name: Located
    title: Located | None
    source: Located | None
    content: Located | None


@dataclass(frozen=True, slots=True)
class RelationNode:
    """`etype(from, to, weight)` inside `relations: [ ... ]`."""

    etype: Located
    from_document: Located
    to_document: Located
    weight: Located


@dataclass(frozen=True, slots=True)
class ListCorpusNode:
    """Forms (a) and (c): `corpus Name { documents: [...] relations: [...]? adaptive: ...? }`."""

    keyword: Located
    name: Located
    documents: tuple[Located, ...] | None  # None when `documents:` is absent
    relations: tuple[RelationNode, ...] | None  # None when `relations:` is absent
    relations_keyword: Located | None
    adaptive: Located | None  # the `true`/`false` word


@dataclass(frozen=True, slots=True)
class McpCorpusNode:
    """Form (b): `corpus Name from mcp("server", "uri")`."""

    keyword: Located
    name: Located
    server: Located
    resource_uri: Located


@dataclass(frozen=True, slots=True)
class StoreMappingNode:
    """`Store(col, col, ...)` in a form (d) corpus."""

    store: Located
    columns: tuple[Located, ...]


@dataclass(frozen=True, slots=True)
class StoreCorpusNode:
    """Form (d): `corpus Name from axonstore { documents: S(...) relations: E(...) adaptive? }`."""

    keyword: Located
    name: Located
    documents: StoreMappingNode
    relations: StoreMappingNode
    adaptive: Located | None


CorpusNode = ListCorpusNode | McpCorpusNode | StoreCorpusNode
DeclarationNode = StoreNode | DocumentNode | CorpusNode


@dataclass(frozen=True, slots=True)
class SkippedBlock:
    """A `flow`, `step` or `for` block: not compiled (flows are the system's API), only skipped."""

    keyword: str
    name: str | None
    line: int
    column: int


@dataclass(frozen=True, slots=True)
class SyntaxProblem:
    """A problem found while reading a file, before any check runs."""

    line: int
    column: int
    message: str


@dataclass(frozen=True, slots=True)
class ParsedFile:
    """What the parser read from one file: declarations, skipped blocks and syntax problems."""

    filename: str
    declarations: tuple[DeclarationNode, ...]
    skipped: tuple[SkippedBlock, ...]
    problems: tuple[SyntaxProblem, ...]
