"""`mnemo explain-where FILTER --columns col:type,...`: show the SQL and bind values of a filter.

A debugging aid for operators: it compiles a `where:` filter exactly as the navigator does and
prints what would be sent to Postgres. A filter error is one line naming the error and its position
(exit 1); bad options, columns or parameters are one line too (exit 2).
"""

from __future__ import annotations

import argparse
import json
import re
import uuid
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from mnemo_axon import AxonType, CompiledWhere, FilterError, RenderArgumentError, TableColumns
from mnemo_axon import compile_where as compile_filter

from mnemo_cli.errors import CliError
from mnemo_cli.json_input import parse_json

MAX_BIND_PARAMETERS = 65535


def register(subparsers: Any) -> None:  # argparse's subparsers action has no public type
    parser = subparsers.add_parser(
        "explain-where",
        help="show the SQL and bound parameters of a where: filter",
        description=(
            "Compile a where: filter against the given columns and parameters and print the SQL "
            "(with $N placeholders) and the values bound to them. Omitting where: in a request "
            "means the whole tenant (row-level security alone): for a store that multiplexes "
            "end-clients in a column, that is a cross-client read."
        ),
    )
    parser.add_argument("filter", metavar="FILTER", help="the filter, e.g. \"tenant_id == '${t}'\"")
    parser.add_argument(
        "--columns",
        required=True,
        metavar="COL:TYPE,...",
        help=f"the table's columns and Axon types ({', '.join(AxonType.names())})",
    )
    parser.add_argument(
        "--params", default="{}", metavar="JSON", help="the request parameters, a JSON object"
    )
    parser.add_argument("--store", default="store", help="store name used in messages")
    parser.add_argument("--qualifier", default=None, help='table alias to prefix columns ("d")')
    parser.add_argument(
        "--first-param",
        default="1",
        metavar="N",
        help=f"number of the first $N, 1 to {MAX_BIND_PARAMETERS} (default 1)",
    )
    parser.add_argument("--json", action="store_true", help='print {"sql": ..., "params": [...]}')
    parser.set_defaults(func=run)


def parse_columns(spec: str, store: str) -> TableColumns:
    """`col:Type,col:Type` → TableColumns; a malformed spec is a CliError."""
    columns: dict[str, AxonType | str] = {}
    for item in spec.split(","):
        name, separator, type_name = item.strip().partition(":")
        if not separator or not name.strip() or not type_name.strip():
            raise CliError(f"--columns: expected col:Type, got {item.strip()!r}")
        columns[name.strip()] = type_name.strip()
    try:
        return TableColumns.of(store, columns)
    except RenderArgumentError as error:
        raise CliError(f"--columns: {error}") from None


def _parse_params(text: str) -> dict[str, object]:
    params = parse_json(text, "--params")
    if not isinstance(params, dict):
        raise CliError(f"--params must be a JSON object, got {type(params).__name__}")
    return params


def _first_param(text: str) -> int:
    """`--first-param`: the number of the first `$N`, 1 to 65535 (Postgres's bind-parameter limit)."""
    digits = text.strip()
    number = int(digits) if re.fullmatch("[0-9]{1,5}", digits) else 0
    if not 1 <= number <= MAX_BIND_PARAMETERS:
        raise CliError(
            f"--first-param: expected a whole number from 1 to {MAX_BIND_PARAMETERS}, got "
            f"{text[:20]!r}"
        )
    return number


def json_value(value: object) -> object:
    """A bind value as JSON: UUIDs, decimals, dates and times as text."""
    if isinstance(value, uuid.UUID | Decimal):
        return str(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    return value


def render_explanation(compiled: CompiledWhere) -> str:
    lines = [compiled.sql]
    index = compiled.next_param_index - len(compiled.params)
    for offset, (value, axon_type) in enumerate(
        zip(compiled.params, compiled.param_types, strict=True)
    ):
        shown = json.dumps(json_value(value), ensure_ascii=False)
        lines.append(f"  ${index + offset} ({axon_type.postgres}) = {shown}")
    lines.append(f"scope digest: {compiled.scope_digest}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    table = parse_columns(args.columns, args.store)
    first_param = _first_param(args.first_param)
    params = _parse_params(args.params)
    try:
        compiled = compile_filter(
            args.filter, params, [table], first_param, qualifier=args.qualifier
        )
    except FilterError as error:
        raise CliError(
            f"where: {error.code} at position {error.position}: {error.message}", exit_code=1
        ) from None
    except RenderArgumentError as error:
        raise CliError(str(error)) from None
    if args.json:
        print(
            json.dumps(
                {"sql": compiled.sql, "params": [json_value(v) for v in compiled.params]},
                ensure_ascii=False,
            )
        )
    else:
        print(render_explanation(compiled))
    return 0
