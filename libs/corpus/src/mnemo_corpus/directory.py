"""`DirectoryCorpus`: a corpus read from a folder of markdown files.

Keys are root-relative POSIX paths, read in sorted order. Optional JSON sidecars next to the
files add summaries and cross-links; they are conveniences, so a missing or malformed sidecar is a
logged warning. The extra-aliases file is different: aliases decide what a name resolves to, so
that file is read strictly, once, when the corpus is constructed.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from mnemo_mdn import tokens

from mnemo_corpus.entry import AliasInfo, RetrievalEntry
from mnemo_corpus.errors import DuplicateAliasError, ExtraAliasesFileError
from mnemo_corpus.markdown import entry_title, read_front_matter

logger = logging.getLogger(__name__)

DEFAULT_GLOB = "**/*.md"

# The one-word-alias warning fires when at least this many entries have aliases and at least
# this share of them have only one-word aliases: below that a corpus is too small for the
# pattern to say anything.
ONE_WORD_ALIAS_WARNING_MINIMUM = 3
ONE_WORD_ALIAS_WARNING_SHARE = 0.5

_VERSION_HEX_DIGITS = 16

PathArgument = str | os.PathLike[str]


@dataclass(frozen=True, slots=True)
class _Snapshot:
    """Everything one scan of the folder produced."""

    entries: tuple[RetrievalEntry, ...]
    by_path: dict[str, RetrievalEntry]
    by_alias: dict[str, AliasInfo]
    version: str


class DirectoryCorpus:
    """Markdown files under `root` as a `CorpusProtocol`.

    - `root` must be a directory. Files matching `glob` are read in sorted path order; a file
      reached through a link that leaves the root is skipped with a warning.
    - YAML front matter supplies `aliases` (a string or a list of strings) and `name`; the whole
      file text is the entry's `content`. `category` is the first path segment, `""` at the root.
    - `summaries_file` (`{path: summary}`) and `cross_links_file` (`{path: [paths]}`) are JSON
      files relative to the root; missing or malformed, they are logged and ignored.
      `extra_summaries` override the summaries file. Cross-links are kept as written, even
      when they name a file that does not exist: whoever turns them into edges reports those.
    - `extra_aliases_file` (`{path: [aliases]}`, keys starting with `_` ignored, relative to the
      root unless absolute) is read strictly here; `extra_aliases` replaces the file's list for
      the paths it names. Extra aliases are appended to the front-matter ones.
    - Aliases are unique across the corpus, compared exactly; a second owner raises
      `DuplicateAliasError` when the corpus is first used.
    - `cache=True` scans once on first use; `cache=False` rescans on every access.
    """

    def __init__(
        self,
        root: PathArgument,
        summaries_file: PathArgument | None = None,
        cross_links_file: PathArgument | None = None,
        extra_summaries: Mapping[str, str] | None = None,
        extra_aliases: Mapping[str, Sequence[str]] | None = None,
        extra_aliases_file: PathArgument | None = None,
        cache: bool = True,
        glob: str = DEFAULT_GLOB,
        warn_alias_overlap: bool = True,
    ) -> None:
        root_path = Path(root)
        if not root_path.is_dir():
            raise ValueError(f"corpus root {str(root_path)!r} is not a directory")
        self._root = root_path
        self._summaries_file = None if summaries_file is None else root_path / summaries_file
        self._cross_links_file = None if cross_links_file is None else root_path / cross_links_file
        self._extra_summaries = dict(extra_summaries or {})
        self._extra_aliases = _inline_aliases(extra_aliases or {})
        self._file_aliases = (
            {}
            if extra_aliases_file is None
            else read_extra_aliases_file(root_path / extra_aliases_file)
        )
        self._cache = cache
        self._glob = glob
        self._warn_alias_overlap = warn_alias_overlap
        self._alias_overlap_warned = False
        self._snapshot: _Snapshot | None = None

    @property
    def root(self) -> Path:
        return self._root

    @property
    def name(self) -> str:
        return f"directory:{self._root.resolve().name}"

    @property
    def version(self) -> str:
        """First 16 hex digits of SHA-256 over every entry's path and content, in path order.

        Summaries, links and aliases from sidecars do not change it: it fingerprints the files.
        """
        return self._load().version

    def entries(self) -> tuple[RetrievalEntry, ...]:
        return self._load().entries

    def get(self, path: str) -> RetrievalEntry | None:
        return self._load().by_path.get(path)

    @property
    def path_index(self) -> dict[str, RetrievalEntry]:
        """Path → entry; a copy, so a caller's changes never reach the corpus."""
        return dict(self._load().by_path)

    @property
    def alias_index(self) -> dict[str, AliasInfo]:
        """Alias → where it leads; a copy, so a caller's changes never reach the corpus."""
        return dict(self._load().by_alias)

    def _load(self) -> _Snapshot:
        if self._snapshot is not None:
            return self._snapshot
        snapshot = self._scan()
        if self._cache:
            self._snapshot = snapshot
        return snapshot

    def _scan(self) -> _Snapshot:
        texts = self._read_files()
        summaries = _read_summaries_sidecar(self._summaries_file)
        summaries.update(self._extra_summaries)
        cross_links = _read_cross_links_sidecar(self._cross_links_file)
        extra_aliases = {**self._file_aliases, **self._extra_aliases}
        _warn_about_unknown_paths("extra aliases", extra_aliases, texts)
        _warn_about_unknown_paths("summaries", summaries, texts)
        _warn_about_unknown_paths("cross-links", cross_links, texts)

        entries = tuple(
            _build_entry(
                path,
                text,
                summary=summaries.get(path),
                related=cross_links.get(path, ()),
                extra_aliases=extra_aliases.get(path, ()),
            )
            for path, text in texts.items()
        )
        by_alias = _index_aliases(entries)
        if self._warn_alias_overlap and not self._alias_overlap_warned:
            self._alias_overlap_warned = _warn_about_one_word_aliases(entries)
        return _Snapshot(
            entries=entries,
            by_path={entry.path: entry for entry in entries},
            by_alias=by_alias,
            version=corpus_version(entries),
        )

    def _read_files(self) -> dict[str, str]:
        """Root-relative POSIX path → file text, in sorted path order."""
        resolved_root = self._root.resolve()
        found: dict[str, Path] = {}
        for candidate in self._root.glob(self._glob):
            relative = candidate.relative_to(self._root).as_posix()
            if not candidate.is_file():
                continue
            if not candidate.resolve().is_relative_to(resolved_root):
                logger.warning(
                    "skipping %s: it is reached through a link that leaves the corpus root %s",
                    relative,
                    resolved_root,
                )
                continue
            found[relative] = candidate
        texts: dict[str, str] = {}
        for relative in sorted(found):
            try:
                texts[relative] = found[relative].read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as error:
                logger.warning("skipping %s: it cannot be read as UTF-8 text (%s)", relative, error)
        return texts


