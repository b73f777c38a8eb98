"""Parser of `.axon` declarations (`axonstore`, `corpus`, `document`), per AXON.md §1.

Flows are not compiled (AXON.md §1): a top-level `flow`, `step` or `for` block is skipped by balanced
braces (strings and comments cannot unbalance it) and recorded as a `SkippedBlock`, so the seed's
files, which mix declarations and flows, parse as they are. Any other top-level word is an error.

A syntax error abandons the declaration it is in; the parser then resumes at the next declaration
keyword (at brace depth zero, or at the start of a line) so that one run reports every problem.
"""

from __future__ import annotations

from typing import NoReturn

from mnemo_axon.lexer import Token, TokenKind, foreign_name_message, tokenize
from mnemo_axon.syntax import (
    ColumnNode,
    DeclarationNode,
    DefaultNode,
    DocumentNode,
    ListCorpusNode,
    Located,
    McpCorpusNode,
    ParsedFile,
    RelationNode,
    SkippedBlock,
    StoreCorpusNode,
    StoreMappingNode,
    StoreNode,
    SyntaxProblem,
)

DECLARATION_KEYWORDS = ("axonstore", "corpus", "document")
SKIPPED_KEYWORDS = ("flow", "step", "for")
_MODIFIERS = ("primary_key", "unique", "not_null", "default")


def parse_declarations(text: str, filename: str = "<string>") -> ParsedFile:
    """Read one file's declarations; never raises for problems in `text` (they are in `.problems`)."""
    return _Parser(tokenize(text), filename).parse_file()


class _ParseAbortedError(Exception):
    """Unwinds the parser to the declaration level, carrying the problem found."""

    def __init__(self, problem: SyntaxProblem) -> None:
        super().__init__(problem.message)
        self.problem = problem


def _located(token: Token) -> Located:
    return Located(token.text, token.line, token.column)


