"""`make run`'s demo plays from start to end against the running stack and its four services, twice
(each run makes its own tenants), and shows what it says it shows."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
HIT = re.compile(r"^\s+-?\d+\.\d{3}\s+(?P<title>.+?)(?:\s\s[(\[].*)?$")


def _play() -> tuple[str, dict[str, str]]:
    # The demo bounds each of its waits (polls with deadlines); this bounds the whole.
    result = subprocess.run(
        ["bash", "deploy/local/demo.sh"], capture_output=True, text=True, cwd=ROOT, timeout=480
    )
    assert result.returncode == 0, f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    sections: dict[str, str] = {}
    for chunk in result.stdout.split("\n== ")[1:]:
        title, _, body = chunk.partition("\n")
        sections[title] = body
    return result.stdout, sections


def _section(sections: dict[str, str], start: str) -> str:
    found = [body for title, body in sections.items() if title.startswith(start)]
    assert len(found) == 1, (start, list(sections))
    return found[0]


def _titles(body: str) -> list[str]:
    return [m["title"] for line in body.splitlines() if (m := HIT.match(line))]


def _assert_the_demo_shows_what_it_says(out: str, sections: dict[str, str]) -> None:
    for step in ("mnemo dev status", "mnemo check", "mnemo apply", "mnemo corpus publish Memory"):
        assert f"$ {step}" in out
    stream = _section(sections, "a stream of memories")
    assert "ingest wrote all 248" in stream
    assert "ingest wrote all 123" in stream

    edges = _section(sections, "edges nobody sent")
    assert "Northwind amendment 2  --supersede-->  Northwind liability cap" in edges
    assert "Northwind data residency  --contradict-->  Northwind hosting plan" in edges
    assert "Home insurance renewal  --supersede-->  Home insurance liability cap" in edges

    wide = _titles(_section(sections, "recall, tenant-wide token of acme"))
    assert any(t.startswith("Northwind") for t in wide), wide
    assert any(t.startswith("Globex") for t in wide), wide
    assert all(t.startswith(("Northwind", "Globex")) for t in wide), wide  # nothing of solo
    assert "Northwind amendment 2" in wide
    assert "Northwind liability cap" in wide

    for start in ("recall, client token of acme's end-client northwind", "recall, the same"):
        confined = _titles(_section(sections, start))
        assert confined, start
        assert all(t.startswith("Northwind") for t in confined), (start, confined)
    assert "--where \"tenant_id == '\\${globex}' OR" in _section(sections, "recall, the same")

    globex = _titles(_section(sections, "retrieve, client token of acme's end-client globex"))
    assert globex
    assert all(t.startswith("Globex") for t in globex), globex

    solo = _titles(_section(sections, "recall, tenant-wide token of solo"))
    assert solo
    assert all(t.startswith("Home insurance") for t in solo), solo

    audit = _section(sections, "the audit log")
    assert audit.count("corpus:Memory:query") == 4  # acme's four queries
    assert "by=mnemo.edge-classifier" in audit
    assert len(re.findall(r"audit chain of tenant \S+: \d+ rows verify", audit)) == 2

    traces = _section(sections, "traces")
    assert "trace ids on the audit rows" in traces or "no trace context" in traces
    example = _section(sections, "the registry's worked example")
    assert "route overdraft_fee_qa@2026.08.1" in example
    assert "slots: prefetch, prefetch:fee-schedule, prefetch:product-disclosure" in example
    assert "  [fee-schedule:fee-overdraft]" in example
    assert "  [product-disclosure:pd-overdraft-1]" in example
    explore = _section(sections, "explore, then stop")
    assert "make down" in explore
    assert re.search(r"Control Plane console \(read-only\): http://\S+/console", explore)
    assert re.search(r"demo: done in \d+ s", out)


def test_the_demo_plays_every_step_twice_and_shows_confinement_edges_and_audit() -> None:
    first, first_sections = _play()
    _assert_the_demo_shows_what_it_says(first, first_sections)
    second, second_sections = _play()
    _assert_the_demo_shows_what_it_says(second, second_sections)
    assert "corpus Memory is already published; nothing changed" in second
    tenants = re.findall(r"\$ mnemo tenant create (acme-\S+)", first + second)
    assert len(set(tenants)) == 2  # a run makes its own tenants
