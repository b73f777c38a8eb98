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
Documents keep their order in the file.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Final

from mnemo_mdn.errors import GraphFormatError
from mnemo_mdn.graph import (
    DEFAULT_DEPTH,
    DEFAULT_LEVEL,
    DEFAULT_RECENCY,
    CorpusGraph,
    Document,
    Edge,
)

_DOCUMENT_KEYS: Final = ("id", "title", "body", "depth", "recency", "level")
_EDGE_KEYS: Final = ("from", "to", "etype", "weight")
_TOP_KEYS: Final = ("documents", "edges")


def graph_from_json(data: Mapping[str, object]) -> CorpusGraph:
    """A graph from the decoded JSON format (documents in file order)."""
    if not isinstance(data, Mapping):
        raise GraphFormatError(
            f"a graph must be a JSON object with 'documents' and 'edges', got {_kind(data)}"
        )
    _reject_unknown_keys(data, _TOP_KEYS, "the graph")
    documents = _list_at(data, "documents", required=True)
    edges = _list_at(data, "edges", required=False)
    return CorpusGraph.build(
        [_document(entry, k) for k, entry in enumerate(documents)],
        [_edge(entry, k) for k, entry in enumerate(edges)],
        order="declared",
    )


def graph_to_json(graph: CorpusGraph) -> dict[str, object]:
    """The JSON format of `graph` (the edges it kept, with their clamped weights)."""
    documents: list[dict[str, object]] = []
    for doc in graph.documents:
        entry: dict[str, object] = {"id": doc.id, "title": doc.title}
        if doc.body is not None:
            entry["body"] = doc.body
        entry["depth"] = doc.depth
        entry["recency"] = doc.recency
        if doc.level != DEFAULT_LEVEL:
            entry["level"] = doc.level
        documents.append(entry)
    edges = [
        {"from": edge.source, "to": edge.target, "etype": edge.etype, "weight": edge.weight}
        for edge in graph.edges
    ]
    return {"documents": documents, "edges": edges}


def _document(entry: object, k: int) -> Document:
    place = f"documents[{k}]"
    if not isinstance(entry, Mapping):
        raise GraphFormatError(f"{place} must be an object, got {_kind(entry)}")
    _reject_unknown_keys(entry, _DOCUMENT_KEYS, place)
    body = entry.get("body")
    if body is not None and not isinstance(body, str):
        raise GraphFormatError(f"{place}.body must be a string or null, got {_kind(body)}")
    return Document(
        id=_required_string(entry, "id", place),
        title=_required_string(entry, "title", place),
        body=body,
        depth=_optional_number(entry, "depth", place, DEFAULT_DEPTH),
        recency=_optional_number(entry, "recency", place, DEFAULT_RECENCY),
        level=_optional_string(entry, "level", place, DEFAULT_LEVEL),
    )


def _edge(entry: object, k: int) -> Edge:
    place = f"edges[{k}]"
    if not isinstance(entry, Mapping):
        raise GraphFormatError(f"{place} must be an object, got {_kind(entry)}")
    _reject_unknown_keys(entry, _EDGE_KEYS, place)
    if "weight" not in entry:
        raise GraphFormatError(f"{place} needs a 'weight' (a number in (0, 1])")
    weight = entry["weight"]
    if isinstance(weight, bool) or not isinstance(weight, int | float):
        raise GraphFormatError(f"{place}.weight must be a number in (0, 1], got {_kind(weight)}")
    # NaN and infinities (which Python's json accepts) stay: the engine skips and counts them.
    return Edge(
        source=_required_string(entry, "from", place),
        target=_required_string(entry, "to", place),
        etype=_required_string(entry, "etype", place),
        weight=_as_float(weight),
    )


def _as_float(value: int | float) -> float:
    """`value` as a float; an integer too large for one (over ~1.8e308) is an infinity."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _list_at(data: Mapping[str, object], key: str, *, required: bool) -> Sequence[object]:
    if key not in data:
        if required:
            raise GraphFormatError(f"the graph needs a '{key}' list")
        return []
    value = data[key]
    if not isinstance(value, list):
        raise GraphFormatError(f"'{key}' must be a list, got {_kind(value)}")
    return value


def _reject_unknown_keys(entry: Mapping[str, object], allowed: tuple[str, ...], place: str) -> None:
    unknown = [key for key in entry if key not in allowed]
    if unknown:
        raise GraphFormatError(
            f"{place}: unknown key '{unknown[0]}' (allowed: {', '.join(allowed)})"
        )


def _required_string(entry: Mapping[str, object], key: str, place: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str):
        if key not in entry:
            raise GraphFormatError(f"{place} needs '{key}' (a string)")
        raise GraphFormatError(f"{place}.{key} must be a string, got {_kind(value)}")
    if key == "id" and not value:
        raise GraphFormatError(f"{place}.id must not be empty")
    return value


def _optional_string(entry: Mapping[str, object], key: str, place: str, default: str) -> str:
    value = entry.get(key, default)
    if not isinstance(value, str):
        raise GraphFormatError(f"{place}.{key} must be a string, got {_kind(value)}")
    return value


def _optional_number(entry: Mapping[str, object], key: str, place: str, default: float) -> float:
    value = entry.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise GraphFormatError(f"{place}.{key} must be a number, got {_kind(value)}")
    number = _as_float(value)
    if not math.isfinite(number):
        raise GraphFormatError(f"{place}.{key} must be finite, got {_kind(value)}")
    return number


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
