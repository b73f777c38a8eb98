"""Shared helpers of the declarations tests: compile texts, read the seed's examples."""

from __future__ import annotations

from pathlib import Path

from mnemo_axon import AxonSource, CheckResult, DocumentDirectory, check_sources

SEED_EXAMPLES = Path(__file__).parent / "seed_examples"

# The seed lists these names in its form (a) and (c) examples without declaring them anywhere;
# the tests give them `document` declarations, as a deployment would.
SEED_DOCUMENT_NAMES = (
    "PrivacyPolicy",
    "TermsOfService",
    "RefundPolicy",
    "sess_a",
    "sess_b",
    "sess_c",
)


def seed_documents_source() -> AxonSource:
    text = "\n".join(
        f'document {name} {{ title: "{name}" source: "docs/{name}.md" }}'
        for name in SEED_DOCUMENT_NAMES
    )
    return AxonSource("documents.axon", text)


def seed_sources() -> list[AxonSource]:
    return [
        AxonSource(path.name, path.read_text(encoding="utf-8"))
        for path in sorted(SEED_EXAMPLES.glob("*.axon"))
    ]


def check(*texts: str, directory: DocumentDirectory | None = None) -> CheckResult:
    sources = [AxonSource(f"file{index}.axon", text) for index, text in enumerate(texts, start=1)]
    return check_sources(sources, directory)


def messages(*texts: str, directory: DocumentDirectory | None = None) -> list[str]:
    return [diagnostic.message for diagnostic in check(*texts, directory=directory).diagnostics]
