"""Errors of the ingest service."""

from __future__ import annotations


class IngestError(Exception):
    """Base of the ingest service's errors."""


class InvalidRow(IngestError):  # noqa: N818 (a verdict on a row, dead-lettered with its message)
    """A row that can never be written: unknown store or column, a value that does not fit its
    column, an edge outside the catalog or with a weight outside (0, 1], an edge across scopes."""
