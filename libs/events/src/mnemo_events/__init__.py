"""Event envelope, pydantic event models, topic names, broker factory, dead-letter middleware."""
