"""The `.axon` files named on a command line: read them as sources, report what is wrong with them.

`mnemo check` and `mnemo apply` both compile the files a user names; they read them and print
their diagnostics the same way, compiler-style on stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mnemo_axon import AxonSource, Diagnostic, MappingDocumentDirectory
from mnemo_corpus import CorpusError, DirectoryCorpus

from mnemo_cli.errors import CliError


def add_documents_option(parser: Any) -> None:
    """`--documents DIR`: the folder corpus member names resolve against (check and apply)."""
    parser.add_argument(
        "--documents",
        metavar="DIR",
        help="a folder of markdown documents: a name in a corpus's documents: list that no "
        "`document` declares resolves to the file with that alias (front matter) or file name",
    )


def document_directory(root: str | None) -> MappingDocumentDirectory | None:
    """The markdown folder `root` as the checker's document directory (aliases, then path stems);
    a folder that cannot be read is a one-line CliError."""
    if root is None:
        return None
    if not Path(root).is_dir():
        raise CliError(f"--documents {root}: not a directory")
    try:
        corpus = DirectoryCorpus(root)
        paths = tuple(corpus.path_index)
        aliases = {alias: info.template_path for alias, info in corpus.alias_index.items()}
    except (CorpusError, OSError, ValueError) as error:
        raise CliError(f"--documents {root}: {error}") from None
    return MappingDocumentDirectory(paths, aliases)


def read_axon_files(paths: Sequence[str]) -> list[AxonSource]:
    """Each file as an AxonSource; an unreadable or non-UTF-8 file is a one-line CliError."""
    return [_read(path) for path in paths]


def _read(path: str) -> AxonSource:
    try:
        return AxonSource(path, Path(path).read_text(encoding="utf-8"))
    except UnicodeDecodeError as error:
        raise CliError(f"{path} is not UTF-8 text (byte {error.start}); save it as UTF-8") from None
    except OSError as error:
        raise CliError(f"cannot read {path}: {error.strerror or error}") from None
    except ValueError:  # a NUL or an unencodable character in the name: no file can have it
        raise CliError(f"cannot read {path!r}: no file can have that name") from None


def print_diagnostics(diagnostics: Sequence[Diagnostic], consequence: str = "") -> None:
    """Every diagnostic on stderr, then their count (`3 errors`, or `3 errors: CONSEQUENCE`)."""
    for diagnostic in diagnostics:
        print(diagnostic, file=sys.stderr)
    count = len(diagnostics)
    tally = f"{count} error{'s' if count != 1 else ''}"
    print(f"{tally}: {consequence}" if consequence else tally, file=sys.stderr)
