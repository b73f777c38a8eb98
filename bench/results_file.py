"""A benchmark's results file: what it measured, under which load, in `bench/results/`."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def write_results(
    path: Path, benchmark: str, load_before: Sequence[float], results: Sequence[Any]
) -> None:
    """Writes `{benchmark, load_average, results}` to `path` (the 1/5/15-minute load averages
    before the run and now) and says so in one line."""
    load = [round(x, 2) for x in (*load_before, *os.getloadavg())]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {"benchmark": benchmark, "load_average": load, "results": list(results)}, indent=2
        )
        + "\n"
    )
    print(f"load average before/after: {load}; wrote {path.name}")
