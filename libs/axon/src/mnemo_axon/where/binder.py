"""Binding: the `${name}` / `${a.b}` references of a parsed filter, replaced by parameter text.

Binding runs on the syntax tree, after tokenising, and in a single pass over each string's parts: a
value is inserted as text and never scanned again, so a value containing `'`, `${x}` or SQL changes
nothing but the text of the string it lands in. A reference the parameters do not provide is an
error, never left in place.

A parameter is data, never pattern syntax: in a `LIKE` value the interpolated text is escaped
(`\\` → `\\\\`, `%` → `\\%`, `_` → `\\_`; the SQL says `ESCAPE '\\'`), so wildcards come only from the
filter's own text. Literal text just before a reference may not end with the escape character, or it
would escape the first character of the parameter's text.

Every parameter becomes text; the column's type later turns the text into a typed bind value.
Scalars are written the way that conversion reads them back: str as is, bool as true/false, numbers
by `str`/`repr`, UUIDs in canonical form, dates and datetimes in ISO 8601; objects and lists as JSON
(for Json columns). A None value or any other type is a type mismatch at the reference.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from datetime import date, datetime
from decimal import Decimal

from mnemo_axon.errors import TypeMismatchError, UnboundParameterError
from mnemo_axon.where.syntax import (
    Condition,
    Filter,
    Operator,
    ParameterRef,
    StringValue,
    TextPart,
    ends_with_like_escape,
)

# Longer than any Numeric the renderer accepts (1000 characters) and short enough for `str`.
_MAX_INTEGER_BITS = 4000


def bind_filter(parsed: Filter, params: Mapping[str, object], source: str = "") -> Filter:
    """`parsed` with every string's references replaced by their parameter's text.

    `source` is the filter text, used only for the line and column of errors.
    """
    conditions = []
    for condition in parsed.conditions:
        value = condition.value
        if isinstance(value, StringValue) and not value.is_bound:
            value = _bind_string(value, params, source, like=condition.operator is Operator.LIKE)
        conditions.append(
            Condition(
                column=condition.column,
                operator=condition.operator,
                value=value,
                position=condition.position,
                operator_position=condition.operator_position,
            )
        )
    return Filter(tuple(conditions), parsed.connectors)


def _bind_string(
    value: StringValue, params: Mapping[str, object], source: str, *, like: bool
) -> StringValue:
    pieces: list[str] = []
    for index, part in enumerate(value.parts):
        if isinstance(part, TextPart):
            pieces.append(part.text)
            continue
        text = _parameter_text(part, params, source)
        if like:
            previous = value.parts[index - 1] if index else None
            if isinstance(previous, TextPart) and ends_with_like_escape(previous.text):
                raise TypeMismatchError(
                    f"the LIKE pattern's text before ${{{part.name}}} ends with an unescaped "
                    "backslash (the escape character), which would escape the parameter's first "
                    "character; write \\\\ for a literal backslash",
                    part.position,
                    source,
                )
            text = escape_like(text)
        pieces.append(text)
    text = "".join(pieces)
    return StringValue((TextPart(text),) if text else (), value.position)


def escape_like(text: str) -> str:
    """`text` as a LIKE pattern that matches exactly `text` (with `ESCAPE '\\'`)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _lookup(reference: ParameterRef, params: Mapping[str, object], source: str) -> object:
    current: object = params
    for depth, key in enumerate(reference.path):
        if not isinstance(current, Mapping) or key not in current:
            message = f"unbound parameter '{reference.name}'"
            if depth > 0:
                parent = ".".join(reference.path[:depth])
                kind = "an object without" if isinstance(current, Mapping) else "not an object, no"
                message += f" ('{parent}' is {kind} field '{key}')"
            raise UnboundParameterError(message, reference.position, source)
        current = current[key]
    return current


def _parameter_text(reference: ParameterRef, params: Mapping[str, object], source: str) -> str:
    value = _lookup(reference, params, source)
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and value.bit_length() > _MAX_INTEGER_BITS:
        raise TypeMismatchError(
            f"parameter '{reference.name}' is an integer of about "
            f"{int(value.bit_length() * 0.30103) + 1} digits; no column type holds one that long",
            reference.position,
            source,
        )
    if isinstance(value, int | Decimal | uuid.UUID):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    if value is None:
        raise TypeMismatchError(
            f"parameter '{reference.name}' is null; a quoted value cannot be NULL "
            "(write NULL unquoted, e.g. col = NULL, to match missing values)",
            reference.position,
            source,
        )
    if isinstance(value, Mapping | list | tuple):
        try:
            return json.dumps(value, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError, RecursionError):
            raise TypeMismatchError(
                f"parameter '{reference.name}' is not JSON-encodable",
                reference.position,
                source,
            ) from None
    raise TypeMismatchError(
        f"parameter '{reference.name}' is a {type(value).__name__}; expected text, a number, "
        "a boolean, a UUID, a date or datetime, or a JSON object or list",
        reference.position,
        source,
    )
