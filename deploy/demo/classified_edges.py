"""The edges the edge classifier added, read from a tenant's audit rows (`mnemo audit tail --json`
on stdin): ingest audits each write of the edges store with the principal that sent it.

    mnemo audit tail --tenant T --after-seq 0 --no-follow --json \\
        | python deploy/demo/classified_edges.py --titles memories.jsonl [--expect supersede]

Prints the count by type and every `supersede` and `contradict` edge, by title. With `--expect
TYPE`, exits 1 (printing nothing) until an edge of that type is there: the demo polls with it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

CLASSIFIER = "mnemo.edge-classifier"


def _edge(row_id: str) -> tuple[str, str, str] | None:
    """`<from uuid>-<etype>-><to uuid>` → (from, etype, to)."""
    source, rest = row_id[:36], row_id[37:]
    etype, arrow, target = rest.partition("->")
    return (source, etype, target) if arrow and len(target) == 36 else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--titles", type=Path, action="append", default=[], help="memories")
    parser.add_argument("--expect", help="exit 1 silently until an edge of this type exists")
    args = parser.parse_args()
    titles: dict[str, str] = {}
    for path in args.titles:
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            titles[row["id"]] = row["title"]
    edges: set[tuple[str, str, str]] = set()
    writes = 0
    for line in sys.stdin:
        payload = json.loads(line).get("payload", {})
        if payload.get("principal") != CLASSIFIER or not str(payload.get("store", "")).endswith(
            "Edges"
        ):
            continue
        writes += 1
        edges.update(e for e in map(_edge, payload.get("row_ids", [])) if e is not None)
    types = Counter(etype for _, etype, _ in edges)
    if args.expect and not types[args.expect]:
        return 1
    counts = ", ".join(f"{etype} {n}" for etype, n in types.most_common()) or "none yet"
    print(f"the edge classifier added {len(edges)} edges in {writes} audited writes: {counts}")
    for source, etype, target in sorted(edges, key=lambda e: (e[1], titles.get(e[0], e[0]))):
        if etype in ("supersede", "contradict"):
            print(f"  {titles.get(source, source)}  --{etype}-->  {titles.get(target, target)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