def corpus_version(entries: Sequence[RetrievalEntry]) -> str:
    """The fingerprint of `entries`: path, NUL, content, NUL NUL for each, in path order."""
    digest = hashlib.sha256()
    for entry in sorted(entries, key=lambda entry: entry.path):
        digest.update(entry.path.encode("utf-8"))
        digest.update(b"\x00")
        digest.update(entry.content.encode("utf-8"))
        digest.update(b"\x00\x00")
    return digest.hexdigest()[:_VERSION_HEX_DIGITS]


def read_extra_aliases_file(file: Path) -> dict[str, tuple[str, ...]]:
    """Parse `{path: [alias, ...]}` strictly; keys starting with `_` are comments."""
    if not file.exists():
        raise FileNotFoundError(errno.ENOENT, "extra aliases file does not exist", str(file))
    try:
        parsed = json.loads(file.read_text(encoding="utf-8"))
    except UnicodeDecodeError as error:
        raise ExtraAliasesFileError(str(file), f"not UTF-8 text ({error})") from error
    except json.JSONDecodeError as error:
        raise ExtraAliasesFileError(str(file), f"not valid JSON ({error})") from error
    if not isinstance(parsed, dict):
        raise ExtraAliasesFileError(str(file), f"the top level is a {_json_kind(parsed)}")
    aliases: dict[str, tuple[str, ...]] = {}
    for path, listed in parsed.items():
        if path.startswith("_"):
            continue
        if not isinstance(listed, list) or not all(isinstance(alias, str) for alias in listed):
            raise ExtraAliasesFileError(
                str(file), f"the value for {path!r} is not a list of strings"
            )
        aliases[path] = tuple(listed)
    return aliases


def _inline_aliases(extra_aliases: Mapping[str, Sequence[str]]) -> dict[str, tuple[str, ...]]:
    inline: dict[str, tuple[str, ...]] = {}
    for path, listed in extra_aliases.items():
        # A bare string is a sequence of characters; taking it as such would invent one alias
        # per letter, so it is refused instead.
        if isinstance(listed, str):
            raise TypeError(f"extra_aliases[{path!r}] must be a list of aliases, not a string")
        inline[path] = tuple(listed)
    return inline


