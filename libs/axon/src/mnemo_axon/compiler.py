"""Entry points of the declarations compiler: source texts in, IR (or every problem) out.

File reading is the caller's job (the CLI reads files; services read their configuration): these
functions take text, so the library stays pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mnemo_axon.checker import CheckResult, check_files
from mnemo_axon.document_directory import DocumentDirectory
from mnemo_axon.errors import InvalidDeclarationsError
from mnemo_axon.ir import Deployment
from mnemo_axon.parser import parse_declarations


@dataclass(frozen=True, slots=True)
class AxonSource:
    """One `.axon` text and the name diagnostics call it by (usually its path)."""

    name: str
    text: str


def check_sources(
    sources: Sequence[AxonSource], directory: DocumentDirectory | None = None
) -> CheckResult:
    """Parse and check every source as one deployment; never raises for problems in the sources."""
    parsed = [parse_declarations(source.text, source.name) for source in sources]
    return check_files(parsed, directory)


def compile_deployment(
    sources: Sequence[AxonSource], directory: DocumentDirectory | None = None
) -> Deployment:
    """The IR of the sources; raises InvalidDeclarationsError carrying every problem when there are any."""
    result = check_sources(sources, directory)
    if result.deployment is None:
        raise InvalidDeclarationsError(result.diagnostics)
    return result.deployment


def load_deployment(
    text: str, name: str = "<string>", directory: DocumentDirectory | None = None
) -> Deployment:
    """The IR of a single text (see compile_deployment)."""
    return compile_deployment([AxonSource(name, text)], directory)
