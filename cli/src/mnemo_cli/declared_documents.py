"""The documents of declared corpora (forms a and c), resolved for `mnemo apply` to store.

A corpus member is either a `document` declaration (its title and content are in the corpus's
definition) or a file of the `--documents` folder, found by alias, then path stem, as
`DirectoryCorpus` and the checker find it. Each becomes a `CorpusDocument` whose id is the name the
corpus lists it by; a file's category and front-matter `tags` become its tags, and its title is
the corpus library's (`entry_title`: the front matter's `name`, else the first heading, else the
file name).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import asyncpg
from mnemo_axon import Deployment
from mnemo_corpus import CorpusError, DirectoryCorpus, RetrievalEntry
from mnemo_corpus.markdown import entry_title
from mnemo_store.corpus_documents import CorpusDocument, store_corpus_documents
from mnemo_store.registry import read_corpus

from mnemo_cli.errors import CliError

DECLARED_KINDS = ("inline", "graph")


def source_uri(corpus: str, name: str) -> str:
    """The address the navigator gives a hit of a stored corpus document."""
    return f"mnemo://corpora/{corpus}/documents/{name}"


def declared_documents(
    definition: Mapping[str, Any], directory: DirectoryCorpus | None
) -> list[CorpusDocument]:
    """The documents a form (a) or (c) corpus definition lists, in the order it lists them."""
    corpus = definition["corpus"]
    name = str(corpus["name"])
    declared = {str(d["name"]): d for d in definition.get("documents", [])}
    documents: list[CorpusDocument] = []
    for ref in corpus.get("documents", []):
        member = str(ref["name"])
        if ref.get("origin") == "declaration":
            found = declared.get(member, {})
            documents.append(
                CorpusDocument(
                    doc_id=member,
                    title=str(found.get("title") or member),
                    content=str(found.get("content") or ""),
                    source_uri=str(found.get("source") or source_uri(name, member)),
                )
            )
            continue
        entry = directory.get(str(ref.get("path"))) if directory is not None else None
        if entry is None:
            raise CliError(
                f"corpus {name}: document {member} is the file {ref.get('path')} of the documents "
                "folder, which was not found: pass that folder with --documents DIR"
            )
        documents.append(_from_entry(name, member, entry))
    return documents


def _from_entry(corpus: str, member: str, entry: RetrievalEntry) -> CorpusDocument:
    front_matter = entry.metadata.get("front_matter")
    tags = _tags(front_matter.get("tags") if isinstance(front_matter, dict) else None)
    if entry.category and entry.category not in tags:
        tags = (entry.category, *tags)
    return CorpusDocument(
        doc_id=member,
        title=entry_title(entry),
        content=entry.content,
        category=entry.category,
        tags=tags,
        source_uri=source_uri(corpus, member),
    )


def _tags(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        items = [part.strip() for part in value.split(",")]
    elif isinstance(value, list | tuple):
        items = [str(part).strip() for part in value]
    else:
        return ()
    return tuple(dict.fromkeys(item for item in items if item))


def corpus_documents(deployment: Deployment, root: str | None) -> dict[str, list[CorpusDocument]]:
    """Each inline or declared-graph corpus's documents, resolved before anything is written."""
    wanted = [c.name for c in deployment.corpora if c.kind.value in DECLARED_KINDS]
    if not wanted:
        return {}
    directory: DirectoryCorpus | None = None
    if root is not None:
        try:
            directory = DirectoryCorpus(root)
        except (CorpusError, OSError, ValueError) as error:
            raise CliError(f"--documents {root}: {error}") from None
    return {
        name: declared_documents(deployment.corpus_definition(name), directory) for name in wanted
    }


async def store_documents(
    connection: asyncpg.Connection, documents: dict[str, list[CorpusDocument]]
) -> list[str]:
    """Store each corpus's documents with the version the registry now holds for it."""
    lines: list[str] = []
    for corpus_id, listed in documents.items():
        registered = await read_corpus(connection, corpus_id)
        if registered is None:
            continue
        version = registered.version
        result = await store_corpus_documents(connection, corpus_id, version, listed)
        lines.append(
            f"stored {result.written} documents of corpus {corpus_id} (version {version})"
            + (f", removed {result.removed} of older versions" if result.removed else "")
        )
    return lines
