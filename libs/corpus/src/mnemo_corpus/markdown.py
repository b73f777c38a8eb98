"""What the corpus reads from markdown text: front matter, the title, wiki-links.

Front matter is a `---` line at the very start of the file, YAML, and a closing `---` (or `...`)
line. It is optional; a block that is not valid YAML or not a mapping is reported and ignored,
because one badly edited file must not make a whole folder unreadable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

import yaml

from mnemo_corpus.entry import RetrievalEntry

_OPENING_FENCE = "---"
_CLOSING_FENCES = ("---", "...")
_ATX_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(?P<text>.+?)(?:[ \t]+#+)?[ \t]*$")
_CODE_FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})")
_INLINE_CODE = re.compile(r"(?P<ticks>`+)(?!`).+?(?<!`)(?P=ticks)(?!`)")
_WIKI_LINK = re.compile(r"\[\[(?P<inner>[^\[\]\n]+)\]\]")


@dataclass(frozen=True, slots=True)
class FrontMatter:
    """What a markdown file says about itself.

    `fields` is the parsed mapping (empty without front matter); `body_start` is the offset of
    the first character after the block; `problem` explains why a block was ignored.
    """

    fields: dict[str, Any] = field(default_factory=dict)
    body_start: int = 0
    problem: str | None = None


def read_front_matter(text: str) -> FrontMatter:
    """Split the front matter off `text`; never raises on malformed input."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].lstrip("\ufeff").rstrip("\r\n") != _OPENING_FENCE:
        return FrontMatter()
    offset = len(lines[0])
    for line in lines[1:]:
        if line.rstrip("\r\n") in _CLOSING_FENCES:
            block = text[len(lines[0]) : offset]
            return _parse_block(block, body_start=offset + len(line))
        offset += len(line)
    return FrontMatter(problem="front matter opened with '---' is never closed")


def _parse_block(block: str, body_start: int) -> FrontMatter:
    try:
        parsed = yaml.safe_load(block)
    except yaml.YAMLError as error:
        reason = str(error).replace("\n", " ")
        return FrontMatter(
            body_start=body_start, problem=f"front matter is not valid YAML ({reason})"
        )
    if parsed is None:
        return FrontMatter(body_start=body_start)
    if not isinstance(parsed, dict):
        kind = type(parsed).__name__
        return FrontMatter(
            body_start=body_start, problem=f"front matter is a {kind}, not a mapping"
        )
    return FrontMatter(
        fields={str(key): value for key, value in parsed.items()}, body_start=body_start
    )


def lines_outside_code_fences(markdown: str) -> list[str]:
    """The lines of `markdown` that are not inside a fenced code block (nor its fences)."""
    kept: list[str] = []
    open_fence: str | None = None
    for line in markdown.splitlines():
        fence = _CODE_FENCE.match(line)
        if fence is not None:
            marker = fence.group("fence")
            if open_fence is None:
                open_fence = marker
            elif marker[0] == open_fence[0] and len(marker) >= len(open_fence):
                open_fence = None
            continue
        if open_fence is None:
            kept.append(line)
    return kept


def first_heading(markdown: str) -> str | None:
    """The text of the first ATX heading (`# Title`) outside fenced code, or None.

    Backticks are dropped and the code they mark is kept: "The `mnemo` command" is titled
    "The mnemo command".
    """
    for line in lines_outside_code_fences(markdown):
        heading = _ATX_HEADING.match(line)
        if heading is not None:
            return heading.group("text").replace("`", "").strip()
    return None


def wiki_links(markdown: str) -> list[str]:
    """The targets of `[[target]]` and `[[target|label]]` links outside code, in text order.

    The front matter is not searched. Targets are stripped of surrounding spaces and otherwise
    kept exactly as written.
    """
    body = markdown[read_front_matter(markdown).body_start :]
    targets = []
    # Code is quoted literally, so a wiki-link written inside it is an example, not a link.
    for line in lines_outside_code_fences(body):
        for link in _WIKI_LINK.finditer(_INLINE_CODE.sub("", line)):
            target = link.group("inner").split("|", 1)[0].strip()
            if target:
                targets.append(target)
    return targets


def entry_title(entry: RetrievalEntry) -> str:
    """The title of an entry: its `name`, else its first markdown heading, else the path stem.

    `name` comes from `metadata["name"]` (a directory corpus puts the front-matter `name` there)
    or from front matter in the content. The same title names the entry in the alias index and
    the document in a corpus graph.
    """
    front_matter = read_front_matter(entry.content)
    for name in (entry.metadata.get("name"), front_matter.fields.get("name")):
        if isinstance(name, str) and name.strip():
            return name.strip()
    heading = first_heading(entry.content[front_matter.body_start :])
    if heading:
        return heading
    return PurePosixPath(entry.path).stem
