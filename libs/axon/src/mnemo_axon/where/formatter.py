"""Writing a filter back as `where:` text, in canonical form; `parse_filter` reads it back unchanged.

Canonical form: single spaces, operators `=`/`<>`, upper-case keywords, single-quoted strings in
which backslash, the quote and `$` are escaped (so bound text can never turn into a reference).
"""

from __future__ import annotations

from mnemo_axon.where.syntax import (
    BooleanValue,
    Filter,
    NullValue,
    NumberValue,
    StringValue,
    TextPart,
    TimeValue,
    Value,
)


def format_filter(filtered: Filter) -> str:
    """The canonical text of `filtered`."""
    pieces = [_condition(filtered, 0)]
    for index, connector in enumerate(filtered.connectors, start=1):
        pieces.append(connector.value)
        pieces.append(_condition(filtered, index))
    return " ".join(pieces)


def _condition(filtered: Filter, index: int) -> str:
    condition = filtered.conditions[index]
    return f"{condition.column} {condition.operator.value} {_value(condition.value)}"


def _value(value: Value) -> str:
    if isinstance(value, StringValue):
        written = []
        for part in value.parts:
            if isinstance(part, TextPart):
                written.append(
                    part.text.replace("\\", "\\\\").replace("'", "\\'").replace("$", "\\$")
                )
            else:
                written.append("${" + part.name + "}")
        return "'" + "".join(written) + "'"
    if isinstance(value, NumberValue):
        return value.literal
    if isinstance(value, BooleanValue):
        return "TRUE" if value.value else "FALSE"
    if isinstance(value, NullValue):
        return "NULL"
    if isinstance(value, TimeValue):
        if value.offset is None or value.unit is None:
            return "now()"
        return f"now() {value.offset} interval '{value.amount} {value.unit.value}'"
    raise AssertionError(f"unexpected value {value!r}")
