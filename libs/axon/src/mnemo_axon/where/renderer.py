"""Rendering a bound filter to SQL text with `$N` placeholders (or named binds, `$(name)`, see
`placeholders`) and the typed values to bind.

The SQL text is built only from: double-quoted column names that passed the filter grammar and
exist in every table; the operator's own spelling; `$N::<type>` placeholders whose type comes from
the declarations; `IS [NOT] NULL`; and `now() ± interval '<int> <unit>'` from a parsed integer and
the closed unit list; `LIKE` with `ESCAPE '\\'`. No value text ever reaches it: the SQL depends on the filter's structure and
the column types only.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from mnemo_axon.column_types import AxonType
from mnemo_axon.column_values import (
    ValueConversionError,
    canonical_value,
    value_from_boolean,
    value_from_number,
    value_from_text,
)
from mnemo_axon.errors import (
    LikeRequiresTextError,
    RenderArgumentError,
    TypeMismatchError,
    UnboundParameterError,
    UnknownColumnError,
)
from mnemo_axon.ir import StoreDecl, canonical_json
from mnemo_axon.where.placeholders import named_bind
from mnemo_axon.where.syntax import (
    BooleanValue,
    Condition,
    Filter,
    NullValue,
    NumberValue,
    Operator,
    StringValue,
    TimeValue,
    ends_with_like_escape,
)

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
_DIGEST_VERSION: Final = 1

# The scope of a request without `where:`: the whole tenant (row-level security alone).
UNSCOPED_DIGEST: Final = hashlib.sha256(
    canonical_json({"v": _DIGEST_VERSION, "conditions": [], "connectors": []}).encode("utf-8")
).hexdigest()


@dataclass(frozen=True, slots=True)
class TableColumns:
    """A table a filter is applied to: the store's name and its column types."""

    store: str
    columns: Mapping[str, AxonType] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name, axon_type in self.columns.items():
            if not isinstance(axon_type, AxonType):
                raise RenderArgumentError(
                    f"store '{self.store}': column '{name}' has type {axon_type!r}, not an "
                    "AxonType (use TableColumns.of to build from type names)"
                )
        object.__setattr__(
            self, "columns", dict(self.columns)
        )  # a private copy: frozen means frozen

    @classmethod
    def of(cls, store: str, columns: Mapping[str, AxonType | str]) -> TableColumns:
        """Build from type names as written in a schema (`{"tenant_id": "Uuid"}`) or AxonTypes."""
        converted: dict[str, AxonType] = {}
        for name, type_ in columns.items():
            axon_type = type_ if isinstance(type_, AxonType) else AxonType.from_name(type_)
            if axon_type is None:
                raise RenderArgumentError(
                    f"store '{store}': column '{name}' has unknown type {type_!r} "
                    f"(expected one of {', '.join(AxonType.names())})"
                )
            converted[name] = axon_type
        return cls(store, converted)

    @classmethod
    def from_store(cls, store: StoreDecl) -> TableColumns:
        """The columns of a declared store."""
        return cls(store.name, store.column_types)


@dataclass(frozen=True, slots=True)
class CompiledWhere:
    """A filter ready to run: `sql` uses `$N` placeholders numbered from the first index given
    (or, when rendered `named`, the named binds `bind_names`), `params` holds the values to bind
    in that order (already of the Python type asyncpg wants)."""

    sql: str
    params: tuple[object, ...]
    param_types: tuple[AxonType, ...]  # the column type each parameter is cast to, in order
    scope_digest: str
    next_param_index: int
    bound: Filter
    bind_names: tuple[str, ...] = ()
    """The name of each parameter when rendered with named binds, in order; empty otherwise."""


def render_filter(
    bound: Filter,
    tables: Sequence[TableColumns],
    first_param_index: int = 1,
    *,
    qualifier: str | None = None,
    source: str = "",
    named: str | None = None,
) -> CompiledWhere:
    """SQL and bind values for a bound filter applied to every table of `tables`.

    Every column must exist in every table, with one type across them (the same SQL and values serve
    each table). `qualifier` prefixes each column (`"d"."tenant_id"`) for use in a join. `source`
    is the filter text, used only for the line and column of errors. With `named`, value `k`
    (from 0) is the named bind `$(<named><k>)` instead of `$N` (`placeholders.number_binds`
    numbers them when the statement is assembled; `first_param_index` is then unused).
    """
    if not tables:
        raise RenderArgumentError("render a filter for at least one table")
    if isinstance(first_param_index, bool) or first_param_index < 1:
        raise RenderArgumentError(f"first_param_index must be at least 1, got {first_param_index}")
    prefix = ""
    if qualifier is not None:
        if _IDENTIFIER.fullmatch(qualifier) is None:
            raise RenderArgumentError(
                f"qualifier {qualifier!r} is not a plain identifier ([A-Za-z_][A-Za-z0-9_]*, "
                "at most 63 bytes)"
            )
        prefix = f'"{qualifier}".'
    if named is not None:
        named_bind(f"{named}0")  # a name prefix that cannot make a plain identifier is refused
    renderer = _Renderer(tables, first_param_index, prefix, source, named)
    groups = bound.or_groups()
    rendered_groups = []
    for group in groups:
        rendered = [renderer.condition(condition) for condition in group]
        text = " AND ".join(rendered)
        rendered_groups.append(f"({text})" if len(group) > 1 and len(groups) > 1 else text)
    sql = " OR ".join(rendered_groups)
    if len(bound.conditions) > 1:
        sql = f"({sql})"
    digest_source = {
        "v": _DIGEST_VERSION,
        "conditions": renderer.digest_items,
        "connectors": [connector.value for connector in bound.connectors],
    }
    return CompiledWhere(
        sql=sql,
        params=tuple(renderer.params),
        param_types=tuple(renderer.param_types),
        scope_digest=hashlib.sha256(canonical_json(digest_source).encode("utf-8")).hexdigest(),
        next_param_index=first_param_index + len(renderer.params),
        bound=bound,
        bind_names=tuple(renderer.bind_names),
    )


