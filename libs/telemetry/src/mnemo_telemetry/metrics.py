"""Mnemo's Prometheus metrics, defined once: the names, labels and buckets of the contract the
dashboards and alert rules read (deploy/prometheus/METRICS.md). A service records into these
objects; its `/metrics` endpoint (the probes router) serves the default registry they live in.

Defining a metric registers it, which touches nothing outside the process; no service defines a
metric of its own under one of these names.
"""

from __future__ import annotations

from typing import Final, Literal

from prometheus_client import Counter, Gauge, Histogram

Outcome = Literal["ok", "dead_lettered", "duplicate"]
CacheResult = Literal["hit", "miss", "refresh"]

# Seconds; from a cached navigation (milliseconds) to a cold load of a large graph (seconds).
LATENCY_BUCKETS: Final = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)
EPR_BUCKETS: Final = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)

HTTP_REQUEST_DURATION: Final = Histogram(
    "mnemo_http_request_duration_seconds",
    "Time to answer one HTTP request, by route template (never the raw path) and status code.",
    ["service", "route", "method", "status"],
    buckets=LATENCY_BUCKETS,
)
HANDLER_DURATION: Final = Histogram(
    "mnemo_handler_duration_seconds",
    "Time a consumer's handler spent on one message (or one batch), commit included.",
    ["service", "topic"],
    buckets=LATENCY_BUCKETS,
)
MESSAGES: Final = Counter(
    "mnemo_messages",
    "Messages a consumer finished, by outcome: ok, dead_lettered or duplicate (already in the inbox).",
    ["service", "topic", "outcome"],
)
DEAD_LETTERS: Final = Counter(
    "mnemo_dead_letters",
    "Messages written to <topic>.dlt, by the reason's short code.",
    ["service", "topic", "reason"],
)
CONSUMER_LAG: Final = Gauge(
    "mnemo_consumer_lag",
    "Messages between the consumer group's committed offset and the partition's end.",
    ["service", "topic", "partition"],
)
CONSUMER_PARTITIONS: Final = Gauge(
    "mnemo_consumer_partitions_assigned",
    "Partitions of the topic the service's consumer holds now (0: none, e.g. a replica beyond the "
    "partition count, or the broker away); readiness does not wait for them.",
    ["service", "topic"],
)
NAVIGATE_DURATION: Final = Histogram(
    "mnemo_navigate_duration_seconds",
    "Time of one navigation inside the navigator (graph load or cache check, EPR, walk).",
    ["corpus", "mode"],
    buckets=LATENCY_BUCKETS,
)
GRAPH_CACHE_REQUESTS: Final = Counter(
    "mnemo_graph_cache_requests",
    "Graph cache look-ups by result: hit (fresh), miss (loaded), refresh (stale, reloaded).",
    ["corpus", "result"],
)
EPR_SECONDS: Final = Histogram(
    "mnemo_epr_seconds",
    "Time of one signed Epistemic PageRank computation.",
    buckets=EPR_BUCKETS,
)
AUDIT_ROWS_APPENDED: Final = Counter(
    "mnemo_audit_rows_appended",
    "Rows appended to the audit log, every tenant together (no tenant label: /metrics is "
    "unauthenticated, so it names no tenant and keeps one series however many there are).",
)
AUDIT_CHAIN_REGRESSIONS: Final = Counter(
    "mnemo_audit_chain_regressions",
    "Appends whose sequence number was not past the head this process last saw for the tenant: "
    "the chain lost rows at its end. The audit service's log names the tenant.",
)
ROWS_PERSISTED: Final = Counter(
    "mnemo_rows_persisted",
    "Rows ingest committed, by store.",
    ["store"],
)

METRIC_NAMES: Final = (
    "mnemo_http_request_duration_seconds",
    "mnemo_handler_duration_seconds",
    "mnemo_messages_total",
    "mnemo_dead_letters_total",
    "mnemo_consumer_lag",
    "mnemo_consumer_partitions_assigned",
    "mnemo_navigate_duration_seconds",
    "mnemo_graph_cache_requests_total",
    "mnemo_epr_seconds",
    "mnemo_audit_rows_appended_total",
    "mnemo_audit_chain_regressions_total",
    "mnemo_rows_persisted_total",
)
"""The exposed names (counters gain `_total`), as deploy/prometheus/METRICS.md lists them."""
