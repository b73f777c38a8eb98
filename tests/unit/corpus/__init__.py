"""Tests of the mnemo_corpus library and the ingest-dir command."""
