"""Shared fixtures of the corpus tests: small markdown trees written into a temporary folder."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import pytest
from mnemo_corpus import RetrievalEntry, corpus_version

TreeWriter = Callable[[Mapping[str, str]], Path]


@pytest.fixture
def write_tree(tmp_path: Path) -> TreeWriter:
    """Write `{relative path: text}` under a fresh `docs` folder and return that folder."""
    root = tmp_path / "docs"
    root.mkdir()

    def write(files: Mapping[str, str]) -> Path:
        for relative, text in files.items():
            target = root / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        return root

    return write


class InMemoryCorpus:
    """A corpus held in a list, inheriting nothing: it satisfies CorpusProtocol by shape alone."""

    def __init__(self, entries: list[RetrievalEntry], name: str = "memory:test") -> None:
        self._entries = {entry.path: entry for entry in entries}
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    @property
    def version(self) -> str:
        return corpus_version(list(self._entries.values()))

    def entries(self) -> list[RetrievalEntry]:
        return list(self._entries.values())

    def get(self, path: str) -> RetrievalEntry | None:
        return self._entries.get(path)
