"""The IR: frozen values, an exact JSON round trip, strict reading, per-corpus fingerprints."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mnemo_axon import (
    AxonSource,
    AxonType,
    ColumnDecl,
    ColumnDefault,
    CorpusDecl,
    CorpusKind,
    DefaultKind,
    Deployment,
    DocumentDecl,
    DocumentOrigin,
    DocumentRef,
    DocumentsStoreMapping,
    IrFormatError,
    McpSource,
    RelationDecl,
    RelationsStoreMapping,
    StoreDecl,
    compile_deployment,
    load_deployment,
)

from .declarations import seed_documents_source, seed_sources


def seed_deployment() -> Deployment:
    return compile_deployment([*seed_sources(), seed_documents_source()])


def test_the_seed_deployment_round_trips_through_json() -> None:
    deployment = seed_deployment()
    assert Deployment.from_json(deployment.to_json()) == deployment
    assert Deployment.from_json(deployment.to_json(indent=2)) == deployment


def test_ir_values_are_frozen() -> None:
    deployment = seed_deployment()
    with pytest.raises(dataclasses.FrozenInstanceError):
        deployment.corpora[0].name = "Other"  # type: ignore[misc]  # proving it is refused


names = st.text(min_size=1, max_size=12)
optional_text = st.none() | st.text(max_size=30)
columns = st.builds(
    ColumnDecl,
    name=names,
    type=st.sampled_from(AxonType),
    primary_key=st.booleans(),
    unique=st.booleans(),
    not_null=st.booleans(),
    default=st.none()
    | st.builds(ColumnDefault, kind=st.sampled_from(DefaultKind), literal=optional_text),
)
stores = st.builds(StoreDecl, name=names, columns=st.lists(columns, max_size=4).map(tuple))
documents = st.builds(
    DocumentDecl, name=names, title=optional_text, source=optional_text, content=optional_text
)
refs = st.builds(
    DocumentRef, name=names, origin=st.sampled_from(DocumentOrigin), path=st.none() | names
)
relations = st.builds(
    RelationDecl,
    etype=names,
    from_document=names,
    to_document=names,
    weight=st.floats(min_value=0, max_value=1, exclude_min=True),
)
corpora = st.builds(
    CorpusDecl,
    name=names,
    kind=st.sampled_from(CorpusKind),
    documents=st.lists(refs, max_size=3).map(tuple),
    relations=st.lists(relations, max_size=3).map(tuple),
    adaptive=st.booleans(),
    mcp=st.builds(McpSource, server=names, resource_uri=names),
    documents_store=st.builds(
        DocumentsStoreMapping,
        store=names,
        id_column=names,
        title_column=names,
        body_column=st.none() | names,
    ),
    relations_store=st.builds(
        RelationsStoreMapping,
        store=names,
        from_column=names,
        to_column=names,
        etype_column=names,
        weight_column=names,
    ),
)
deployments = st.builds(
    Deployment,
    stores=st.lists(stores, max_size=3).map(tuple),
    documents=st.lists(documents, max_size=3).map(tuple),
    corpora=st.lists(corpora, max_size=3).map(tuple),
)


@given(deployments)
def test_any_deployment_round_trips_through_json(deployment: Deployment) -> None:
    assert Deployment.from_json(deployment.to_json()) == deployment


def test_a_fingerprint_is_sixteen_hex_digits_of_the_canonical_definition() -> None:
    deployment = seed_deployment()
    for corpus in deployment.corpora:
        assert re.fullmatch(r"[0-9a-f]{16}", deployment.fingerprint(corpus.name))


def test_fingerprints_ignore_layout_comments_and_unrelated_declarations() -> None:
    compact = load_deployment('document a { title: "A" }\ncorpus C { documents: [a] }')
    spread = load_deployment(
        "# the same corpus, written differently\n"
        'corpus Other from mcp("s", "u")\n'
        "corpus C {\n    documents: [ a ]\n}\n\n"
        'document a {\n  title: "A"\n}\n'
    )
    assert compact.fingerprint("C") == spread.fingerprint("C")


def test_fingerprints_change_when_what_the_corpus_reads_changes() -> None:
    base = 'document a { title: "A" }\ndocument b { title: "B" }\n'
    graph = "corpus C { documents: [a, b] relations: [cite(a, b, %s)] }"
    original = load_deployment(base + graph % "0.5").fingerprint("C")
    assert load_deployment(base + graph % "0.6").fingerprint("C") != original
    retitled = base.replace('"A"', '"A, revised"')
    assert load_deployment(retitled + graph % "0.5").fingerprint("C") != original

    stores = (
        "axonstore D { schema { id: Uuid title: Text } }\n"
        "axonstore E { schema { f: Uuid t: Uuid k: Text w: %s } }\n"
        "corpus G from axonstore { documents: D(id, title) relations: E(f, t, k, w) }"
    )
    as_float = load_deployment(stores % "Float").fingerprint("G")
    assert load_deployment(stores % "Double").fingerprint("G") != as_float


def test_reading_json_that_is_not_the_ir_names_the_offending_path() -> None:
    good = seed_deployment().to_dict()

    def broken(change: str) -> str:
        data = json.loads(json.dumps(good))
        if change == "format":
            data["format"] = "something/else"
        elif change == "missing":
            del data["corpora"][0]["kind"]
        elif change == "unknown":
            data["stores"][0]["columns"][0]["colour"] = "red"
        elif change == "type":
            data["stores"][0]["columns"][0]["type"] = "Varchar"
        elif change == "weight":
            data["corpora"][2]["relations"][0]["weight"] = "heavy"
        return json.dumps(data)

    expectations = {
        "format": r"\$\.format: expected 'mnemo\.axon\.ir/1'",
        "missing": r"\$\.corpora\[0\]: missing field 'kind'",
        "unknown": r"\$\.stores\[0\]\.columns\[0\]: unknown field\(s\) 'colour'",
        "type": r"\$\.stores\[0\]\.columns\[0\]\.type: expected one of Uuid, ",
        "weight": r"\$\.corpora\[2\]\.relations\[0\]\.weight: expected a number",
    }
    for change, pattern in expectations.items():
        with pytest.raises(IrFormatError, match=pattern):
            Deployment.from_json(broken(change))
    with pytest.raises(IrFormatError, match="not JSON"):
        Deployment.from_json("{")


def test_a_kind_without_its_fields_is_not_valid_ir() -> None:
    data = seed_deployment().to_dict()
    data["corpora"][1]["mcp"] = None
    with pytest.raises(IrFormatError, match=r"an mcp corpus needs 'mcp'"):
        Deployment.from_dict(data)


def test_the_corpus_definition_is_self_contained() -> None:
    deployment = compile_deployment(
        [*seed_sources(), seed_documents_source(), AxonSource("x.axon", "")]
    )
    definition = deployment.corpus_definition("LtmGraph")
    assert [store["name"] for store in definition["stores"]] == ["LtmSummaries", "LtmEdges"]
    assert definition["documents"] == []
    policy = deployment.corpus_definition("PolicyDocs")
    assert [d["name"] for d in policy["documents"]] == [
        "PrivacyPolicy",
        "TermsOfService",
        "RefundPolicy",
    ]
    with pytest.raises(KeyError):
        deployment.corpus_definition("Nope")


def test_a_weight_no_float_can_hold_is_a_format_error_not_a_crash() -> None:
    data = seed_deployment().to_dict()
    data["corpora"][2]["relations"][0]["weight"] = 10**5000
    with pytest.raises(IrFormatError, match=r"weight: expected a number, got an integer of about"):
        Deployment.from_dict(data)
