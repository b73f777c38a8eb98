"""Ingest service: the only writer of store rows; outbox relay."""
