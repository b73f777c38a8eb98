"""DirectoryCorpus: every behaviour of CORPUS.md part B, one test each, on temporary trees."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path

import pytest
from mnemo_corpus import (
    AliasInfo,
    DirectoryCorpus,
    DuplicateAliasError,
    ExtraAliasesFileError,
    RetrievalEntry,
)

from .conftest import TreeWriter

LOGGER = "mnemo_corpus.directory"


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == LOGGER and record.levelno == logging.WARNING
    ]


# --- the root and the files -------------------------------------------------------------------


def test_a_root_that_does_not_exist_is_refused_at_construction(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="is not a directory"):
        DirectoryCorpus(tmp_path / "nowhere")


def test_a_root_that_is_a_file_is_refused_at_construction(tmp_path: Path) -> None:
    file = tmp_path / "notes.md"
    file.write_text("# Notes\n")
    with pytest.raises(ValueError, match="is not a directory"):
        DirectoryCorpus(file)


def test_files_are_read_in_sorted_path_order_with_root_relative_posix_keys(
    write_tree: TreeWriter,
) -> None:
    root = write_tree({"b.md": "b", "a/z.md": "z", "a/b/c.md": "c", "A.md": "upper"})
    corpus = DirectoryCorpus(root)
    assert [entry.path for entry in corpus.entries()] == ["A.md", "a/b/c.md", "a/z.md", "b.md"]


def test_the_category_is_the_first_path_segment_and_empty_at_the_root(
    write_tree: TreeWriter,
) -> None:
    root = write_tree({"top.md": "t", "guides/setup.md": "s", "guides/deep/more.md": "m"})
    corpus = DirectoryCorpus(root)
    assert {entry.path: entry.category for entry in corpus.entries()} == {
        "guides/deep/more.md": "guides",
        "guides/setup.md": "guides",
        "top.md": "",
    }


def test_the_glob_chooses_which_files_are_entries(write_tree: TreeWriter) -> None:
    root = write_tree({"a.md": "a", "b.txt": "b", "c/d.txt": "d"})
    assert [entry.path for entry in DirectoryCorpus(root).entries()] == ["a.md"]
    assert [entry.path for entry in DirectoryCorpus(root, glob="**/*.txt").entries()] == [
        "b.txt",
        "c/d.txt",
    ]


def test_a_file_linked_from_outside_the_root_is_skipped_with_a_warning(
    write_tree: TreeWriter, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = write_tree({"inside.md": "in"})
    outside = tmp_path / "secret.md"
    outside.write_text("outside the root")
    (root / "leak.md").symlink_to(outside)
    (root / "also-inside.md").symlink_to(root / "inside.md")

    corpus = DirectoryCorpus(root)

    with caplog.at_level(logging.WARNING, logger=LOGGER):
        paths = [entry.path for entry in corpus.entries()]
    assert paths == ["also-inside.md", "inside.md"]
    assert any("leak.md" in message and "leaves" in message for message in warnings_of(caplog))


def test_a_folder_linked_from_outside_the_root_is_skipped_with_a_warning(
    write_tree: TreeWriter, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = write_tree({"inside.md": "in"})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "private.md").write_text("private")
    (root / "linked").symlink_to(elsewhere, target_is_directory=True)

    corpus = DirectoryCorpus(root, glob="*/*.md")

    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert list(corpus.entries()) == []
    assert any("linked/private.md" in message for message in warnings_of(caplog))


def test_a_file_that_is_not_utf8_is_skipped_with_a_warning(
    write_tree: TreeWriter, caplog: pytest.LogCaptureFixture
) -> None:
    root = write_tree({"good.md": "fine"})
    (root / "bad.md").write_bytes(b"\xff\xfe\x00 not text")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert [entry.path for entry in DirectoryCorpus(root).entries()] == ["good.md"]
    assert any("bad.md" in message for message in warnings_of(caplog))


# --- front matter -----------------------------------------------------------------------------


def test_front_matter_supplies_aliases_and_name_and_the_whole_text_is_the_content(
    write_tree: TreeWriter,
) -> None:
    text = "---\nname: Refund policy\naliases: [money back, refund rules]\n---\n# Refunds\nBody\n"
    root = write_tree({"billing/refunds.md": text})
    entry = DirectoryCorpus(root).get("billing/refunds.md")
    assert entry is not None
    assert entry.content == text
    assert entry.aliases == ("money back", "refund rules")
    assert entry.metadata["name"] == "Refund policy"


def test_a_single_alias_may_be_written_as_a_string(write_tree: TreeWriter) -> None:
    root = write_tree({"a.md": "---\naliases: first steps\n---\nA\n"})
    entry = DirectoryCorpus(root).get("a.md")
    assert entry is not None
    assert entry.aliases == ("first steps",)


def test_malformed_front_matter_is_a_warning_and_the_file_is_still_an_entry(
    write_tree: TreeWriter, caplog: pytest.LogCaptureFixture
) -> None:
    text = "---\naliases: [unclosed\n---\n# Still here\n"
    root = write_tree({"broken.md": text, "list.md": "---\n- a\n- b\n---\nx\n"})
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        entries = DirectoryCorpus(root).path_index
    assert entries["broken.md"].aliases == ()
    assert entries["broken.md"].content == text
    assert entries["list.md"].aliases == ()
    messages = warnings_of(caplog)
    assert any("broken.md" in message and "not valid YAML" in message for message in messages)
    assert any("list.md" in message and "not a mapping" in message for message in messages)


# --- sidecars ---------------------------------------------------------------------------------


def test_summaries_and_cross_links_come_from_json_sidecars_relative_to_the_root(
    write_tree: TreeWriter,
) -> None:
    root = write_tree(
        {
            "a.md": "A",
            "b.md": "B",
            "meta/summaries.json": json.dumps({"a.md": "About A"}),
            "meta/links.json": json.dumps({"a.md": ["b.md", "missing.md"]}),
        }
    )
    corpus = DirectoryCorpus(
        root, summaries_file="meta/summaries.json", cross_links_file="meta/links.json"
    )
    entry = corpus.get("a.md")
    assert entry is not None
    assert entry.summary == "About A"
    assert entry.related == ("b.md", "missing.md")  # as written, the missing one included
    assert corpus.get("b.md") == RetrievalEntry(path="b.md", category="", content="B")


def test_a_missing_summaries_file_is_a_warning_not_a_failure(
    write_tree: TreeWriter, caplog: pytest.LogCaptureFixture
) -> None:
    root = write_tree({"a.md": "A"})
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        entries = DirectoryCorpus(root, summaries_file="summaries.json").entries()
    assert [entry.summary for entry in entries] == [None]
    assert any("summaries.json" in message for message in warnings_of(caplog))


def test_a_summaries_file_that_is_not_json_is_a_warning_not_a_failure(
    write_tree: TreeWriter, caplog: pytest.LogCaptureFixture
) -> None:
    root = write_tree({"a.md": "A", "summaries.json": "{not json"})
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        entries = DirectoryCorpus(root, summaries_file="summaries.json").entries()
    assert [entry.summary for entry in entries] == [None]
    assert any("unreadable" in message for message in warnings_of(caplog))


def test_a_summaries_file_holding_a_list_is_a_warning_not_a_failure(
    write_tree: TreeWriter, caplog: pytest.LogCaptureFixture
) -> None:
    root = write_tree({"a.md": "A", "summaries.json": '["a.md"]'})
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        entries = DirectoryCorpus(root, summaries_file="summaries.json").entries()
    assert [entry.summary for entry in entries] == [None]
    assert any("not a JSON object" in message for message in warnings_of(caplog))


def test_a_summary_that_is_not_text_is_ignored_with_a_warning(
    write_tree: TreeWriter, caplog: pytest.LogCaptureFixture
) -> None:
    root = write_tree(
        {"a.md": "A", "b.md": "B", "summaries.json": json.dumps({"a.md": 3, "b.md": "About B"})}
    )
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        index = DirectoryCorpus(root, summaries_file="summaries.json").path_index
    assert (index["a.md"].summary, index["b.md"].summary) == (None, "About B")
    assert any("'a.md'" in message for message in warnings_of(caplog))


def test_a_malformed_cross_links_file_is_a_warning_not_a_failure(
    write_tree: TreeWriter, caplog: pytest.LogCaptureFixture
) -> None:
    root = write_tree(
        {"a.md": "A", "b.md": "B", "links.json": json.dumps({"a.md": "b.md", "b.md": ["a.md", 7]})}
    )
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        index = DirectoryCorpus(root, cross_links_file="links.json").path_index
    assert index["a.md"].related == ()
    assert index["b.md"].related == ("a.md",)
    assert len(warnings_of(caplog)) == 2


def test_a_missing_cross_links_file_is_a_warning_not_a_failure(
    write_tree: TreeWriter, caplog: pytest.LogCaptureFixture
) -> None:
    root = write_tree({"a.md": "A"})
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        entries = DirectoryCorpus(root, cross_links_file="links.json").entries()
    assert [entry.related for entry in entries] == [()]
    assert any("links.json" in message for message in warnings_of(caplog))


def test_extra_summaries_override_the_summaries_file(write_tree: TreeWriter) -> None:
    root = write_tree(
        {"a.md": "A", "b.md": "B", "summaries.json": json.dumps({"a.md": "old", "b.md": "kept"})}
    )
    corpus = DirectoryCorpus(root, summaries_file="summaries.json", extra_summaries={"a.md": "new"})
    assert {entry.path: entry.summary for entry in corpus.entries()} == {
        "a.md": "new",
        "b.md": "kept",
    }


# --- extra aliases ----------------------------------------------------------------------------


def test_extra_aliases_are_appended_to_the_front_matter_aliases(write_tree: TreeWriter) -> None:
    root = write_tree({"a.md": "---\naliases: [front one]\n---\nA\n", "b.md": "B"})
    corpus = DirectoryCorpus(root, extra_aliases={"a.md": ["inline one"], "b.md": ["bee"]})
    assert {entry.path: entry.aliases for entry in corpus.entries()} == {
        "a.md": ("front one", "inline one"),
        "b.md": ("bee",),
    }


def test_the_extra_aliases_file_appends_aliases_and_ignores_keys_starting_with_underscore(
    write_tree: TreeWriter,
) -> None:
    aliases = {"_comment": "aliases for the guides", "a.md": ["from file"]}
    root = write_tree({"a.md": "---\naliases: [front]\n---\n", "aliases.json": json.dumps(aliases)})
    corpus = DirectoryCorpus(root, extra_aliases_file="aliases.json")
    assert corpus.alias_index.keys() == {"front", "from file"}


def test_a_missing_extra_aliases_file_fails_at_construction(write_tree: TreeWriter) -> None:
    root = write_tree({"a.md": "A"})
    with pytest.raises(FileNotFoundError, match=r"aliases\.json"):
        DirectoryCorpus(root, extra_aliases_file="aliases.json")


def test_an_extra_aliases_file_that_is_not_json_fails_at_construction_naming_the_file(
    write_tree: TreeWriter,
) -> None:
    root = write_tree({"a.md": "A", "aliases.json": "{'a.md': ['x']}"})
    with pytest.raises(ValueError, match=r"aliases\.json.*not valid JSON") as raised:
        DirectoryCorpus(root, extra_aliases_file="aliases.json")
    assert isinstance(raised.value, ExtraAliasesFileError)
    assert raised.value.file == str(root / "aliases.json")


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('["a.md"]', "top level is a list"),
        ('{"a.md": "x"}', "'a.md' is not a list of strings"),
        ('{"a.md": ["x", 1]}', "'a.md' is not a list of strings"),
    ],
)
def test_an_extra_aliases_file_of_the_wrong_shape_fails_at_construction_naming_the_file(
    write_tree: TreeWriter, content: str, problem: str
) -> None:
    root = write_tree({"a.md": "A", "aliases.json": content})
    with pytest.raises(ValueError, match=r"aliases\.json") as raised:
        DirectoryCorpus(root, extra_aliases_file="aliases.json")
    assert problem in str(raised.value)


def test_an_inline_extra_alias_entry_replaces_the_files_list_for_that_path(
    write_tree: TreeWriter,
) -> None:
    aliases = {"a.md": ["file a"], "b.md": ["file b"]}
    root = write_tree({"a.md": "A", "b.md": "B", "aliases.json": json.dumps(aliases)})
    corpus = DirectoryCorpus(
        root, extra_aliases_file="aliases.json", extra_aliases={"a.md": ["inline a"]}
    )
    assert {entry.path: entry.aliases for entry in corpus.entries()} == {
        "a.md": ("inline a",),
        "b.md": ("file b",),
    }


def test_an_inline_alias_list_written_as_a_bare_string_is_refused(write_tree: TreeWriter) -> None:
    root = write_tree({"a.md": "A"})
    with pytest.raises(TypeError, match="not a string"):
        DirectoryCorpus(root, extra_aliases={"a.md": "oops"})


# --- alias uniqueness -------------------------------------------------------------------------


def test_aliases_differing_only_in_case_are_different_aliases(write_tree: TreeWriter) -> None:
    root = write_tree(
        {"a.md": "---\naliases: [Setup]\n---\n", "b.md": "---\naliases: [setup]\n---\n"}
    )
    index = DirectoryCorpus(root).alias_index
    assert (index["Setup"].template_path, index["setup"].template_path) == ("a.md", "b.md")


def test_an_alias_owned_by_two_files_raises_on_first_use_naming_both_paths(
    write_tree: TreeWriter,
) -> None:
    root = write_tree(
        {"z.md": "---\naliases: [setup guide]\n---\n", "a.md": "---\naliases: [setup guide]\n---\n"}
    )
    corpus = DirectoryCorpus(root)  # construction does not scan
    with pytest.raises(DuplicateAliasError) as raised:
        corpus.entries()
    assert (raised.value.alias, raised.value.first_path, raised.value.second_path) == (
        "setup guide",
        "a.md",
        "z.md",
    )


def test_an_alias_declared_twice_in_one_markdown_file_is_kept_once(
    write_tree: TreeWriter,
) -> None:
    root = write_tree({"a.md": "---\naliases: [first steps, first steps]\n---\n"})
    corpus = DirectoryCorpus(root, extra_aliases={"a.md": ["first steps"]})
    entry = corpus.get("a.md")
    assert entry is not None
    assert entry.aliases == ("first steps",)


def test_an_alias_declared_twice_in_one_extra_aliases_file_for_two_paths_raises(
    write_tree: TreeWriter,
) -> None:
    aliases = {"a.md": ["shared name"], "b.md": ["shared name"]}
    root = write_tree({"a.md": "A", "b.md": "B", "aliases.json": json.dumps(aliases)})
    corpus = DirectoryCorpus(root, extra_aliases_file="aliases.json")
    with pytest.raises(DuplicateAliasError) as raised:
        corpus.alias_index  # noqa: B018  (first use is the point of the test)
    assert (raised.value.first_path, raised.value.second_path) == ("a.md", "b.md")


def test_an_extra_alias_colliding_with_another_files_front_matter_raises(
    write_tree: TreeWriter,
) -> None:
    root = write_tree({"a.md": "---\naliases: [the manual]\n---\n", "b.md": "B"})
    corpus = DirectoryCorpus(root, extra_aliases={"b.md": ["the manual"]})
    with pytest.raises(DuplicateAliasError, match=r"'a\.md' and 'b\.md'"):
        corpus.get("a.md")


# --- the index views --------------------------------------------------------------------------


def test_the_alias_index_leads_to_the_path_and_the_entrys_name(write_tree: TreeWriter) -> None:
    root = write_tree(
        {
            "named.md": "---\nname: The named one\naliases: [by name]\n---\n# Heading\n",
            "headed.md": "---\naliases: [by heading]\n---\n# The heading\n",
            "bare.md": "---\naliases: [by stem]\n---\nno heading\n",
        }
    )
    assert DirectoryCorpus(root).alias_index == {
        "by name": AliasInfo("by name", "named.md", "The named one"),
        "by heading": AliasInfo("by heading", "headed.md", "The heading"),
        "by stem": AliasInfo("by stem", "bare.md", "bare"),
    }


def test_the_index_views_are_copies(write_tree: TreeWriter) -> None:
    root = write_tree({"a.md": "---\naliases: [ay]\n---\n"})
    corpus = DirectoryCorpus(root)
    corpus.path_index.clear()
    corpus.alias_index.clear()
    corpus.path_index["b.md"] = RetrievalEntry("b.md", "", "B")
    assert list(corpus.path_index) == ["a.md"]
    assert list(corpus.alias_index) == ["ay"]
    assert corpus.get("b.md") is None


def test_get_answers_none_for_an_unknown_path(write_tree: TreeWriter) -> None:
    assert DirectoryCorpus(write_tree({"a.md": "A"})).get("b.md") is None


# --- cache ------------------------------------------------------------------------------------


def test_with_the_cache_on_the_folder_is_scanned_once_on_first_use(write_tree: TreeWriter) -> None:
    root = write_tree({"a.md": "A"})
    corpus = DirectoryCorpus(root)
    assert [entry.path for entry in corpus.entries()] == ["a.md"]
    write_tree({"b.md": "B"})
    assert [entry.path for entry in corpus.entries()] == ["a.md"]
    assert corpus.get("b.md") is None


def test_with_the_cache_off_a_new_file_is_picked_up_on_the_next_access(
    write_tree: TreeWriter,
) -> None:
    root = write_tree({"a.md": "A"})
    corpus = DirectoryCorpus(root, cache=False)
    version_before = corpus.version
    assert [entry.path for entry in corpus.entries()] == ["a.md"]
    write_tree({"b.md": "---\naliases: [bee sting]\n---\nB"})
    assert [entry.path for entry in corpus.entries()] == ["a.md", "b.md"]
    assert corpus.get("b.md") is not None
    assert "bee sting" in corpus.alias_index
    assert corpus.version != version_before


def test_the_cache_is_built_on_first_use_not_at_construction(write_tree: TreeWriter) -> None:
    root = write_tree({"a.md": "A"})
    corpus = DirectoryCorpus(root)
    write_tree({"b.md": "B"})
    assert [entry.path for entry in corpus.entries()] == ["a.md", "b.md"]


# --- name and version -------------------------------------------------------------------------


def test_the_name_is_directory_and_the_root_folder_name(write_tree: TreeWriter) -> None:
    assert DirectoryCorpus(write_tree({"a.md": "A"})).name == "directory:docs"


def test_the_name_uses_the_real_folder_name_for_a_relative_root(
    write_tree: TreeWriter, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_tree({"a.md": "A"})
    monkeypatch.chdir(root)
    assert DirectoryCorpus(".").name == "directory:docs"


def test_the_version_is_sha256_over_paths_and_contents_in_path_order(
    write_tree: TreeWriter,
) -> None:
    root = write_tree({"b/c.md": "second", "a.md": "first ✓"})
    expected = hashlib.sha256(
        b"a.md" + b"\x00" + "first ✓".encode() + b"\x00\x00"
        b"b/c.md" + b"\x00" + b"second" + b"\x00\x00"
    ).hexdigest()[:16]
    assert DirectoryCorpus(root).version == expected


def test_the_version_is_unchanged_by_summaries_links_and_extra_aliases(
    write_tree: TreeWriter,
) -> None:
    root = write_tree(
        {
            "a.md": "A",
            "b.md": "B",
            "summaries.json": json.dumps({"a.md": "About A"}),
            "links.json": json.dumps({"a.md": ["b.md"]}),
        }
    )
    plain = DirectoryCorpus(root).version
    decorated = DirectoryCorpus(
        root,
        summaries_file="summaries.json",
        cross_links_file="links.json",
        extra_summaries={"b.md": "About B"},
        extra_aliases={"a.md": ["the letter a"]},
    ).version
    assert decorated == plain


def test_the_version_changes_when_a_files_content_changes(write_tree: TreeWriter) -> None:
    root = write_tree({"a.md": "A"})
    before = DirectoryCorpus(root).version
    write_tree({"a.md": "A, edited"})
    assert DirectoryCorpus(root).version != before


# --- the one-word alias warning ---------------------------------------------------------------


def _one_word_alias_tree(write_tree: TreeWriter) -> Path:
    return write_tree(
        {
            "a.md": "---\naliases: [alpha]\n---\n",
            "b.md": "---\naliases: [beta]\n---\n",
            "c.md": "---\naliases: [gamma, gamma ray burst]\n---\n",
            "d.md": "---\naliases: [delta]\n---\n",
        }
    )


def test_many_one_word_aliases_log_one_warning(
    write_tree: TreeWriter, caplog: pytest.LogCaptureFixture
) -> None:
    corpus = DirectoryCorpus(_one_word_alias_tree(write_tree), cache=False)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        corpus.entries()
        corpus.entries()
    messages = warnings_of(caplog)
    assert len(messages) == 1
    assert "3 of 4 aliased entries have only one-word aliases" in messages[0]


def test_the_one_word_alias_warning_can_be_turned_off(
    write_tree: TreeWriter, caplog: pytest.LogCaptureFixture
) -> None:
    corpus = DirectoryCorpus(_one_word_alias_tree(write_tree), warn_alias_overlap=False)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        corpus.entries()
    assert warnings_of(caplog) == []


def test_a_few_multi_word_aliases_log_no_warning(
    write_tree: TreeWriter, caplog: pytest.LogCaptureFixture
) -> None:
    root = write_tree(
        {
            "a.md": "---\naliases: [alpha male]\n---\n",
            "b.md": "---\naliases: [beta test]\n---\n",
            "c.md": "---\naliases: [gamma]\n---\n",
        }
    )
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        DirectoryCorpus(root).entries()
    assert warnings_of(caplog) == []


def test_turning_the_warning_off_never_suppresses_a_duplicate_alias(write_tree: TreeWriter) -> None:
    root = write_tree({"a.md": "---\naliases: [x]\n---\n", "b.md": "---\naliases: [x]\n---\n"})
    with pytest.raises(DuplicateAliasError):
        DirectoryCorpus(root, warn_alias_overlap=False).entries()


def test_paths_given_to_sidecars_but_missing_from_the_folder_are_reported(
    write_tree: TreeWriter, caplog: pytest.LogCaptureFixture
) -> None:
    root = write_tree({"a.md": "A"})
    corpus = DirectoryCorpus(root, extra_aliases={"gone.md": ["ghost town"]})
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert corpus.alias_index == {}
    assert any("gone.md" in message for message in warnings_of(caplog))


def test_the_root_may_be_given_as_a_string(write_tree: TreeWriter) -> None:
    root = write_tree({"a.md": "A"})
    assert DirectoryCorpus(os.fspath(root)).get("a.md") is not None
