"""The checker: every rule of AXON.md §2 over parsed files, then lowering to the IR.

All problems of a run are collected (never just the first) with the position of the token they are
about; the IR is only built when there are none. Besides the spec's table, the checker refuses what
the store layer could not create safely: unknown types or backends, duplicate columns, defaults that
do not fit their column, stores without columns, and every rule of `mnemo_axon.rules` (reserved
columns, names Postgres could generate for another store, identifiers longer than Postgres allows,
too many columns, corpus ids too long), which the store planner enforces with the same functions.
Those messages follow the same "what is wrong, what would be right" form.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mnemo_axon.column_types import AxonType
from mnemo_axon.column_values import (
    ValueConversionError,
    value_from_boolean,
    value_from_number,
    value_from_text,
)
from mnemo_axon.document_directory import DocumentDirectory
from mnemo_axon.errors import Diagnostic
from mnemo_axon.ir import (
    RELATION_CATALOG,
    ColumnDecl,
    ColumnDefault,
    CorpusDecl,
    CorpusKind,
    DefaultKind,
    Deployment,
    DocumentDecl,
    DocumentOrigin,
    DocumentRef,
    DocumentsStoreMapping,
    McpSource,
    RelationDecl,
    RelationsStoreMapping,
    StoreDecl,
)
from mnemo_axon.rules import (
    column_count_problem,
    column_name_problem,
    corpus_name_problem,
    store_name_problem,
)
from mnemo_axon.syntax import (
    ColumnNode,
    DeclarationNode,
    DocumentNode,
    ListCorpusNode,
    Located,
    McpCorpusNode,
    ParsedFile,
    SkippedBlock,
    StoreCorpusNode,
    StoreNode,
)


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The outcome of a compile run: the IR when there were no problems, and every problem found."""

    deployment: Deployment | None
    diagnostics: tuple[Diagnostic, ...]
    skipped: tuple[tuple[str, SkippedBlock], ...]  # (file, block) of every flow block skipped

    @property
    def ok(self) -> bool:
        return not self.diagnostics


def check_files(
    files: Sequence[ParsedFile], directory: DocumentDirectory | None = None
) -> CheckResult:
    """Check the declarations of every file as one deployment and lower them to the IR."""
    return _Checker(files, directory).run()


@dataclass(frozen=True, slots=True)
class _Declared:
    file_index: int
    node: DeclarationNode


