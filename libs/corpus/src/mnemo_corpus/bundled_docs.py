"""`BundledDocsCorpus`: Mnemo's own manual, shipped inside this package, as a corpus.

A new user can search or navigate the documentation with the tool itself, with no service
running: `mnemo graph navigate --bundled-docs --query "..."`.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from mnemo_corpus.directory import DirectoryCorpus
from mnemo_corpus.errors import CorpusError

BUNDLED_DOCS_NAME = "bundled:mnemo-docs"
SUMMARIES_FILE = "summaries.json"
CROSS_LINKS_FILE = "links.json"


def bundled_docs_root() -> Path:
    """The folder holding the shipped markdown (inside the installed package)."""
    docs = files("mnemo_corpus") / "docs"
    # A package imported from a zip archive has no folder to scan; every install this project
    # makes (wheel or editable) unpacks it, so this is a message, not a code path to support.
    if not isinstance(docs, Path) or not docs.is_dir():
        raise CorpusError(
            f"the bundled docs are not a folder on disk ({docs}); install mnemo-corpus "
            "as a regular (unzipped) package"
        )
    return docs


class BundledDocsCorpus(DirectoryCorpus):
    """The shipped manual: concepts, quickstart, declarations, API reference, operations.

    Its summaries and cross-links come from the sidecars shipped with it.
    """

    def __init__(self, cache: bool = True) -> None:
        super().__init__(
            bundled_docs_root(),
            summaries_file=SUMMARIES_FILE,
            cross_links_file=CROSS_LINKS_FILE,
            cache=cache,
        )

    @property
    def name(self) -> str:
        return BUNDLED_DOCS_NAME
