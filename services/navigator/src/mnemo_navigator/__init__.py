"""Navigator service: navigate, retrieve, search gateway, catalogue, prefetch."""
