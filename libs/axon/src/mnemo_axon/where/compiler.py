"""`compile_where`: filter text and request parameters in, SQL with bind values out.

lexer → parser → binder → renderer, in that order: the text is tokenised and parsed before any
parameter is read, then values are interpolated into string tokens, then each value is converted
to its column's type and bound as `$N`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mnemo_axon.where.binder import bind_filter
from mnemo_axon.where.parser import parse_filter
from mnemo_axon.where.renderer import CompiledWhere, TableColumns, render_filter


def compile_where(
    filter_text: str,
    params: Mapping[str, object],
    tables: Sequence[TableColumns],
    first_param_index: int = 1,
    *,
    qualifier: str | None = None,
    named: str | None = None,
) -> CompiledWhere:
    """Compile a `where:` filter for every table of `tables` (all must have its columns).

    Raises a FilterError subclass (with `.position` and `.code`) for any problem of the text or the
    parameters, and RenderArgumentError for a bad `tables`, `first_param_index` or `qualifier`.
    With `named`, the values are named binds (`render_filter`, `placeholders.number_binds`).
    """
    parsed = parse_filter(filter_text)
    bound = bind_filter(parsed, params, filter_text)
    return render_filter(
        bound, tables, first_param_index, qualifier=qualifier, source=filter_text, named=named
    )
