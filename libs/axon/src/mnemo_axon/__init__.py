"""Pure .axon declarations compiler (parser, checker, IR) and the where: filter compiler.

Declarations: `check_sources` / `compile_deployment` turn `.axon` texts into a `Deployment` (IR) or
report every problem as a `Diagnostic`. Filters: `compile_where` turns a `where:` text and request
parameters into parameterised SQL for the store layer. No I/O happens here.
"""

from mnemo_axon.checker import CheckResult
from mnemo_axon.column_types import AxonType
from mnemo_axon.column_values import ValueConversionError
from mnemo_axon.compiler import AxonSource, check_sources, compile_deployment, load_deployment
from mnemo_axon.document_directory import DocumentDirectory, MappingDocumentDirectory
from mnemo_axon.errors import (
    AxonError,
    Diagnostic,
    FilterError,
    InvalidDeclarationsError,
    IrFormatError,
    RenderArgumentError,
)
from mnemo_axon.ir import (
    IR_FORMAT,
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
from mnemo_axon.parser import parse_declarations
from mnemo_axon.syntax import SkippedBlock
from mnemo_axon.where import (
    UNSCOPED_DIGEST,
    CompiledWhere,
    TableColumns,
    compile_where,
)

__all__ = [
    "IR_FORMAT",
    "RELATION_CATALOG",
    "UNSCOPED_DIGEST",
    "AxonError",
    "AxonSource",
    "AxonType",
    "CheckResult",
    "ColumnDecl",
    "ColumnDefault",
    "CompiledWhere",
    "CorpusDecl",
    "CorpusKind",
    "DefaultKind",
    "Deployment",
    "Diagnostic",
    "DocumentDecl",
    "DocumentDirectory",
    "DocumentOrigin",
    "DocumentRef",
    "DocumentsStoreMapping",
    "FilterError",
    "InvalidDeclarationsError",
    "IrFormatError",
    "MappingDocumentDirectory",
    "McpSource",
    "RelationDecl",
    "RelationsStoreMapping",
    "RenderArgumentError",
    "SkippedBlock",
    "StoreDecl",
    "TableColumns",
    "ValueConversionError",
    "check_sources",
    "compile_deployment",
    "compile_where",
    "load_deployment",
    "parse_declarations",
]
