"""Reading markdown: front matter, the title, wiki-links outside code."""

from __future__ import annotations

from mnemo_corpus import RetrievalEntry
from mnemo_corpus.markdown import entry_title, first_heading, read_front_matter, wiki_links


def test_front_matter_is_parsed_and_the_body_starts_after_the_closing_fence() -> None:
    text = "---\nname: X\n---\n# Body\n"
    front_matter = read_front_matter(text)
    assert front_matter.fields == {"name": "X"}
    assert text[front_matter.body_start :] == "# Body\n"
    assert front_matter.problem is None


def test_a_file_without_front_matter_has_none() -> None:
    front_matter = read_front_matter("# Title\n---\nname: not front matter\n---\n")
    assert (front_matter.fields, front_matter.body_start, front_matter.problem) == ({}, 0, None)


def test_front_matter_that_is_never_closed_is_reported() -> None:
    assert read_front_matter("---\nname: X\n# Title\n").problem == (
        "front matter opened with '---' is never closed"
    )


def test_the_first_heading_outside_fenced_code_is_the_heading() -> None:
    text = "intro\n```bash\n# not a heading\n```\n## Real heading ##\n# Later\n"
    assert first_heading(text) == "Real heading"


def test_the_title_prefers_the_name_then_the_heading_then_the_stem() -> None:
    named = RetrievalEntry("a/named.md", "a", "---\nname: Given name\n---\n# Heading\n")
    headed = RetrievalEntry("a/headed.md", "a", "---\naliases: [x]\n---\n# Heading\n")
    bare = RetrievalEntry("a/bare-file.md", "a", "plain text")
    from_metadata = RetrievalEntry("m.md", "", "# Heading", metadata={"name": "Meta name"})
    assert [entry_title(entry) for entry in (named, headed, bare, from_metadata)] == [
        "Given name",
        "Heading",
        "bare-file",
        "Meta name",
    ]


def test_wiki_links_are_found_in_text_order_with_labels_removed() -> None:
    text = "See [[where filter]] and [[tenants | the tenancy page]], then [[where filter]].\n"
    assert wiki_links(text) == ["where filter", "tenants", "where filter"]


def test_wiki_links_inside_code_and_front_matter_are_examples_not_links() -> None:
    text = (
        "---\ndescription: '[[not a link]]'\n---\n"
        "Write `[[alias]]` to cite.\n"
        "```\n[[inside a fence]]\n```\n"
        "A real one: [[real]].\n"
    )
    assert wiki_links(text) == ["real"]
