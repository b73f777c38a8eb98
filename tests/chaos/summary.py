"""The chaos tier's summary table: each test records its row (fault, events, lost, duplicated,
leaked), written as JSON under `.local/chaos/summary/` and printed at the end of the run."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DIRECTORY = ROOT / ".local" / "chaos" / "summary"
COLUMNS = ("fault", "events", "lost", "duplicated", "leaked", "notes")


@dataclass(frozen=True)
class Row:
    test: str
    fault: str
    events: int
    lost: int
    duplicated: int
    leaked: int | None
    """None: the fault cannot show another tenant's rows (printed as a dash)."""
    notes: str = ""


@dataclass
class Summary:
    """The rows of one test; `row` records one (written at once, so a later failure keeps it)."""

    test: str
    rows: list[Row] = field(default_factory=list)

    def row(self, **values: Any) -> Row:
        recorded = Row(test=self.test, **values)
        self.rows.append(recorded)
        DIRECTORY.mkdir(parents=True, exist_ok=True)
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", self.test)[-150:]
        path = DIRECTORY / f"{name}.{len(self.rows)}.json"
        path.write_text(json.dumps(asdict(recorded), ensure_ascii=False) + "\n")
        print(json.dumps(asdict(recorded), ensure_ascii=False))
        return recorded


def table(rows: list[Row]) -> str:
    """A markdown table of `rows` (numbers with thousands separators)."""

    def cell(value: object) -> str:
        if value is None:
            return "—"
        if isinstance(value, int):
            return f"{value:,}"
        return str(value).replace("|", "\\|")

    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for row in rows:
        lines.append("| " + " | ".join(cell(getattr(row, c)) for c in COLUMNS) + " |")
    return "\n".join(lines)
