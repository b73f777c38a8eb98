"""KeywordRetriever: the scoring formula on a small fixture, with every expected score written out."""

from __future__ import annotations

import pytest
from mnemo_corpus import KeywordRetriever, RetrievalEntry

from .conftest import InMemoryCorpus

REFUND_POLICY = RetrievalEntry(
    path="billing/refund-policy.md",
    category="billing",
    content="# Refund policy\nCustomers get their money back within 30 days.",
    summary="How refunds are paid back to customers",
    related=("billing/invoices.md",),
    aliases=("money back guarantee",),
)
INVOICES = RetrievalEntry(
    path="billing/invoices.md",
    category="billing",
    content="# Invoices\nEvery invoice lists the refund lines.",
    summary="Invoices and credit notes for refunds",
)
CONTACT = RetrievalEntry(
    path="support/contact.md",
    category="support",
    content="# Contact\nWrite to support for a refund.",
    aliases=("refund",),
)
WELCOME = RetrievalEntry(path="index.md", category="", content="Welcome")

FIXTURE = InMemoryCorpus([WELCOME, CONTACT, INVOICES, REFUND_POLICY])


def ranked(retriever: KeywordRetriever, query: str, k: int = 3) -> list[tuple[str, float]]:
    return [(hit.path, hit.score) for hit in retriever.retrieve(query, FIXTURE, k=k)]


def test_each_field_contributes_its_weight_per_shared_word() -> None:
    # Q = {refund, money, back}
    # refund-policy: path {billing, refund, policy} 1 word × 2.0 = 2.0
    #                summary {how, refunds, are, paid, back, to, customers} 1 × 1.5 = 1.5
    #                alias "money back guarantee" 2 words (>= 2, so it counts) × 2.0 = 4.0
    #                content {refund, money, back, ...} 3 × 1.0 = 3.0
    #                related summary (invoices) {invoices, and, credit, notes, for, refunds} 0
    #                total 10.5
    # invoices:      content {refund} 1 × 1.0 = 1.0
    # contact:       alias "refund" shares 1 word only, ignored; content {refund} 1.0
    # index:         0, dropped
    assert ranked(KeywordRetriever(), "refund money back") == [
        ("billing/refund-policy.md", 10.5),
        ("billing/invoices.md", 1.0),
        ("support/contact.md", 1.0),
    ]


def test_related_entries_summaries_count_half() -> None:
    # Q = {credit, notes}
    # invoices:      summary 2 × 1.5 = 3.0
    # refund-policy: related summary (invoices) 2 × 0.5 = 1.0
    assert ranked(KeywordRetriever(), "credit notes") == [
        ("billing/invoices.md", 3.0),
        ("billing/refund-policy.md", 1.0),
    ]


def test_a_one_word_alias_never_counts() -> None:
    # Q = {refund}
    # refund-policy: path 2.0 + content 1.0 = 3.0 (the summary says "refunds", another word)
    # invoices:      content 1.0
    # contact:       its alias "refund" is the whole query, but one shared word does not count;
    #                content 1.0
    assert ranked(KeywordRetriever(), "refund", k=5) == [
        ("billing/refund-policy.md", 3.0),
        ("billing/invoices.md", 1.0),
        ("support/contact.md", 1.0),
    ]


def test_the_category_weight_multiplies_the_score_and_can_drop_a_hit() -> None:
    # refund-policy 10.5 × 2.0 = 21.0; invoices 1.0 × 2.0 = 2.0; contact 1.0 × 0.5 = 0.5 < 1.0
    retriever = KeywordRetriever(category_weights={"billing": 2.0, "support": 0.5})
    assert ranked(retriever, "refund money back") == [
        ("billing/refund-policy.md", 21.0),
        ("billing/invoices.md", 2.0),
    ]


def test_hits_under_the_minimum_score_are_dropped() -> None:
    assert ranked(KeywordRetriever(min_score=2.0), "refund money back") == [
        ("billing/refund-policy.md", 10.5)
    ]


def test_ties_are_ordered_by_path_and_k_limits_the_answer() -> None:
    assert ranked(KeywordRetriever(), "refund money back", k=2) == [
        ("billing/refund-policy.md", 10.5),
        ("billing/invoices.md", 1.0),
    ]
    assert ranked(KeywordRetriever(), "refund money back", k=0) == []


def test_only_the_first_500_characters_of_content_are_read() -> None:
    late = RetrievalEntry(path="late.md", category="", content="x" * 500 + " zebra")
    early = RetrievalEntry(path="early.md", category="", content="zebra " + "x" * 500)
    corpus = InMemoryCorpus([late, early])
    assert [(hit.path, hit.score) for hit in KeywordRetriever().retrieve("zebra", corpus)] == [
        ("early.md", 1.0)
    ]


def test_the_file_extension_is_not_a_path_word() -> None:
    corpus = InMemoryCorpus([RetrievalEntry(path="notes.md", category="", content="")])
    assert KeywordRetriever().retrieve("md", corpus) == []


def test_a_negative_k_is_refused() -> None:
    with pytest.raises(ValueError, match="k must be 0 or more"):
        KeywordRetriever().retrieve("refund", FIXTURE, k=-1)