class _Checker:
    def __init__(self, files: Sequence[ParsedFile], directory: DocumentDirectory | None) -> None:
        self._files = files
        self._directory = directory
        self._diagnostics: list[tuple[int, Diagnostic]] = []
        self._file_index = 0
        self._file = ""
        self._by_name: dict[str, DeclarationNode] = {}
        self._column_types: dict[str, dict[str, AxonType]] = {}

    def _report(self, at: Located, message: str) -> None:
        self._diagnostics.append(
            (self._file_index, Diagnostic(self._file, at.line, at.column, message))
        )

    def run(self) -> CheckResult:
        unique: list[_Declared] = []
        for index, parsed in enumerate(self._files):
            self._enter(index)
            for problem in parsed.problems:
                self._report(Located("", problem.line, problem.column), problem.message)
            for node in parsed.declarations:
                if node.name.text in self._by_name:
                    self._report(node.name, f"'{node.name.text}' is declared twice")
                    continue
                self._by_name[node.name.text] = node
                unique.append(_Declared(index, node))

        stores: list[StoreDecl] = []
        documents: list[DocumentDecl] = []
        corpora: list[CorpusDecl] = []
        # Stores first: form (d) corpora check their columns against them, wherever they are.
        for declared in unique:
            if isinstance(declared.node, StoreNode):
                self._enter(declared.file_index)
                stores.append(self._check_store(declared.node))
        for declared in unique:
            self._enter(declared.file_index)
            node = declared.node
            if not isinstance(node, StoreNode | DocumentNode):
                self._check_corpus_name(node.name)
            if isinstance(node, DocumentNode):
                documents.append(_lower_document(node))
            elif isinstance(node, ListCorpusNode):
                corpora.append(self._check_list_corpus(node))
            elif isinstance(node, McpCorpusNode):
                corpora.append(self._check_mcp_corpus(node))
            elif isinstance(node, StoreCorpusNode):
                corpora.append(self._check_store_corpus(node))

        ordered = tuple(
            diagnostic
            for _, diagnostic in sorted(
                self._diagnostics, key=lambda item: (item[0], item[1].line, item[1].column)
            )
        )
        skipped = tuple(
            (parsed.filename, block) for parsed in self._files for block in parsed.skipped
        )
        deployment = None
        if not ordered:
            deployment = Deployment(
                stores=tuple(stores), documents=tuple(documents), corpora=tuple(corpora)
            )
        return CheckResult(deployment=deployment, diagnostics=ordered, skipped=skipped)

    def _enter(self, file_index: int) -> None:
        self._file_index = file_index
        self._file = self._files[file_index].filename

    # --- stores ----------------------------------------------------------------------------------

    def _report_problem(self, at: Located, problem: str | None) -> bool:
        """Report `problem` (from `mnemo_axon.rules`) at `at`; whether there was one."""
        if problem is not None:
            self._report(at, problem)
        return problem is not None

    def _check_corpus_name(self, at: Located) -> None:
        self._report_problem(at, corpus_name_problem(at.text))

    def _check_store(self, node: StoreNode) -> StoreDecl:
        store = node.name.text
        self._report_problem(node.name, store_name_problem(store))
        if node.backend is not None and node.backend.text != "postgresql":
            self._report(
                node.backend,
                f"Store '{store}': unsupported backend '{node.backend.text}' (expected postgresql)",
            )
        if not node.columns:
            self._report(
                node.schema or node.name,
                f"Store '{store}' declares no columns (add 'schema {{ name: Type ... }}')",
            )
        columns: list[ColumnDecl] = []
        types: dict[str, AxonType] = {}
        seen: set[str] = set()
        for column in node.columns:
            name = column.name.text
            if name in seen:
                self._report(column.name, f"Store '{store}': column '{name}' is declared twice")
                continue
            seen.add(name)
            if self._report_problem(column.name, column_name_problem(store, name)):
                continue
            lowered = self._check_column(store, column)
            if lowered is not None:
                columns.append(lowered)
                types[name] = lowered.type
        self._report_problem(
            node.schema or node.name, column_count_problem(store, len(node.columns))
        )
        self._column_types[store] = types
        return StoreDecl(name=store, columns=tuple(columns))

    def _check_column(self, store: str, column: ColumnNode) -> ColumnDecl | None:
        type_name = column.type_name.text
        axon_type = AxonType.from_name(type_name)
        if axon_type is None:
            near = next((n for n in AxonType.names() if n.lower() == type_name.lower()), None)
            hint = f"did you mean {near}? " if near else ""
            self._report(
                column.type_name,
                f"Store '{store}': unknown type '{type_name}' for column '{column.name.text}' "
                f"({hint}expected one of {', '.join(AxonType.names())})",
            )
            return None
        default = None
        if column.default is not None:
            default = self._check_default(store, column, axon_type)
        return ColumnDecl(
            name=column.name.text,
            type=axon_type,
            primary_key=column.primary_key,
            unique=column.unique,
            not_null=column.not_null,
            default=default,
        )

    def _check_default(
        self, store: str, column: ColumnNode, axon_type: AxonType
    ) -> ColumnDefault | None:
        assert column.default is not None
        kind = DefaultKind(column.default.kind)
        literal = column.default.value
        prefix = f"Store '{store}': default of column '{column.name.text}'"
        try:
            if kind is DefaultKind.NOW and not axon_type.is_temporal:
                raise ValueConversionError(
                    f"now() is a time; a {axon_type.value} column cannot default to it"
                )
            if kind is DefaultKind.TEXT:
                value_from_text(literal.text, axon_type)
            elif kind is DefaultKind.NUMBER:
                value_from_number(literal.text, axon_type)
            elif kind is DefaultKind.BOOLEAN:
                value_from_boolean(literal.text == "true", axon_type)
        except ValueConversionError as error:
            self._report(literal, f"{prefix} does not fit type {axon_type.value}: {error}")
            return None
        if kind in (DefaultKind.NOW, DefaultKind.NULL):
            return ColumnDefault(kind)
        return ColumnDefault(kind, literal.text)

    # --- corpora ---------------------------------------------------------------------------------

    def _check_list_corpus(self, node: ListCorpusNode) -> CorpusDecl:
        corpus = node.name.text
        names = node.documents or ()
        if not names:
            self._report(
                node.name,
                f"Corpus '{corpus}' requires at least one document or an mcp_server (G1: D ≠ ∅)",
            )
        refs: list[DocumentRef] = []
        members: set[str] = set()
        for name in names:
            if name.text in members:
                self._report(
                    name,
                    f"Corpus '{corpus}': document '{name.text}' is listed twice "
                    "(list each member once)",
                )
                continue
            members.add(name.text)
            ref = self._resolve(name.text)
            if ref is None:
                self._report(name, f"Corpus '{corpus}': unknown document '{name.text}'")
            else:
                refs.append(ref)
        relations: list[RelationDecl] = []
        for relation in node.relations or ():
            etype = relation.etype.text
            if etype not in RELATION_CATALOG:
                self._report(
                    relation.etype,
                    f"Corpus '{corpus}': unknown relation type '{etype}' "
                    f"(closed catalog: {', '.join(RELATION_CATALOG)})",
                )
            for endpoint in (relation.from_document, relation.to_document):
                if endpoint.text not in members:
                    self._report(
                        endpoint,
                        f"Corpus '{corpus}': relation references undeclared document "
                        f"'{endpoint.text}' (G2: edges connect corpus members)",
                    )
            weight = float(relation.weight.text)
            if not 0 < weight <= 1:
                self._report(
                    relation.weight,
                    f"Corpus '{corpus}': relation weight {relation.weight.text} must be in (0, 1] "
                    "(G4)",
                )
            relations.append(
                RelationDecl(
                    etype=etype,
                    from_document=relation.from_document.text,
                    to_document=relation.to_document.text,
                    weight=weight,
                )
            )
        adaptive = node.adaptive is not None and node.adaptive.text == "true"
        if adaptive and not node.relations:
            assert node.adaptive is not None
            self._report(
                node.adaptive,
                f"Corpus '{corpus}': `adaptive: true` requires `relations:` — memory deforms the "
                "graph, an edgeless corpus has nothing to learn",
            )
        return CorpusDecl(
            name=corpus,
            kind=CorpusKind.INLINE if node.relations is None else CorpusKind.GRAPH,
            documents=tuple(refs),
            relations=tuple(relations),
            adaptive=adaptive,
        )

    def _resolve(self, name: str) -> DocumentRef | None:
        declared = self._by_name.get(name)
        if isinstance(declared, DocumentNode):
            return DocumentRef(name=name, origin=DocumentOrigin.DECLARATION)
        if self._directory is not None:
            path = self._directory.lookup(name)
            if path is not None:
                return DocumentRef(name=name, origin=DocumentOrigin.DIRECTORY, path=path)
        return None

    def _check_mcp_corpus(self, node: McpCorpusNode) -> CorpusDecl:
        corpus = node.name.text
        if not node.server.text.strip():
            self._report(
                node.server,
                f"Corpus '{corpus}' requires at least one document or an mcp_server (G1: D ≠ ∅)",
            )
        if not node.resource_uri.text.strip():
            self._report(
                node.resource_uri,
                f"Corpus '{corpus}': the MCP resource URI is empty (give the corpus root, "
                'e.g. "kb://guidelines/2025")',
            )
        return CorpusDecl(
            name=corpus,
            kind=CorpusKind.MCP,
            mcp=McpSource(server=node.server.text, resource_uri=node.resource_uri.text),
        )

    def _store_columns(self, corpus: str, role: str, store: Located) -> dict[str, AxonType] | None:
        if not isinstance(self._by_name.get(store.text), StoreNode):
            self._report(
                store, f"Corpus '{corpus}': {role} store '{store.text}' is not a declared axonstore"
            )
            return None
        return self._column_types.get(store.text, {})

    def _column_type(
        self,
        corpus: str,
        role: str,
        store: Located,
        columns: dict[str, AxonType] | None,
        column: Located,
        meaning: str,
    ) -> AxonType | None:
        if columns is None:
            return None
        found = columns.get(column.text)
        if found is None and not self._has_column_node(store.text, column.text):
            self._report(
                column,
                f"Corpus '{corpus}': {role} store '{store.text}' has no column '{column.text}' "
                f"({meaning})",
            )
        return found  # None too when the column exists with a type already reported as unknown

    def _has_column_node(self, store: str, column: str) -> bool:
        node = self._by_name.get(store)
        return isinstance(node, StoreNode) and any(c.name.text == column for c in node.columns)

    def _check_store_corpus(self, node: StoreCorpusNode) -> CorpusDecl:
        corpus = node.name.text
        documents, relations = node.documents, node.relations
        doc_columns = self._store_columns(corpus, "documents", documents.store)
        edge_columns = self._store_columns(corpus, "relations", relations.store)
        id_col, title_col = documents.columns[0], documents.columns[1]
        body_col = documents.columns[2] if len(documents.columns) > 2 else None
        from_col, to_col, etype_col, weight_col = relations.columns
        id_type = self._column_type(
            corpus, "documents", documents.store, doc_columns, id_col, "the document id"
        )
        # Every other mapped column: its store, what it means, the type it needs, and that need
        # as the message says it.
        mapped: list[tuple[str, Located, dict[str, AxonType] | None, Located, str, str]] = [
            ("documents", documents.store, doc_columns, title_col, "the title", "title"),
            (
                "relations",
                relations.store,
                edge_columns,
                from_col,
                "the from endpoint",
                "edge from",
            ),
            ("relations", relations.store, edge_columns, to_col, "the to endpoint", "edge to"),
            ("relations", relations.store, edge_columns, etype_col, "the edge type", "edge type"),
            ("relations", relations.store, edge_columns, weight_col, "the weight", "edge weight"),
        ]
        if body_col is not None:
            mapped.insert(
                1, ("documents", documents.store, doc_columns, body_col, "the body", "body")
            )
        for role, store, columns, column, meaning, label in mapped:
            found = self._column_type(corpus, role, store, columns, column, meaning)
            if found is None:
                continue
            problem = _MAPPED_COLUMN_RULES[label](found, id_type)
            if problem is not None:
                self._report(column, f"Corpus '{corpus}': {label} column '{column.text}' {problem}")
        return CorpusDecl(
            name=corpus,
            kind=CorpusKind.STORE_GRAPH,
            adaptive=node.adaptive is not None and node.adaptive.text == "true",
            documents_store=DocumentsStoreMapping(
                store=documents.store.text,
                id_column=id_col.text,
                title_column=title_col.text,
                body_column=None if body_col is None else body_col.text,
            ),
            relations_store=RelationsStoreMapping(
                store=relations.store.text,
                from_column=from_col.text,
                to_column=to_col.text,
                etype_column=etype_col.text,
                weight_column=weight_col.text,
            ),
        )


def _text_like(found: AxonType, _id_type: AxonType | None) -> str | None:
    return None if found.is_text_like else f"must be text-like (got {found.value})"


def _numeric_weight(found: AxonType, _id_type: AxonType | None) -> str | None:
    if found.is_numeric:
        return None
    return f"must be numeric (got {found.value}); ω ∈ (0,1] is enforced at runtime"


def _same_as_id(found: AxonType, id_type: AxonType | None) -> str | None:
    if id_type is None or found == id_type:
        return None
    return (
        f"type {found.value} must match the document id column type {id_type.value} "
        "(G2: edges connect corpus members)"
    )


# What each mapped column of a form (d) corpus must be (the message's label → its rule).
_MAPPED_COLUMN_RULES = {
    "title": _text_like,
    "body": _text_like,
    "edge type": _text_like,
    "edge weight": _numeric_weight,
    "edge from": _same_as_id,
    "edge to": _same_as_id,
}


def _lower_document(node: DocumentNode) -> DocumentDecl:
    return DocumentDecl(
        name=node.name.text,
        title=None if node.title is None else node.title.text,
        source=None if node.source is None else node.source.text,
        content=None if node.content is None else node.content.text,
    )
