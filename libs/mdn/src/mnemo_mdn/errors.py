"""Errors of the MDN engine: one hierarchy, each message says what was wrong and what would be right."""

from __future__ import annotations


class MdnError(Exception):
    """Base of every error the engine raises on purpose."""


class ParameterError(MdnError, ValueError):
    """A parameter is outside its domain (for example `damping` not in (0, 1), `budget` < 1)."""


class GraphFormatError(MdnError, ValueError):
    """The input does not describe a corpus graph (malformed JSON shape, duplicate ids, bad priors)."""


class UnknownSeedError(MdnError, LookupError):
    """The requested seed names no document of the graph (default mode never falls back silently)."""

    def __init__(self, seed: str) -> None:
        super().__init__(f"unknown seed '{seed}'")
        self.seed = seed

    def __str__(self) -> str:
        # LookupError would otherwise render the message with quotes around it.
        return str(self.args[0])
