"""Edge classifier service: turns a persisted document into edge rows."""
