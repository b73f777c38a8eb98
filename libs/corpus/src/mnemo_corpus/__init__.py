"""Pure CorpusProtocol library: RetrievalEntry, DirectoryCorpus, keyword retriever, bundled docs."""
