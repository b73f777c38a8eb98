"""The `where:` filter compiler (AXON.md §3): a security boundary between request text and SQL."""

from mnemo_axon.where.binder import bind_filter
from mnemo_axon.where.compiler import compile_where
from mnemo_axon.where.formatter import format_filter
from mnemo_axon.where.parser import parse_filter
from mnemo_axon.where.placeholders import NumberedBinds, named_bind, number_binds
from mnemo_axon.where.renderer import UNSCOPED_DIGEST, CompiledWhere, TableColumns, render_filter
from mnemo_axon.where.syntax import (
    MAX_COLUMN_BYTES,
    MAX_CONDITIONS,
    BooleanValue,
    Condition,
    Connector,
    Filter,
    NullValue,
    NumberValue,
    Operator,
    ParameterRef,
    StringValue,
    TextPart,
    TimeUnit,
    TimeValue,
    Value,
)

__all__ = [
    "MAX_COLUMN_BYTES",
    "MAX_CONDITIONS",
    "UNSCOPED_DIGEST",
    "BooleanValue",
    "CompiledWhere",
    "Condition",
    "Connector",
    "Filter",
    "NullValue",
    "NumberValue",
    "NumberedBinds",
    "Operator",
    "ParameterRef",
    "StringValue",
    "TableColumns",
    "TextPart",
    "TimeUnit",
    "TimeValue",
    "Value",
    "bind_filter",
    "compile_where",
    "format_filter",
    "named_bind",
    "number_binds",
    "parse_filter",
    "render_filter",
]
