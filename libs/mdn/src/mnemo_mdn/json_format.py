"""The JSON graph format, for people and tools (documented in the package README).

```json
{"documents": [{"id": "a", "title": "A", "body": "...", "depth": 0, "recency": 0.5}],
 "edges": [{"from": "a", "to": "b", "etype": "cite", "weight": 0.9}]}
```

`id` and `title` are required strings; `body` (string or null), `depth` (number >= 0), `recency`
(number in [0, 1]) and `level` (the epistemic level, a string) are optional; `edges` may be
omitted. A shape error (missing key, wrong type, unknown key, duplicate id) raises
`GraphFormatError` naming the place. Edges are read with the engine's rules: an unknown endpoint or
type, or a non-finite weight, is skipped and counted in `graph.diagnostics`; weights are clamped.
Documents keep their order in the file. The format is read through pydantic (typed dicts, so a
large file costs no object per entry) and pydantic's first error becomes the message above.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Final, NotRequired

from pydantic import (
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    StrictStr,
    TypeAdapter,
    ValidationError,
    with_config,
)
from pydantic_core import ErrorDetails
from typing_extensions import TypedDict

from mnemo_mdn.errors import GraphFormatError
from mnemo_mdn.graph import (
    DEFAULT_DEPTH,
    DEFAULT_LEVEL,
    DEFAULT_RECENCY,
    CorpusGraph,
    Document,
    Edge,
)

# A JSON number: an int stays an int (it may be too large for a float; see `_as_float`).
_Number = Annotated[StrictInt | StrictFloat, Field(union_mode="left_to_right")]
_STRICT: Final = ConfigDict(extra="forbid")


# The format as typed dicts (validated by pydantic without building an object per entry: a graph
# file may hold millions). Keys in the order the reader reports their problems.
@with_config(_STRICT)
class _DocumentJson(TypedDict):
    body: NotRequired[StrictStr | None]
    id: StrictStr
    title: StrictStr
    depth: NotRequired[_Number]
    recency: NotRequired[_Number]
    level: NotRequired[StrictStr]


_EdgeJson = TypedDict(
    "_EdgeJson",
    {"weight": _Number, "from": StrictStr, "to": StrictStr, "etype": StrictStr},
)


_EdgeJson.__pydantic_config__ = _STRICT  # type: ignore[attr-defined]  # a key is `from`


@with_config(_STRICT)
class _GraphJson(TypedDict):
    documents: list[_DocumentJson]
    edges: NotRequired[list[_EdgeJson]]


_GRAPH: Final = TypeAdapter(_GraphJson)

_ALLOWED: Final = {
    "the graph": ("documents", "edges"),
    "documents": ("id", "title", "body", "depth", "recency", "level"),
    "edges": ("from", "to", "etype", "weight"),
}


def graph_from_json(data: Mapping[str, object]) -> CorpusGraph:
    """A graph from the decoded JSON format (documents in file order)."""
    if not isinstance(data, Mapping):
        raise GraphFormatError(
            f"a graph must be a JSON object with 'documents' and 'edges', got {_kind(data)}"
        )
    try:
        parsed = _GRAPH.validate_python(data)
    except ValidationError as error:
        raise GraphFormatError(_message(error.errors(include_url=False))) from None
    return CorpusGraph.build(
        [_document(entry, k) for k, entry in enumerate(parsed["documents"])],
        [
            Edge(edge["from"], edge["to"], edge["etype"], _as_float(edge["weight"]))
            for edge in parsed.get("edges", [])
        ],
        order="declared",
    )


def graph_to_json(graph: CorpusGraph) -> dict[str, object]:
    """The JSON format of `graph` (the edges it kept, with their clamped weights)."""
    documents: list[_DocumentJson] = []
    for doc in graph.documents:
        entry: _DocumentJson = {"id": doc.id, "title": doc.title}
        if doc.body is not None:
            entry["body"] = doc.body
        entry["depth"] = doc.depth
        entry["recency"] = doc.recency
        if doc.level != DEFAULT_LEVEL:
            entry["level"] = doc.level
        documents.append(entry)
    edges: list[_EdgeJson] = [
        {"from": edge.source, "to": edge.target, "etype": edge.etype, "weight": edge.weight}
        for edge in graph.edges
    ]
    return {"documents": documents, "edges": edges}


def _document(entry: _DocumentJson, k: int) -> Document:
    place = f"documents[{k}]"
    if not entry["id"]:
        raise GraphFormatError(f"{place}.id must not be empty")
    priors = {
        "depth": entry.get("depth", DEFAULT_DEPTH),
        "recency": entry.get("recency", DEFAULT_RECENCY),
    }
    for key, value in priors.items():
        if not math.isfinite(_as_float(value)):
            raise GraphFormatError(f"{place}.{key} must be finite, got {_kind(value)}")
    return Document(
        id=entry["id"],
        title=entry["title"],
        body=entry.get("body"),
        depth=_as_float(priors["depth"]),
        recency=_as_float(priors["recency"]),
        level=entry.get("level", DEFAULT_LEVEL),
    )


def _as_float(value: int | float) -> float:
    """`value` as a float; an integer too large for one (over ~1.8e308) is an infinity."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _message(errors: list[ErrorDetails]) -> str:
    """The reader's one line for pydantic's first error, in file order: within one object an
    unknown key comes first, then the fields in the order of the models above."""
    first = min(errors, key=_position)
    loc, kind, value = first["loc"], first["type"], first.get("input")
    if len(loc) <= 1:  # the graph itself, or its `documents` / `edges`
        return _top_level(loc, kind, value)
    section, index = str(loc[0]), loc[1]
    place = f"{section}[{index}]"
    if len(loc) == 2:
        return f"{place} must be an object, got {_kind(value)}"
    key = str(loc[2])
    if kind == "extra_forbidden":
        return f"{place}: unknown key '{key}' (allowed: {', '.join(_ALLOWED[section])})"
    if kind == "missing":
        if key == "weight":
            return f"{place} needs a 'weight' (a number in (0, 1])"
        return f"{place} needs '{key}' (a string)"
    if key == "weight":
        return f"{place}.weight must be a number in (0, 1], got {_kind(value)}"
    if key in ("depth", "recency"):
        return f"{place}.{key} must be a number, got {_kind(value)}"
    nullable = " or null" if key == "body" else ""
    return f"{place}.{key} must be a string{nullable}, got {_kind(value)}"


