"""Pure CorpusProtocol library: RetrievalEntry, DirectoryCorpus, keyword retriever, bundled docs.

Any Python program can use it with no service running. `entry_graph` turns a corpus into the
MDN engine's documents and edges (embedded navigation); `plan_ingest` turns that graph into the
persist commands `mnemo ingest-dir` publishes.
"""

from mnemo_corpus.bundled_docs import BundledDocsCorpus
from mnemo_corpus.directory import DEFAULT_GLOB, DirectoryCorpus, corpus_version
from mnemo_corpus.entry import AliasInfo, RetrievalEntry
from mnemo_corpus.entry_graph import EntryGraph, LinkKind, LinkOptions, UnresolvedLink, entry_graph
from mnemo_corpus.errors import CorpusError, DuplicateAliasError, ExtraAliasesFileError
from mnemo_corpus.keyword_retriever import KeywordRetriever, RetrievalHit
from mnemo_corpus.persist_commands import (
    DocumentsStore,
    EdgesStore,
    IngestPlan,
    PersistCommand,
    plan_ingest,
)
from mnemo_corpus.protocol import CorpusProtocol
from mnemo_corpus.remote import (
    HttpResponse,
    HttpTransport,
    MnemoClient,
    MnemoCorpus,
    RemoteCorpusError,
)

__all__ = [
    "DEFAULT_GLOB",
    "AliasInfo",
    "BundledDocsCorpus",
    "CorpusError",
    "CorpusProtocol",
    "DirectoryCorpus",
    "DocumentsStore",
    "DuplicateAliasError",
    "EdgesStore",
    "EntryGraph",
    "ExtraAliasesFileError",
    "HttpResponse",
    "HttpTransport",
    "IngestPlan",
    "KeywordRetriever",
    "LinkKind",
    "LinkOptions",
    "MnemoClient",
    "MnemoCorpus",
    "PersistCommand",
    "RemoteCorpusError",
    "RetrievalEntry",
    "RetrievalHit",
    "UnresolvedLink",
    "corpus_version",
    "entry_graph",
    "plan_ingest",
]
