"""Converting written values to the Python value a column of a given Axon type takes (asyncpg style).

One place decides what a value of each type may look like, for the `where:` renderer (bind
parameters) and for the checker (column defaults). Every accepted value is one Postgres accepts for
the column's type, so a conversion error here is the only way a bad value is found: before SQL runs.

What each type accepts (ASCII only, no surrounding whitespace):
- Uuid: 32 hex digits, optionally hyphenated 8-4-4-4-12, optionally in a pair of braces →
  `uuid.UUID`.
- Integer / BigInt: `[+-]digits` within 32 / 64 bits → `int`.
- Float / Double: a finite decimal number, exponent allowed → `float`.
- Numeric: a finite decimal number, no exponent → `decimal.Decimal`.
- Boolean: `true` or `false`, any case → `bool`.
- Text: any text without NUL characters or unpaired surrogates → `str` (unchanged).
- Timestamptz: ISO 8601 with a UTC offset (or `Z`) → aware `datetime`; a naive one is refused
  because Postgres would read it in the session's time zone.
- Date: ISO 8601 `YYYY-MM-DD` → `date`.
- Json: valid JSON (no NaN/Infinity, no NUL, numbers within Postgres's numeric range: at most
  131072 digits before the point and 16383 after) → the JSON text, unchanged (asyncpg sends jsonb
  as text).
"""

from __future__ import annotations

import json
import math
import re
import uuid
from datetime import date, datetime
from decimal import Decimal, InvalidOperation

from mnemo_axon.column_types import AxonType
from mnemo_axon.errors import AxonError

_UUID_BODY = r"[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}"
_UUID = re.compile(rf"{_UUID_BODY}|\{{{_UUID_BODY}\}}")
_INTEGER = re.compile(r"[+-]?[0-9]{1,20}")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,4})?")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_MAX_NUMERIC_CHARACTERS = 1000
# What a jsonb number may be: Postgres's numeric holds at most this many digits before the point
# and after it ('1e131072' and '1e-16384' are refused with "value overflows numeric format").
_MAX_JSON_INTEGER_DIGITS = 131072
_MAX_JSON_SCALE = 16383
INTEGER_RANGES = {
    AxonType.INTEGER: (-(2**31), 2**31 - 1),
    AxonType.BIGINT: (-(2**63), 2**63 - 1),
}


class ValueConversionError(AxonError, ValueError):
    """A value cannot be given to a column of some type; the message says why and what would do."""


def value_from_text(text: str, axon_type: AxonType) -> object:
    """The Python value for `text` (a quoted string's content) in a column of type `axon_type`."""
    if axon_type is AxonType.TEXT:
        _require_storable_text(text)
        return text
    if axon_type is AxonType.JSON:
        return _json_text(text)
    if not text.isascii():
        raise ValueConversionError(
            f"not a {axon_type.value} value: it contains non-ASCII characters"
        )
    if axon_type is AxonType.UUID:
        if _UUID.fullmatch(text) is None:
            raise ValueConversionError(
                f"not a Uuid: {_preview(text)} (expected 8-4-4-4-12 hex digits)"
            )
        return uuid.UUID(text.strip("{}"))
    if axon_type.is_numeric:
        return _number(text, axon_type)
    if axon_type is AxonType.BOOLEAN:
        lowered = text.lower()
        if lowered not in ("true", "false"):
            raise ValueConversionError(f"not a Boolean: {_preview(text)} (expected true or false)")
        return lowered == "true"
    if axon_type is AxonType.TIMESTAMPTZ:
        return _timestamp(text)
    return _date(text)


def value_from_number(literal: str, axon_type: AxonType) -> object:
    """The Python value for an unquoted number literal in a column of type `axon_type`."""
    if axon_type.is_numeric:
        return _number(literal, axon_type)
    if axon_type is AxonType.JSON:
        return _json_text(literal)
    raise ValueConversionError(
        f"a number cannot be a {axon_type.value} value (quote it if you mean the text {literal!r})"
    )


def value_from_boolean(value: bool, axon_type: AxonType) -> object:
    """The Python value for TRUE or FALSE in a column of type `axon_type`."""
    if axon_type is AxonType.BOOLEAN:
        return value
    if axon_type is AxonType.JSON:
        return "true" if value else "false"
    raise ValueConversionError(
        f"{'TRUE' if value else 'FALSE'} cannot be a {axon_type.value} value "
        "(only Boolean and Json columns take one)"
    )


def canonical_value(value: object) -> object:
    """A JSON value standing for a converted value, equal for equal values (for digests)."""
    if isinstance(value, bool | int | str) or value is None:
        return value
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, Decimal):
        return str(value.normalize()) if value else "0"
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    raise TypeError(f"no canonical form for {type(value).__name__}")


def _preview(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:40] + "…")


def _require_storable_text(text: str) -> None:
    if "\x00" in text:
        raise ValueConversionError("text cannot contain NUL characters (Postgres refuses them)")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueConversionError(
            "text contains an unpaired surrogate, which is not valid Unicode"
        ) from None