def _read_json_sidecar(file: Path | None, what: str) -> dict[str, Any]:
    """The JSON object in `file`, or `{}` with a warning when it is missing or malformed."""
    if file is None:
        return {}
    try:
        parsed = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        logger.warning("%s file %s does not exist; continuing without it", what, file)
        return {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        logger.warning("%s file %s is unreadable (%s); continuing without it", what, file, error)
        return {}
    if not isinstance(parsed, dict):
        logger.warning(
            "%s file %s holds a %s, not a JSON object; continuing without it",
            what,
            file,
            _json_kind(parsed),
        )
        return {}
    return parsed


def _read_summaries_sidecar(file: Path | None) -> dict[str, str]:
    summaries: dict[str, str] = {}
    for path, summary in _read_json_sidecar(file, "summaries").items():
        if isinstance(summary, str):
            summaries[path] = summary
        else:
            logger.warning(
                "summaries file %s: the summary of %r is a %s, not a string; ignored",
                file,
                path,
                _json_kind(summary),
            )
    return summaries


def _read_cross_links_sidecar(file: Path | None) -> dict[str, tuple[str, ...]]:
    cross_links: dict[str, tuple[str, ...]] = {}
    for path, targets in _read_json_sidecar(file, "cross-links").items():
        if not isinstance(targets, list):
            logger.warning(
                "cross-links file %s: the links of %r are a %s, not a list; ignored",
                file,
                path,
                _json_kind(targets),
            )
            continue
        kept = []
        for target in targets:
            if isinstance(target, str):
                kept.append(target)
            else:
                logger.warning(
                    "cross-links file %s: a link of %r is a %s, not a path; ignored",
                    file,
                    path,
                    _json_kind(target),
                )
        cross_links[path] = tuple(kept)
    return cross_links


def _warn_about_unknown_paths(
    what: str, by_path: Mapping[str, object], texts: Mapping[str, str]
) -> None:
    unknown = sorted(path for path in by_path if path not in texts)
    if unknown:
        logger.warning(
            "%s given for %d path(s) that are not entries of the corpus, ignored: %s",
            what,
            len(unknown),
            ", ".join(unknown),
        )


def _build_entry(
    path: str,
    text: str,
    summary: str | None,
    related: tuple[str, ...],
    extra_aliases: tuple[str, ...],
) -> RetrievalEntry:
    front_matter = read_front_matter(text)
    if front_matter.problem is not None:
        logger.warning("%s: %s; the file is read without it", path, front_matter.problem)
    metadata: dict[str, Any] = {}
    if front_matter.fields:
        metadata["front_matter"] = front_matter.fields
    name = front_matter.fields.get("name")
    if isinstance(name, str) and name.strip():
        metadata["name"] = name.strip()
    elif name is not None:
        logger.warning("%s: front-matter name is a %s, not text; ignored", path, _json_kind(name))
    aliases = _front_matter_aliases(path, front_matter.fields.get("aliases"))
    parts = PurePosixPath(path).parts
    return RetrievalEntry(
        path=path,
        category=parts[0] if len(parts) > 1 else "",
        content=text,
        summary=summary,
        related=related,
        # An alias repeated for the same entry (twice in one list, or in front matter and in
        # the extra aliases) names the same place, so it is kept once rather than refused.
        aliases=tuple(dict.fromkeys((*aliases, *_non_empty(path, extra_aliases)))),
        metadata=metadata,
    )


def _front_matter_aliases(path: str, declared: object) -> tuple[str, ...]:
    if declared is None:
        return ()
    if isinstance(declared, str):
        return _non_empty(path, (declared,))
    if not isinstance(declared, list):
        logger.warning(
            "%s: front-matter aliases is a %s, not a list; ignored", path, _json_kind(declared)
        )
        return ()
    kept = []
    for alias in declared:
        if isinstance(alias, str):
            kept.append(alias)
        else:
            logger.warning(
                "%s: front-matter alias %r is not text; ignored (quote it to keep it)", path, alias
            )
    return _non_empty(path, kept)


def _non_empty(path: str, aliases: Sequence[str]) -> tuple[str, ...]:
    if any(not alias for alias in aliases):
        logger.warning("%s: an empty alias names nothing; ignored", path)
    return tuple(alias for alias in aliases if alias)


def _index_aliases(entries: Sequence[RetrievalEntry]) -> dict[str, AliasInfo]:
    by_alias: dict[str, AliasInfo] = {}
    for entry in entries:
        title = entry_title(entry) if entry.aliases else ""
        for alias in entry.aliases:
            earlier = by_alias.get(alias)
            if earlier is not None:
                raise DuplicateAliasError(alias, earlier.template_path, entry.path)
            by_alias[alias] = AliasInfo(alias=alias, template_path=entry.path, template_name=title)
    return by_alias


def _warn_about_one_word_aliases(entries: Sequence[RetrievalEntry]) -> bool:
    """Warn when many aliased entries have only one-word aliases; True when it warned."""
    aliased = [entry for entry in entries if entry.aliases]
    one_word = [
        entry for entry in aliased if all(len(tokens(alias)) < 2 for alias in entry.aliases)
    ]
    if len(aliased) < ONE_WORD_ALIAS_WARNING_MINIMUM:
        return False
    if len(one_word) < ONE_WORD_ALIAS_WARNING_SHARE * len(aliased):
        return False
    logger.warning(
        "%d of %d aliased entries have only one-word aliases (e.g. %s); the keyword retriever "
        "counts an alias only when at least 2 of its words match a query, so these aliases "
        "never help retrieval: give them multi-word aliases, or pass warn_alias_overlap=False",
        len(one_word),
        len(aliased),
        one_word[0].path,
    )
    return True


def _json_kind(value: object) -> str:
    kinds = {dict: "object", list: "list", str: "string", bool: "boolean", type(None): "null"}
    return kinds.get(
        type(value), "number" if isinstance(value, int | float) else type(value).__name__
    )
