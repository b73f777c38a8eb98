"""The document directory port: where corpus member names that no `document` declares are looked up.

AXON.md §1: a name in a corpus's `documents:` list resolves first against the `document` declarations
of the deployment, then against the deployment's document directory (CORPUS.md: an alias, else a
path stem). The checker only needs the lookup; an adapter over a `DirectoryCorpus` implements it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Protocol, runtime_checkable


@runtime_checkable
class DocumentDirectory(Protocol):
    """Finds a document of the deployment's directory by name."""

    def lookup(self, name: str) -> str | None:
        """The root-relative path of the entry whose alias is `name`, else whose path stem is `name`.

        None when no entry answers to the name.
        """
        ...


class MappingDocumentDirectory:
    """A document directory given as data: alias → path, plus the paths whose stems also resolve.

    Enough for tests and for callers that already hold an index of their directory.
    """

    def __init__(
        self, paths: tuple[str, ...] = (), aliases: Mapping[str, str] | None = None
    ) -> None:
        self._aliases = dict(aliases or {})
        self._by_stem: dict[str, str] = {}
        for path in sorted(paths):
            self._by_stem.setdefault(PurePosixPath(path).stem, path)

    def lookup(self, name: str) -> str | None:
        """Alias first, then path stem (the first path in sorted order when stems collide)."""
        return self._aliases.get(name) or self._by_stem.get(name)