def _number(text: str, axon_type: AxonType) -> int | float | Decimal:
    """`text` as a value of a numeric type (`axon_type.is_numeric`), checked for range."""
    if axon_type in INTEGER_RANGES:
        return _integer(text, axon_type)
    if axon_type in (AxonType.FLOAT, AxonType.DOUBLE):
        return _float(text, axon_type)
    return _decimal(text)


def _integer(text: str, axon_type: AxonType) -> int:
    if _INTEGER.fullmatch(text) is None:
        article = "an" if axon_type is AxonType.INTEGER else "a"
        raise ValueConversionError(
            f"not {article} {axon_type.value}: {_preview(text)} (expected digits)"
        )
    value = int(text)
    low, high = INTEGER_RANGES[axon_type]
    if not low <= value <= high:
        raise ValueConversionError(f"{value} is out of range for {axon_type.value} [{low}, {high}]")
    return value


def _float(text: str, axon_type: AxonType) -> float:
    if _FLOAT.fullmatch(text) is None:
        raise ValueConversionError(
            f"not a {axon_type.value}: {_preview(text)} (expected a decimal number)"
        )
    value = float(text)
    if not math.isfinite(value):
        raise ValueConversionError(f"{_preview(text)} is out of range for {axon_type.value}")
    return value


def _decimal(text: str) -> Decimal:
    if len(text) > _MAX_NUMERIC_CHARACTERS or _DECIMAL.fullmatch(text) is None:
        raise ValueConversionError(
            f"not a Numeric: {_preview(text)} (expected a decimal number of at most "
            f"{_MAX_NUMERIC_CHARACTERS} characters, no exponent)"
        )
    try:
        return Decimal(text)
    except InvalidOperation:  # unreachable after the pattern; kept so no other error escapes
        raise ValueConversionError(f"not a Numeric: {_preview(text)}") from None


def _timestamp(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise ValueConversionError(
            f"not a Timestamptz: {_preview(text)} (expected ISO 8601, e.g. 2024-05-01T12:00:00Z)"
        ) from None
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueConversionError(
            f"Timestamptz {_preview(text)} has no UTC offset (add one, e.g. +00:00 or Z)"
        )
    return value


def _date(text: str) -> date:
    if _DATE.fullmatch(text) is None:
        raise ValueConversionError(f"not a Date: {_preview(text)} (expected YYYY-MM-DD)")
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise ValueConversionError(f"not a Date: {_preview(text)} (no such day)") from None


def _reject_constant(name: str) -> object:
    raise ValueConversionError(f"JSON value {name} is not allowed (Postgres jsonb refuses it)")


def _json_number(literal: str) -> _JsonNumber:
    """A JSON number literal, checked against what Postgres's jsonb can hold."""
    number = Decimal(literal)  # exact for any JSON number literal, whatever its exponent
    exponent = number.as_tuple().exponent
    assert isinstance(exponent, int)  # a JSON number is finite
    before = number.adjusted() + 1 if number else 1
    if before > _MAX_JSON_INTEGER_DIGITS or -exponent > _MAX_JSON_SCALE:
        raise ValueConversionError(
            f"JSON number {_preview(literal)} is outside what Postgres jsonb holds (at most "
            f"{_MAX_JSON_INTEGER_DIGITS} digits before the point and {_MAX_JSON_SCALE} after)"
        )
    return _JsonNumber(literal)


class _JsonNumber(str):
    """A number's literal text, kept apart from JSON strings while checking."""

    __slots__ = ()


# Decoders built once (json.loads with keyword arguments builds one per call). The fast one leaves
# integers to the C parser: one too long for int() raises ValueError and takes the full check, and
# one int() takes (at most 4300 digits) is far inside jsonb's range.
_FULL_DECODER = json.JSONDecoder(
    parse_constant=_reject_constant, parse_int=_json_number, parse_float=_json_number
)
_FAST_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_json_number)


def _json_text(text: str) -> str:
    _require_storable_text(text)
    if "\\u" not in text:  # no escape, so no NUL or lone surrogate the raw text check missed
        try:
            _FAST_DECODER.decode(text)
        except json.JSONDecodeError as error:
            raise ValueConversionError(
                f"not valid JSON: {error.msg} at offset {error.pos}"
            ) from None
        except RecursionError:
            raise ValueConversionError("JSON nested too deeply") from None
        except ValueConversionError:
            raise
        except ValueError:
            pass  # an integer too long for int(): checked digit by digit below
        else:
            return text
    try:
        # Numbers stay text: their values do not matter here, and int() of a huge literal raises.
        parsed = _FULL_DECODER.decode(text)
    except json.JSONDecodeError as error:
        raise ValueConversionError(f"not valid JSON: {error.msg} at offset {error.pos}") from None
    except RecursionError:
        raise ValueConversionError("JSON nested too deeply") from None
    pending: list[object] = [parsed]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, str) and not isinstance(item, _JsonNumber):
            try:
                _require_storable_text(item)
            except ValueConversionError as error:
                raise ValueConversionError(f"JSON string value: {error}") from None
    return text
