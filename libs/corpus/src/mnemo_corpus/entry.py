"""The document unit every corpus produces, and the record an alias points at."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class RetrievalEntry:
    """One document of a corpus.

    `path` is the unique lookup key (for a directory corpus: the root-relative POSIX path),
    `category` groups entries (for a directory corpus: the first path segment, `""` at the root),
    `content` is the full text, `related` holds the paths of cross-linked entries as written and
    `aliases` the alternative names that resolve to this entry.
    """

    path: str
    category: str
    content: str
    summary: str | None = None
    related: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AliasInfo:
    """Where an alias leads: the entry's path and its display name."""

    alias: str
    template_path: str
    template_name: str
