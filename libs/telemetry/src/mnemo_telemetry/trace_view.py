"""A trace in the terminal, read from Jaeger's query API (its web UI is a placeholder when Jaeger is
built from its Go module, as `make ops` does).

    python -m mnemo_telemetry.trace_view TRACE_ID            # one trace as an indented span tree
    python -m mnemo_telemetry.trace_view --service mnemo-ingest --limit 5   # recent traces

Each line: offset from the trace's start, duration, service, span name, Mnemo's attributes; a span
that ended in error is marked `!`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mnemo_telemetry.errors import TelemetryError

DEFAULT_JAEGER_URL = "http://127.0.0.1:16686"
# Attributes worth a column: Mnemo's own, plus the messaging, database and HTTP essentials.
SHOWN_PREFIXES = ("mnemo.", "messaging.destination.name", "db.collection.name", "http.route")
SHOWN_EXACT = ("http.response.status_code", "error", "otel.status_description")


class TraceNotFoundError(TelemetryError):
    """Jaeger knows no trace with that id (not exported yet, expired, or a typo)."""


@dataclass(frozen=True)
class SpanLine:
    span_id: str
    parent_id: str | None
    service: str
    name: str
    start_us: int
    duration_us: int
    failed: bool
    attributes: tuple[tuple[str, str], ...]


def fetch_json(url: str, timeout: float = 5.0) -> Any:
    if not url.startswith(("http://", "https://")):
        raise TelemetryError(f"not an http(s) URL: {url}")
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 (scheme checked above)
            return json.load(response)
    except urllib.error.HTTPError as error:
        if error.code == 404:
            raise TraceNotFoundError(url) from error
        raise TelemetryError(f"Jaeger answered {error.code} for {url}") from error
    except (urllib.error.URLError, TimeoutError) as error:
        raise TelemetryError(
            f"Jaeger's query API does not answer at {url} ({error}); start it with `make ops`"
        ) from error


def spans_of(trace: Mapping[str, Any]) -> list[SpanLine]:
    """The spans of one trace object of Jaeger's API (`data[i]`), in start order."""
    processes = trace.get("processes", {})
    lines = []
    for span in trace.get("spans", []):
        tags = {tag["key"]: tag.get("value") for tag in span.get("tags", [])}
        parents = [
            ref["spanID"]
            for ref in span.get("references", [])
            if ref.get("refType") == "CHILD_OF" and ref.get("traceID") == span["traceID"]
        ]
        shown = tuple(
            (key, _text(value))
            for key, value in sorted(tags.items())
            if key.startswith(SHOWN_PREFIXES) or key in SHOWN_EXACT
        )
        lines.append(
            SpanLine(
                span_id=span["spanID"],
                parent_id=parents[0] if parents else None,
                service=processes.get(span.get("processID"), {}).get("serviceName", "?"),
                name=span["operationName"],
                start_us=int(span["startTime"]),
                duration_us=int(span["duration"]),
                failed=tags.get("error") in (True, "true")
                or tags.get("otel.status_code") == "ERROR",
                attributes=shown,
            )
        )
    return sorted(lines, key=lambda line: line.start_us)


def render(trace: Mapping[str, Any]) -> list[str]:
    """One trace as text lines: a header, then the span tree (children under their parents)."""
    spans = spans_of(trace)
    if not spans:
        return [f"trace {trace.get('traceID', '?')}: no spans"]
    known = {span.span_id for span in spans}
    children: dict[str | None, list[SpanLine]] = {}
    for span in spans:
        parent = span.parent_id if span.parent_id in known else None
        children.setdefault(parent, []).append(span)
    start = spans[0].start_us
    end = max(span.start_us + span.duration_us for span in spans)
    services = sorted({span.service for span in spans})
    lines = [
        f"trace {trace.get('traceID', '?')}: {len(spans)} spans, {_ms(end - start)}, "
        f"services {', '.join(services)}"
    ]

    def walk(parent: str | None, depth: int) -> None:
        for span in children.get(parent, []):
            mark = "!" if span.failed else " "
            attributes = " ".join(f"{key}={value}" for key, value in span.attributes)
            lines.append(
                f"{mark} +{_ms(span.start_us - start):>10} {_ms(span.duration_us):>10}  "
                f"{'  ' * depth}{span.service}: {span.name}"
                + (f"  [{attributes}]" if attributes else "")
            )
            walk(span.span_id, depth + 1)

    walk(None, 0)
    return lines


def _ms(microseconds: int) -> str:
    return f"{microseconds / 1000:.1f} ms"


def _text(value: object) -> str:
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def show_trace(base_url: str, trace_id: str) -> list[str]:
    body = fetch_json(f"{base_url.rstrip('/')}/api/traces/{urllib.parse.quote(trace_id)}")
    data = body.get("data") or []
    if not data:
        raise TraceNotFoundError(trace_id)
    return render(data[0])


def recent_traces(base_url: str, service: str, limit: int) -> list[str]:
    query = urllib.parse.urlencode({"service": service, "limit": limit, "lookback": "1h"})
    body = fetch_json(f"{base_url.rstrip('/')}/api/traces?{query}")
    lines = []
    for trace in body.get("data") or []:
        spans = spans_of(trace)
        if not spans:
            continue
        root = next((span for span in spans if span.parent_id is None), spans[0])
        end = max(span.start_us + span.duration_us for span in spans)
        lines.append(
            f"{trace['traceID']}  {len(spans):>3} spans  {_ms(end - spans[0].start_us):>10}  "
            f"{root.service}: {root.name}"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mnemo_telemetry.trace_view",
        description="Show a trace from Jaeger's query API as a span tree, or list recent traces.",
    )
    parser.add_argument(
        "trace_id", nargs="?", help="32-hex trace id (from a log line or a response)"
    )
    parser.add_argument(
        "--jaeger",
        default=os.environ.get("MNEMO_JAEGER_URL", DEFAULT_JAEGER_URL),
        help="query API base URL (MNEMO_JAEGER_URL, default %(default)s)",
    )
    parser.add_argument("--service", help="list recent traces of this service (e.g. mnemo-ingest)")
    parser.add_argument("--limit", type=int, default=10, help="how many recent traces (default 10)")
    args = parser.parse_args(argv)
    if not args.trace_id and not args.service:
        parser.error("give a TRACE_ID, or --service NAME to list recent traces")
    try:
        if args.trace_id:
            lines = show_trace(args.jaeger, args.trace_id)
        else:
            lines = recent_traces(args.jaeger, args.service, args.limit) or [
                f"no traces of {args.service} in the last hour"
            ]
    except TraceNotFoundError:
        print(
            f"error: Jaeger has no trace {args.trace_id} (not exported yet, or expired)",
            file=sys.stderr,
        )
        return 1
    except TelemetryError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