class _Renderer:
    def __init__(
        self,
        tables: Sequence[TableColumns],
        first_index: int,
        prefix: str,
        source: str,
        named: str | None,
    ) -> None:
        self._tables = tables
        self._first_index = first_index
        self._named = named
        self.bind_names: list[str] = []
        self._prefix = prefix
        self._source = source
        self.params: list[object] = []
        self.param_types: list[AxonType] = []
        self.digest_items: list[list[object]] = []

    def _column_type(self, condition: Condition) -> AxonType:
        found: list[tuple[str, AxonType]] = []
        for table in self._tables:
            axon_type = table.columns.get(condition.column)
            if axon_type is None:
                raise UnknownColumnError(
                    f"unknown column '{condition.column}' in store '{table.store}'",
                    condition.position,
                    self._source,
                )
            found.append((table.store, axon_type))
        first_store, first_type = found[0]
        for store, axon_type in found[1:]:
            if axon_type is not first_type:
                raise TypeMismatchError(
                    f"column '{condition.column}' is {first_type.value} in store '{first_store}' "
                    f"but {axon_type.value} in store '{store}'; a filter applied to both needs "
                    "one type",
                    condition.position,
                    self._source,
                )
        return first_type

    def _mismatch(
        self, condition: Condition, axon_type: AxonType, reason: str
    ) -> TypeMismatchError:
        return TypeMismatchError(
            f"type mismatch for column '{condition.column}' ({axon_type.value}): {reason}",
            condition.value.position,
            self._source,
        )

    def condition(self, condition: Condition) -> str:
        axon_type = self._column_type(condition)
        column = f'{self._prefix}"{condition.column}"'
        value = condition.value
        operator = condition.operator
        if isinstance(value, NullValue):
            self.digest_items.append([condition.column, operator.value, "null"])
            return f"{column} IS NULL" if operator is Operator.EQ else f"{column} IS NOT NULL"
        if isinstance(value, TimeValue):
            if not axon_type.is_temporal:
                raise self._mismatch(
                    condition, axon_type, "now() is a time; compare it with Timestamptz or Date"
                )
            self.digest_items.append(
                [
                    condition.column,
                    operator.value,
                    "time",
                    value.offset,
                    value.amount,
                    None if value.unit is None else value.unit.value,
                ]
            )
            time_sql = "now()"
            if value.offset is not None and value.unit is not None:
                time_sql += f" {value.offset} interval '{value.amount:d} {value.unit.value}'"
            return f"{column} {operator.value} {time_sql}"
        if operator is Operator.LIKE and axon_type is not AxonType.TEXT:
            raise LikeRequiresTextError(
                f"LIKE requires a Text column; '{condition.column}' is {axon_type.value}",
                condition.operator_position,
                self._source,
            )
        converted = self._convert(condition, axon_type)
        self.params.append(converted)
        self.param_types.append(axon_type)
        self.digest_items.append(
            [condition.column, operator.value, "value", axon_type.value, canonical_value(converted)]
        )
        placeholder = f"{self._placeholder()}::{axon_type.postgres}"
        if operator is Operator.LIKE:
            # The escape character is stated, never left to a server setting: the binder escaped
            # every interpolated `\\`, `%` and `_` with it.
            return f"{column} LIKE {placeholder} ESCAPE '\\'"
        return f"{column} {operator.value} {placeholder}"

    def _placeholder(self) -> str:
        """The placeholder of the value just appended to `params`."""
        k = len(self.params) - 1
        if self._named is None:
            return f"${self._first_index + k}"
        self.bind_names.append(f"{self._named}{k}")
        return named_bind(self.bind_names[-1])

    def _convert(self, condition: Condition, axon_type: AxonType) -> object:
        value = condition.value
        try:
            if isinstance(value, StringValue):
                if not value.is_bound:
                    raise UnboundParameterError(
                        "unbound parameter in a filter that was not bound (call bind_filter)",
                        value.position,
                        self._source,
                    )
                converted = value_from_text(value.text, axon_type)
                if condition.operator is Operator.LIKE and ends_with_like_escape(value.text):
                    raise ValueConversionError(
                        "a LIKE pattern cannot end with an unescaped backslash "
                        "(the escape character); write \\\\ for a literal backslash"
                    )
                return converted
            if isinstance(value, NumberValue):
                return value_from_number(value.literal, axon_type)
            if isinstance(value, BooleanValue):
                return value_from_boolean(value.value, axon_type)
        except ValueConversionError as error:
            raise self._mismatch(condition, axon_type, str(error)) from None
        raise AssertionError(f"unexpected value {value!r}")  # NULL and time are handled above
