"""Errors of the corpus library: each says what was wrong and what would be right."""

from __future__ import annotations


class CorpusError(Exception):
    """Base of every error this library raises on purpose."""


class DuplicateAliasError(CorpusError):
    """Two entries claim the same alias; aliases are unique across a corpus (case-sensitive)."""

    def __init__(self, alias: str, first_path: str, second_path: str) -> None:
        super().__init__(
            f"alias {alias!r} is declared by both {first_path!r} and {second_path!r}; "
            "an alias must name exactly one entry: rename or remove one of them"
        )
        self.alias = alias
        self.first_path = first_path
        self.second_path = second_path


class ExtraAliasesFileError(CorpusError, ValueError):
    """The extra-aliases file exists but is not a JSON object of `{path: [alias, ...]}`."""

    def __init__(self, file: str, problem: str) -> None:
        super().__init__(
            f"extra aliases file {file}: {problem}; expected a JSON object mapping each path to "
            'a list of alias strings, e.g. {"guides/setup.md": ["first steps"]}'
        )
        self.file = file
        self.problem = problem
