"""A store corpus's gateway tags from the values of its documents store's tag columns
(`mnemo_store.document_tags`): categories first, then tags, each once, other JSON types skipped."""

from __future__ import annotations

from mnemo_axon import AxonType, load_deployment
from mnemo_store import StoreCorpus
from mnemo_store.document_tags import tag_columns, tags_of

JSON_TAGS = {"tags": AxonType.JSON}


def test_category_comes_first_then_tags_then_metadata_tags_each_once() -> None:
    values = {
        "category": "billing",
        "tags": ["fees", "billing", " overdraft "],
        "metadata": {"category": "faq", "tags": ["fees", "help"]},
    }
    types = {"category": AxonType.TEXT, **JSON_TAGS, "metadata": AxonType.JSON}
    assert tags_of(values, types) == ("billing", "faq", "fees", "overdraft", "help")


def test_a_text_tags_column_is_split_at_commas_and_a_json_string_is_one_tag() -> None:
    assert tags_of({"tags": "a, b,,c "}, {"tags": AxonType.TEXT}) == ("a", "b", "c")
    assert tags_of({"tags": "a, b"}, JSON_TAGS) == ("a, b",)


def test_nulls_numbers_in_a_list_and_objects_are_not_tags() -> None:
    assert tags_of({"category": None, "tags": None}, JSON_TAGS) == ()
    assert tags_of({"tags": [1, None, {"x": 1}, "kept"]}, JSON_TAGS) == ("kept",)
    assert tags_of({"tags": {"not": "a list"}}, JSON_TAGS) == ()
    assert tags_of({"metadata": ["not", "an", "object"]}, {"metadata": AxonType.JSON}) == ()
    assert tags_of({"category": 3}, {"category": AxonType.INTEGER}) == ("3",)


def test_only_the_declared_tag_columns_are_read_and_metadata_only_as_json() -> None:
    deployment = load_deployment(
        """
axonstore D { schema { id: Text primary_key  title: Text  category: Text  metadata: Text } }
axonstore E { schema { f: Text  t: Text  e: Text  w: Float } }
corpus C from axonstore { documents: D(id, title) relations: E(f, t, e, w) }
""",
        "tags.axon",
    )
    corpus = StoreCorpus.from_deployment(deployment, "C")
    assert [column.name for column in tag_columns(corpus)] == ["category"]
