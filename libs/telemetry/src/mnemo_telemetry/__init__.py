"""structlog, OpenTelemetry and Prometheus set-up, called only by services."""