def _top_level(loc: tuple[int | str, ...], kind: str, value: object) -> str:
    if kind == "extra_forbidden":
        return f"the graph: unknown key '{loc[0]}' (allowed: {', '.join(_ALLOWED['the graph'])})"
    if kind == "missing":
        return f"the graph needs a '{loc[0]}' list"
    return f"'{loc[0]}' must be a list, got {_kind(value)}"


_FIELD_ORDER: Final = {
    name: position
    for shape in (_DocumentJson, _EdgeJson)
    for position, name in enumerate(shape.__annotations__)
}


def _position(error: ErrorDetails) -> tuple[int, int, int]:
    loc = error["loc"]
    if len(loc) == 1 and error["type"] == "extra_forbidden":
        return -1, -1, -1  # an unknown key of the graph itself is named first
    section = 0 if not loc or loc[0] == "documents" else 1
    index = loc[1] if len(loc) > 1 and isinstance(loc[1], int) else -1
    if len(loc) < 3 or error["type"] == "extra_forbidden":
        return section, index, -1
    return section, index, _FIELD_ORDER.get(str(loc[2]), 99)


def _kind(value: object) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value).bit_length() > 200:
        return f"an integer of about {int(abs(value).bit_length() * 0.30103) + 1} digits"
    for python_type, name in names.items():
        if isinstance(value, python_type):
            return f"{name} ({_short(value)})" if python_type in (str, bool) else name
    if isinstance(value, int | float):
        return f"the number {_short(value)}"
    return type(value).__name__


def _short(value: object, limit: int = 60) -> str:
    """`repr(value)` cut to `limit` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
