"""The repository's documentation points only at files inside it: the architecture and the specs the
code follows are its own docs, and every relative link in a markdown file leads to a file that
exists."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
OUTSIDE = re.compile(r"\.\./shared|/work/|(?:\.\./){3,}|\.\./(?:spec|design|seeds|data)/")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def markdown_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return [ROOT / name for name in listed if (ROOT / name).is_file()]


def test_no_markdown_file_points_outside_the_repository() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in markdown_files()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if OUTSIDE.search(line)
    ]
    assert offenders == []


def test_every_relative_link_in_the_docs_leads_to_a_file_of_the_repository() -> None:
    broken = [
        f"{path.relative_to(ROOT)}: {target}"
        for path in markdown_files()
        for target in LINK.findall(path.read_text(encoding="utf-8"))
        if "://" not in target
        and not target.startswith("mailto:")
        and not (path.parent / target).exists()
    ]
    assert broken == []


def test_the_architecture_and_the_specs_are_in_the_repository() -> None:
    for name in ("ARCHITECTURE.md", "specs/MDN.md", "specs/AXON.md", "specs/CORPUS.md"):
        assert (ROOT / "docs" / name).is_file(), name