class _Parser:
    def __init__(self, tokens: list[Token], filename: str) -> None:
        self._tokens = tokens
        self._index = 0
        self._filename = filename
        self._declarations: list[DeclarationNode] = []
        self._skipped: list[SkippedBlock] = []
        self._problems: list[SyntaxProblem] = []

    # --- token access ----------------------------------------------------------------------------

    def _peek(self, offset: int = 0) -> Token:
        return self._tokens[min(self._index + offset, len(self._tokens) - 1)]

    def _advance(self) -> Token:
        token = self._peek()
        if token.kind is not TokenKind.EOF:
            self._index += 1
        return token

    def _abort(self, token: Token, message: str) -> _ParseAbortedError:
        if token.kind is TokenKind.BAD:
            message = token.text  # the lexer's own message says more than "unexpected token"
        elif token.kind is TokenKind.FOREIGN_NAME:
            message = foreign_name_message(token.text)
        return _ParseAbortedError(SyntaxProblem(token.line, token.column, message))

    def _fail(self, token: Token, message: str) -> NoReturn:
        raise self._abort(token, message)

    def _expect_punct(self, char: str, context: str) -> Token:
        token = self._peek()
        if not token.is_punct(char):
            self._fail(token, f"expected '{char}' {context}, got {token.describe()}")
        return self._advance()

    def _expect_name(self, what: str) -> Token:
        token = self._peek()
        if token.kind is not TokenKind.NAME:
            self._fail(token, f"expected {what}, got {token.describe()}")
        return self._advance()

    def _expect_string(self, what: str) -> Token:
        token = self._peek()
        if token.kind is not TokenKind.STRING:
            self._fail(token, f"expected {what} (a double-quoted string), got {token.describe()}")
        return self._advance()

    def _skip_comma(self) -> None:
        if self._peek().is_punct(","):
            self._advance()

    # --- file level ------------------------------------------------------------------------------

    def parse_file(self) -> ParsedFile:
        while self._peek().kind is not TokenKind.EOF:
            start = self._index
            try:
                self._parse_top_level()
            except _ParseAbortedError as failure:
                self._problems.append(failure.problem)
                self._recover(start)
        return ParsedFile(
            filename=self._filename,
            declarations=tuple(self._declarations),
            skipped=tuple(self._skipped),
            problems=tuple(self._problems),
        )

    def _parse_top_level(self) -> None:
        token = self._peek()
        if token.kind is TokenKind.NAME and token.text in DECLARATION_KEYWORDS:
            if token.text == "axonstore":
                self._declarations.append(self._parse_store())
            elif token.text == "document":
                self._declarations.append(self._parse_document())
            else:
                self._declarations.append(self._parse_corpus())
            return
        if token.kind is TokenKind.NAME and token.text in SKIPPED_KEYWORDS:
            self._skip_block()
            return
        if token.kind is TokenKind.NAME:
            self._fail(
                token,
                f"unknown declaration '{token.text}': expected axonstore, corpus or document "
                "(flow, step and for blocks are skipped, not compiled)",
            )
        self._fail(
            token, f"expected a declaration (axonstore, corpus or document), got {token.describe()}"
        )

    def _recover(self, start: int) -> None:
        """Resume at the next declaration keyword outside braces, or at the start of a line."""
        depth = 0
        index = start + 1
        while index < len(self._tokens) - 1:
            token = self._tokens[index]
            following = self._tokens[index + 1]
            starts_declaration = (
                token.kind is TokenKind.NAME
                and token.text in DECLARATION_KEYWORDS + SKIPPED_KEYWORDS
                and following.kind in (TokenKind.NAME, TokenKind.FOREIGN_NAME)
            )
            if starts_declaration and (depth <= 0 or (token.first_on_line and token.column == 1)):
                break
            if token.is_punct("{"):
                depth += 1
            elif token.is_punct("}"):
                depth -= 1
            index += 1
        self._index = max(index, start + 1)

    def _skip_block(self) -> None:
        keyword = self._advance()
        name_token = self._peek()
        name = name_token.text if name_token.kind is TokenKind.NAME else None
        label = f"{keyword.text} block" + (f" '{name}'" if name else "")
        while not self._peek().is_punct("{"):
            token = self._peek()
            if token.kind is TokenKind.EOF or (
                token is not name_token
                and token.kind is TokenKind.NAME
                and token.first_on_line
                and token.column == 1
                and token.text in DECLARATION_KEYWORDS + SKIPPED_KEYWORDS
            ):
                self._fail(keyword, f"{label} has no body: expected '{{' before {token.describe()}")
            self._advance()
        depth = 0
        while True:
            token = self._advance()
            if token.kind is TokenKind.BAD:
                self._problems.append(SyntaxProblem(token.line, token.column, token.text))
            elif token.is_punct("{"):
                depth += 1
            elif token.is_punct("}"):
                depth -= 1
                if depth == 0:
                    break
            elif token.kind is TokenKind.EOF:
                self._fail(
                    keyword,
                    f"unterminated {label}: no matching '}}' before the end of the file "
                    "(flow blocks are skipped by balanced braces)",
                )
        self._skipped.append(SkippedBlock(keyword.text, name, keyword.line, keyword.column))

    # --- axonstore -------------------------------------------------------------------------------

    def _parse_store(self) -> StoreNode:
        keyword = self._advance()
        name = self._expect_name("a store name after 'axonstore'")
        self._expect_punct("{", f"to open axonstore '{name.text}'")
        backend: Token | None = None
        connection: Token | None = None
        schema: Token | None = None
        columns: tuple[ColumnNode, ...] = ()
        while True:
            token = self._peek()
            if token.is_punct("}"):
                self._advance()
                break
            if token.is_name("backend") or token.is_name("connection") or token.is_name("schema"):
                given = {"backend": backend, "connection": connection, "schema": schema}
                if given[token.text] is not None:
                    self._fail(token, f"Store '{name.text}': '{token.text}' is given twice")
                self._advance()
                if token.text == "schema":
                    schema = token
                    columns = self._parse_schema(name.text)
                    continue
                self._expect_punct(":", f"after '{token.text}'")
                if token.text == "backend":
                    backend = self._expect_name("a backend name (postgresql)")
                else:
                    connection = self._expect_string("a connection string")
                continue
            self._fail(
                token,
                f"Store '{name.text}': expected 'backend:', 'connection:', 'schema {{ ... }}' "
                f"or '}}', got {token.describe()}",
            )
        return StoreNode(
            keyword=_located(keyword),
            name=_located(name),
            backend=None if backend is None else _located(backend),
            connection=None if connection is None else _located(connection),
            schema=None if schema is None else _located(schema),
            columns=columns,
        )

    def _parse_schema(self, store: str) -> tuple[ColumnNode, ...]:
        self._expect_punct("{", f"after 'schema' in axonstore '{store}'")
        columns: list[ColumnNode] = []
        while True:
            self._skip_comma()
            token = self._peek()
            if token.is_punct("}"):
                self._advance()
                return tuple(columns)
            if token.kind is not TokenKind.NAME:
                self._fail(
                    token,
                    f"Store '{store}': expected a column 'name: Type' or '}}', "
                    f"got {token.describe()}",
                )
            columns.append(self._parse_column(store))

    def _parse_column(self, store: str) -> ColumnNode:
        name = self._advance()
        self._expect_punct(":", f"after column name '{name.text}'")
        type_name = self._expect_name(f"a type for column '{name.text}'")
        seen: set[str] = set()
        default: DefaultNode | None = None
        while True:
            token = self._peek()
            is_modifier = token.kind is TokenKind.NAME and token.text in _MODIFIERS
            if not is_modifier or self._peek(1).is_punct(":"):
                break  # a word followed by ':' is the next column's name
            if token.text in seen:
                self._fail(token, f"Store '{store}': column '{name.text}' has '{token.text}' twice")
            seen.add(token.text)
            self._advance()
            if token.text == "default":
                default = self._parse_default(name.text)
        return ColumnNode(
            name=_located(name),
            type_name=_located(type_name),
            primary_key="primary_key" in seen,
            unique="unique" in seen,
            not_null="not_null" in seen,
            default=default,
        )

    def _parse_default(self, column: str) -> DefaultNode:
        self._expect_punct("(", f"after 'default' of column '{column}'")
        token = self._peek()
        if token.kind is TokenKind.STRING:
            node = DefaultNode("text", _located(self._advance()))
        elif token.kind is TokenKind.NUMBER:
            node = DefaultNode("number", _located(self._advance()))
        elif token.is_name("true") or token.is_name("false"):
            node = DefaultNode("boolean", _located(self._advance()))
        elif token.is_name("null"):
            node = DefaultNode("null", _located(self._advance()))
        elif token.is_name("now") and self._peek(1).is_punct("("):
            self._advance()
            self._advance()
            self._expect_punct(")", "to close 'now('")
            node = DefaultNode("now", _located(token))
        else:
            self._fail(
                token,
                f"default of column '{column}': expected a string, a number, true, false, null "
                f"or now(), got {token.describe()}",
            )
        self._expect_punct(")", f"to close 'default(' of column '{column}'")
        return node

    # --- document --------------------------------------------------------------------------------

    def _parse_document(self) -> DocumentNode:
        keyword = self._advance()
        name = self._expect_name("a document name after 'document'")
        self._expect_punct("{", f"to open document '{name.text}'")
        fields: dict[str, Located] = {}
        while True:
            self._skip_comma()
            token = self._peek()
            if token.is_punct("}"):
                self._advance()
                break
            if token.kind is TokenKind.NAME and token.text in ("title", "source", "content"):
                if token.text in fields:
                    self._fail(token, f"Document '{name.text}': '{token.text}' is given twice")
                self._advance()
                self._expect_punct(":", f"after '{token.text}'")
                fields[token.text] = _located(self._expect_string(f"the {token.text}"))
                continue
            self._fail(
                token,
                f"Document '{name.text}': expected 'title:', 'source:', 'content:' or '}}', "
                f"got {token.describe()}",
            )
        return DocumentNode(
            keyword=_located(keyword),
            name=_located(name),
            title=fields.get("title"),
            source=fields.get("source"),
            content=fields.get("content"),
        )

    # --- corpus ----------------------------------------------------------------------------------

    def _parse_corpus(self) -> ListCorpusNode | McpCorpusNode | StoreCorpusNode:
        keyword = self._advance()
        name = self._expect_name("a corpus name after 'corpus'")
        token = self._peek()
        if token.is_name("from"):
            self._advance()
            source = self._peek()
            if source.is_name("mcp"):
                self._advance()
                return self._parse_mcp_corpus(keyword, name)
            if source.is_name("axonstore"):
                self._advance()
                return self._parse_store_corpus(keyword, name)
            self._fail(
                source,
                f"Corpus '{name.text}': expected 'mcp(\"server\", \"uri\")' or 'axonstore {{ ... }}' "
                f"after 'from', got {source.describe()}",
            )
        if token.is_punct("{"):
            self._advance()
            return self._parse_list_corpus(keyword, name)
        raise self._abort(
            token,
            f"Corpus '{name.text}': expected '{{' or 'from' after the name, got {token.describe()}",
        )

    def _parse_mcp_corpus(self, keyword: Token, name: Token) -> McpCorpusNode:
        self._expect_punct("(", "after 'mcp'")
        server = self._expect_string("the MCP server")
        self._expect_punct(",", "between the MCP server and the resource URI")
        uri = self._expect_string("the MCP resource URI")
        self._expect_punct(")", "to close 'mcp('")
        return McpCorpusNode(_located(keyword), _located(name), _located(server), _located(uri))

    def _parse_list_corpus(self, keyword: Token, name: Token) -> ListCorpusNode:
        documents: tuple[Located, ...] | None = None
        relations: tuple[RelationNode, ...] | None = None
        relations_keyword: Token | None = None
        adaptive: Token | None = None
        seen: set[str] = set()
        while True:
            field, token = self._next_corpus_field(name, seen)
            if not field:
                break
            if field == "documents":
                documents = self._parse_document_list(name.text)
            elif field == "relations":
                relations_keyword = token
                relations = self._parse_relation_list(name.text)
            else:
                adaptive = self._parse_boolean("adaptive")
        return ListCorpusNode(
            keyword=_located(keyword),
            name=_located(name),
            documents=documents,
            relations=relations,
            relations_keyword=None if relations_keyword is None else _located(relations_keyword),
            adaptive=None if adaptive is None else _located(adaptive),
        )

    def _next_corpus_field(self, name: Token, seen: set[str]) -> tuple[str, Token]:
        """Consume the next ``field:`` of a corpus body, or its closing '}'.

        Both corpus forms (a listed corpus and one from axonstore) take the same three
        fields, each at most once; the field name is "" when the body has closed.
        """
        self._skip_comma()
        token = self._peek()
        if token.is_punct("}"):
            return "", self._advance()
        field = token.text if token.kind is TokenKind.NAME else ""
        if field not in ("documents", "relations", "adaptive"):
            self._fail(
                token,
                f"Corpus '{name.text}': expected 'documents:', 'relations:', 'adaptive:' "
                f"or '}}', got {token.describe()}",
            )
        if field in seen:
            self._fail(token, f"Corpus '{name.text}': '{field}' is given twice")
        seen.add(field)
        self._advance()
        self._expect_punct(":", f"after '{field}'")
        return field, token

    def _parse_document_list(self, corpus: str) -> tuple[Located, ...]:
        self._expect_punct("[", "to open the document list")
        names: list[Located] = []
        while True:
            self._skip_comma()
            token = self._peek()
            if token.is_punct("]"):
                self._advance()
                return tuple(names)
            if token.kind is not TokenKind.NAME:
                hint = (
                    " (document names are bare names, not strings)"
                    if (token.kind is TokenKind.STRING)
                    else ""
                )
                self._fail(
                    token,
                    f"Corpus '{corpus}': expected a document name or ']', "
                    f"got {token.describe()}{hint}",
                )
            names.append(_located(self._advance()))

    def _parse_relation_list(self, corpus: str) -> tuple[RelationNode, ...]:
        self._expect_punct("[", "to open the relation list")
        relations: list[RelationNode] = []
        while True:
            self._skip_comma()
            token = self._peek()
            if token.is_punct("]"):
                self._advance()
                return tuple(relations)
            if token.kind is not TokenKind.NAME:
                self._fail(
                    token,
                    f"Corpus '{corpus}': expected a relation 'etype(from, to, weight)' or ']', "
                    f"got {token.describe()}",
                )
            etype = self._advance()
            self._expect_punct("(", f"after relation type '{etype.text}'")
            source = self._expect_name("the 'from' document of the relation")
            self._expect_punct(",", "after the 'from' document")
            target = self._expect_name("the 'to' document of the relation")
            self._expect_punct(",", "after the 'to' document")
            weight = self._peek()
            if weight.kind is not TokenKind.NUMBER:
                self._fail(
                    weight, f"expected the relation weight (a number), got {weight.describe()}"
                )
            self._advance()
            self._expect_punct(")", "to close the relation")
            relations.append(
                RelationNode(_located(etype), _located(source), _located(target), _located(weight))
            )

    def _parse_boolean(self, field: str) -> Token:
        token = self._peek()
        if not (token.is_name("true") or token.is_name("false")):
            self._fail(token, f"expected true or false after '{field}:', got {token.describe()}")
        return self._advance()

    def _parse_store_corpus(self, keyword: Token, name: Token) -> StoreCorpusNode:
        self._expect_punct("{", f"to open corpus '{name.text}' from axonstore")
        mappings: dict[str, StoreMappingNode] = {}
        adaptive: Token | None = None
        seen: set[str] = set()
        while True:
            field, token = self._next_corpus_field(name, seen)
            if not field:
                closing = token
                break
            if field == "adaptive":
                adaptive = self._parse_boolean("adaptive")
            else:
                mappings[field] = self._parse_store_mapping(name.text, field)
        for field, shape in (
            ("documents", "Store(id_column, title_column[, body_column])"),
            ("relations", "Store(from_column, to_column, etype_column, weight_column)"),
        ):
            if field not in mappings:
                self._fail(
                    closing,
                    f"Corpus '{name.text}' from axonstore needs '{field}: {shape}'",
                )
        return StoreCorpusNode(
            keyword=_located(keyword),
            name=_located(name),
            documents=mappings["documents"],
            relations=mappings["relations"],
            adaptive=None if adaptive is None else _located(adaptive),
        )

    def _parse_store_mapping(self, corpus: str, field: str) -> StoreMappingNode:
        store = self._expect_name(f"the {field} store name")
        self._expect_punct("(", f"after store '{store.text}'")
        columns = [self._expect_name(f"a column of store '{store.text}'")]
        while self._peek().is_punct(","):
            self._advance()
            columns.append(self._expect_name(f"a column of store '{store.text}'"))
        self._expect_punct(")", f"to close the column list of store '{store.text}'")
        if field == "documents" and len(columns) not in (2, 3):
            self._fail(
                store,
                f"Corpus '{corpus}': documents: expects {store.text}(id_column, title_column"
                f"[, body_column]), got {len(columns)} column(s)",
            )
        if field == "relations" and len(columns) != 4:
            self._fail(
                store,
                f"Corpus '{corpus}': relations: expects {store.text}(from_column, to_column, "
                f"etype_column, weight_column), got {len(columns)} column(s)",
            )
        return StoreMappingNode(_located(store), tuple(_located(column) for column in columns))
