"""The IR's JSON form, both ways, through pydantic models.

Each model mirrors one IR class field for field (JSON names where they differ: a relation's `from`
and `to`) and is strict: strings, booleans and numbers must be written as such, no field may be
missing and none may be unknown. `deployment_from_dict` turns pydantic's first error into an
IrFormatError that names the JSON path (`$.corpora[0].kind: …`); the IR classes stay plain frozen
dataclasses.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails

from mnemo_axon.column_types import AxonType
from mnemo_axon.errors import IrFormatError
from mnemo_axon.ir import (
    IR_FORMAT,
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


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, from_attributes=True)


class _Default(_Model):
    kind: DefaultKind
    literal: StrictStr | None = None

    def to_ir(self) -> ColumnDefault:
        return ColumnDefault(self.kind, self.literal)


class _Column(_Model):
    name: StrictStr
    type: AxonType
    primary_key: StrictBool
    unique: StrictBool
    not_null: StrictBool
    default: _Default | None = None

    def to_ir(self) -> ColumnDecl:
        return ColumnDecl(
            name=self.name,
            type=self.type,
            primary_key=self.primary_key,
            unique=self.unique,
            not_null=self.not_null,
            default=None if self.default is None else self.default.to_ir(),
        )


class _Store(_Model):
    name: StrictStr
    backend: StrictStr
    columns: list[_Column]

    def to_ir(self) -> StoreDecl:
        columns = tuple(column.to_ir() for column in self.columns)
        return StoreDecl(name=self.name, columns=columns, backend=self.backend)


class _Document(_Model):
    name: StrictStr
    title: StrictStr | None = None
    source: StrictStr | None = None
    content: StrictStr | None = None

    def to_ir(self) -> DocumentDecl:
        return DocumentDecl(self.name, self.title, self.source, self.content)


class _Ref(_Model):
    name: StrictStr
    origin: DocumentOrigin
    path: StrictStr | None = None

    def to_ir(self) -> DocumentRef:
        return DocumentRef(self.name, self.origin, self.path)


def _alias(json_name: str, attribute: str) -> Any:
    return Field(validation_alias=AliasChoices(json_name, attribute), serialization_alias=json_name)


class _Relation(_Model):
    etype: StrictStr
    from_document: StrictStr = _alias("from", "from_document")
    to_document: StrictStr = _alias("to", "to_document")
    weight: Annotated[StrictFloat | StrictInt, Field(union_mode="left_to_right")]

    @field_validator("weight", mode="after")
    @classmethod
    def _a_float_holds_it(cls, weight: float) -> float:
        try:
            return float(weight)
        except OverflowError:
            digits = int(int(weight).bit_length() * 0.30103) + 1
            raise ValueError(
                f"expected a number, got an integer of about {digits} digits"
            ) from None

    def to_ir(self) -> RelationDecl:
        return RelationDecl(self.etype, self.from_document, self.to_document, float(self.weight))


class _Mcp(_Model):
    server: StrictStr
    resource_uri: StrictStr

    def to_ir(self) -> McpSource:
        return McpSource(self.server, self.resource_uri)


class _DocumentsStore(_Model):
    store: StrictStr
    id_column: StrictStr
    title_column: StrictStr
    body_column: StrictStr | None = None

    def to_ir(self) -> DocumentsStoreMapping:
        return DocumentsStoreMapping(
            self.store, self.id_column, self.title_column, self.body_column
        )


class _RelationsStore(_Model):
    store: StrictStr
    from_column: StrictStr
    to_column: StrictStr
    etype_column: StrictStr
    weight_column: StrictStr

    def to_ir(self) -> RelationsStoreMapping:
        return RelationsStoreMapping(
            self.store, self.from_column, self.to_column, self.etype_column, self.weight_column
        )


class _Corpus(_Model):
    name: StrictStr
    kind: CorpusKind
    documents: list[_Ref]
    relations: list[_Relation]
    adaptive: StrictBool
    mcp: _Mcp | None = None
    documents_store: _DocumentsStore | None = None
    relations_store: _RelationsStore | None = None

    @model_validator(mode="after")
    def _kind_has_its_fields(self) -> _Corpus:
        if self.kind is CorpusKind.MCP and self.mcp is None:
            raise ValueError("an mcp corpus needs 'mcp'")
        if self.kind is CorpusKind.STORE_GRAPH and (
            self.documents_store is None or self.relations_store is None
        ):
            raise ValueError("a store_graph corpus needs 'documents_store' and 'relations_store'")
        return self

    def to_ir(self) -> CorpusDecl:
        return CorpusDecl(
            name=self.name,
            kind=self.kind,
            documents=tuple(ref.to_ir() for ref in self.documents),
            relations=tuple(relation.to_ir() for relation in self.relations),
            adaptive=self.adaptive,
            mcp=None if self.mcp is None else self.mcp.to_ir(),
            documents_store=None if self.documents_store is None else self.documents_store.to_ir(),
            relations_store=None if self.relations_store is None else self.relations_store.to_ir(),
        )


class _Deployment(_Model):
    format: Literal["mnemo.axon.ir/1"]
    stores: list[_Store]
    documents: list[_Document]
    corpora: list[_Corpus]

    def to_ir(self) -> Deployment:
        return Deployment(
            stores=tuple(store.to_ir() for store in self.stores),
            documents=tuple(document.to_ir() for document in self.documents),
            corpora=tuple(corpus.to_ir() for corpus in self.corpora),
        )


# --- to JSON -------------------------------------------------------------------------------------


def _dump(model: type[_Model], value: object) -> dict[str, Any]:
    return model.model_validate(value).model_dump(mode="json", by_alias=True)


def store_to_dict(store: StoreDecl) -> dict[str, Any]:
    return _dump(_Store, store)


def document_to_dict(document: DocumentDecl) -> dict[str, Any]:
    return _dump(_Document, document)


def corpus_to_dict(corpus: CorpusDecl) -> dict[str, Any]:
    return _dump(_Corpus, corpus)


def deployment_to_dict(deployment: Deployment) -> dict[str, Any]:
    return {
        "format": IR_FORMAT,
        "stores": [store_to_dict(store) for store in deployment.stores],
        "documents": [document_to_dict(document) for document in deployment.documents],
        "corpora": [corpus_to_dict(corpus) for corpus in deployment.corpora],
    }


# --- from JSON -----------------------------------------------------------------------------------


def deployment_from_dict(data: object) -> Deployment:
    """The IR of `to_dict()` output; IrFormatError naming the JSON path of the first problem."""
    if not isinstance(data, dict):
        raise IrFormatError(f"$: expected an object, got {type(data).__name__}")
    if "format" not in data:
        raise IrFormatError("$: missing field 'format'")
    if not isinstance(data["format"], str):
        raise IrFormatError(f"$.format: expected a string, got {data['format']!r}")
    if data["format"] != IR_FORMAT:
        raise IrFormatError(f"$.format: expected {IR_FORMAT!r}, got {data['format']!r}")
    try:
        return _Deployment.model_validate(data).to_ir()
    except ValidationError as error:
        raise IrFormatError(_message(error.errors(include_url=False))) from None


def _message(errors: list[ErrorDetails]) -> str:
    """One line for pydantic's errors: the first that is not an unknown field, else every unknown
    field of the first object that has one."""
    for error in errors:
        if error["type"] != "extra_forbidden":
            return _describe(error)
    place = errors[0]["loc"][:-1]
    unknown = [repr(e["loc"][-1]) for e in errors if e["loc"][:-1] == place]
    return f"{_path(place)}: unknown field(s) {', '.join(sorted(unknown))}"


def _describe(error: ErrorDetails) -> str:
    loc, kind, value = error["loc"], error["type"], error.get("input")
    here, parent = _path(loc), _path(loc[:-1])
    if kind == "missing":
        return f"{parent}: missing field {loc[-1]!r}"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"{here}: expected an object, got {type(value).__name__}"
    if kind == "value_error":
        return f"{here}: {error['ctx']['error']!s}"
    if kind == "list_type":
        return f"{here}: expected a list, got {value!r}"
    if kind == "bool_type":
        return f"{here}: expected true or false, got {value!r}"
    if kind in ("float_type", "int_type"):
        return f"{here}: expected a number, got {value!r}"
    if kind == "enum" and isinstance(value, str):
        allowed = error["ctx"]["expected"].replace("'", "").replace(" or ", ", ")
        return f"{here}: expected one of {allowed}, got {value!r}"
    if kind in ("string_type", "enum"):
        nullable = " or null" if _nullable(loc) else ""
        return f"{here}: expected a string{nullable}, got {value!r}"
    return f"{here}: {error['msg']}"


_NULLABLE = {"literal", "title", "source", "content", "path", "body_column", "default"}


def _nullable(loc: tuple[int | str, ...]) -> bool:
    return bool(loc) and loc[-1] in _NULLABLE


def _path(loc: tuple[int | str, ...]) -> str:
    """`$.stores[0].columns[1]` for ("stores", 0, "columns", 1), skipping union branch names."""
    text = "$"
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif part not in _BRANCHES:
            text += f".{part}"
    return text


_BRANCHES = {"float", "int"}  # the branch names pydantic adds to a union's errors
