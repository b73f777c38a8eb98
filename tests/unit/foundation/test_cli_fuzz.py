"""Every `mnemo` command driven with generated arguments and files: whatever it is given, it ends
with exit status 0, 1 or 2 and never a traceback (README, "Exit codes").

The owner-role commands point at a port where nothing listens, so they fail fast (exit 1) without a
database; everything else runs in this process.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mnemo_cli.main import main

HOSTILE = [
    "",
    " ",
    "-",
    "--",
    "-1",
    "0",
    "1e999",
    "nan",
    "inf",
    "9" * 5001,
    "1" * 401,
    "\n",
    "\x1b[31m",
    "\udcff",  # a byte that is not UTF-8, as Python decodes it from argv
    "\ud800",
    "' OR 1=1 --",
    "${x}",
    "%",
    "a" * 300,
    "ünïcødé",
    "{}",
    "[]",
]
texts = st.sampled_from(HOSTILE) | st.text(
    st.characters(exclude_characters="\x00", codec="utf-8"), max_size=20
)
numbers = st.sampled_from(["0", "1", "-1", "0.5", "1e-3", ".5", "2", "99999999999999999999", "x"])

GRAPH = {
    "documents": [{"id": "a", "title": "alpha"}, {"id": "b", "title": "beta", "depth": 1}],
    "edges": [{"from": "a", "to": "b", "etype": "cite", "weight": 0.5}],
}
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=10,
)


@st.composite
def graph_texts(draw: st.DrawFn) -> str:
    kind = draw(st.integers(0, 6))
    if kind == 0:
        return json.dumps(GRAPH)
    if kind == 1:  # one field of a good graph replaced by anything
        graph = json.loads(json.dumps(GRAPH))
        section = draw(st.sampled_from(["documents", "edges"]))
        entry = graph[section][0]
        entry[draw(st.sampled_from([*entry, "extra"]))] = draw(json_values)
        return json.dumps(graph)
    if kind == 2:
        return json.dumps(draw(json_values))
    if kind == 3:  # a huge number or deep nesting where a weight goes
        weight = draw(
            st.sampled_from(
                ["1" * 401, "9" * 5001, "1e999999", "-1e999", "[" * 100_000 + "]" * 100_000]
            )
        )
        return json.dumps(GRAPH).replace("0.5", weight)
    if kind == 4:
        return json.dumps(GRAPH).replace('"a"', '"\\ud800"')
    if kind == 5:
        return draw(st.text(max_size=40))
    return "{" * 50_000


AXON_WORDS = [
    "axonstore",
    "corpus",
    "document",
    "from",
    "axonstore",
    "schema",
    "documents",
    "relations",
    "adaptive",
    "true",
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ":",
    ",",
    "Text",
    "Uuid",
    "BigInt",
    "Float",
    "primary_key",
    "default",
    "cite",
    "0.5",
    "1e-3",
    ".5",
    "9" * 500,
    "Docs",
    "Edges",
    "C",
    "id",
    "title",
    '"s"',
    "axon_row_id",
    "\x00",
    "é",
]


@st.composite
def axon_texts(draw: st.DrawFn) -> str:
    if draw(st.booleans()):
        return (
            "axonstore Docs { schema { id: Text primary_key title: Text } }\n"
            "axonstore Edges { schema { f: Text t: Text k: Text w: Float } }\n"
            "corpus C from axonstore { documents: Docs(id, title) relations: Edges(f, t, k, w) }\n"
        ).replace(draw(st.sampled_from(["Docs", "Text", "w", "title", "{"])), draw(texts), 1)
    return " ".join(draw(st.lists(st.sampled_from(AXON_WORDS), max_size=30)))


@st.composite
def invocations(draw: st.DrawFn, folder: Path) -> list[str]:
    def write(name: str, content: str | bytes) -> str:
        path = folder / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8", errors="surrogatepass")
        return str(path)

    def maybe(*options: list[str]) -> list[str]:
        return [arg for option in options if draw(st.booleans()) for arg in option]

    command = draw(
        st.sampled_from(
            ["check", "apply", "explain", "epr", "navigate", "ingest", "tenant", "corpus", "junk"]
        )
    )
    graph = write("graph.json", draw(graph_texts()))
    axon = write("d.axon", draw(axon_texts() | st.binary(max_size=20).map(bytes)))
    (folder / "docs").mkdir(exist_ok=True)
    write("docs/a.md", draw(st.text(max_size=40)))
    write("docs/side.json", draw(graph_texts()))
    if command == "check":
        return ["check", axon, *maybe(["--json"]), *maybe([draw(texts)])]
    if command == "apply":
        return ["apply", axon, *maybe(["--dry-run"], ["--gateway-url", draw(texts)])]
    if command == "explain":
        return [
            "explain-where",
            draw(texts | st.sampled_from(["a = '${x}'", "a LIKE '%${x}%'", "a > 1", "a = NULL"])),
            "--columns",
            draw(st.sampled_from(["a:Text", "a:Integer", "a:Json", "a:BigInt", "a:Uuid"]) | texts),
            *maybe(
                ["--params", draw(st.sampled_from(['{"x": 1}', '{"x": "1e999999"}']) | texts)],
                ["--first-param", draw(numbers)],
                ["--qualifier", draw(texts)],
                ["--json"],
            ),
        ]
    if command == "epr":
        return [
            "graph",
            "epr",
            *draw(st.sampled_from([[graph], ["--dir", str(folder / "docs")], [draw(texts)]])),
            *maybe(["--damping", draw(numbers)], ["--lambda", draw(numbers)]),
        ]
    if command == "navigate":
        return [
            "graph",
            "navigate",
            *draw(st.sampled_from([[graph], ["--dir", str(folder / "docs")], [draw(texts)]])),
            "--query",
            draw(texts),
            *maybe(
                ["--from", draw(texts)],
                ["--budget", draw(numbers)],
                ["--mode", draw(st.sampled_from(["mdn", "axon", "x"]))],
                ["--direction", draw(st.sampled_from(["out", "both", "x"]))],
            ),
        ]
    if command == "ingest":
        return [
            "ingest-dir",
            draw(st.sampled_from([str(folder / "docs"), str(folder / "nope"), draw(texts)])),
            "--corpus",
            draw(texts | st.just("Handbook")),
            "--tenant",
            draw(texts | st.just("4b1c0b8e-35d5-4a5f-9c69-0d3f7fd0a5b8")),
            *maybe(
                ["--dry-run"],
                ["--summaries-file", draw(st.sampled_from(["side.json", "a.md", "nope"]))],
                ["--link-weight", draw(numbers)],
                ["--glob", draw(texts)],
            ),
        ]
    if command == "tenant":
        return draw(
            st.sampled_from([["tenant", "create", draw(texts)], ["tenant", "list", "--json"]])
        )
    if command == "corpus":
        return draw(
            st.sampled_from(
                [["corpus", "list"], ["corpus", "publish", draw(texts)], ["corpus", "deprecate"]]
            )
        )
    return draw(st.lists(texts, max_size=4))


@pytest.fixture(autouse=True)
def _nothing_listens(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # a folder argument "" or "." is this empty one, not the checkout
    monkeypatch.setenv("MNEMO_OWNER_DATABASE_URL", "postgresql://o:p@127.0.0.1:1/nothing")
    monkeypatch.setenv("MNEMO_CONNECT_TIMEOUT", "2")


@settings(max_examples=400, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_command_ends_with_exit_0_1_or_2_and_never_a_traceback(
    data: st.DataObject, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = data.draw(invocations(tmp_path))
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse: usage errors (2) and --help (0)
        code = exit_.code if isinstance(exit_.code, int) else 2
    captured = capsys.readouterr()
    assert code in (0, 1, 2), (argv, captured.err[-500:])
    assert "Traceback" not in captured.err
    if code != 0:
        assert captured.err.strip(), argv  # a failure always says why


def _graph_file(folder: Path, name: str, weight: str = "0.5", first_id: str = '"a"') -> str:
    path = folder / f"{name}.json"
    path.write_text(json.dumps(GRAPH).replace("0.5", weight).replace('"a"', first_id))
    return str(path)


@pytest.mark.parametrize(
    ("case", "expected_code", "message"),
    [
        ("params-5000-digits", 2, "--params holds an integer of 5000 digits"),
        ("params-20k-deep", 2, "--params is nested too deeply to read"),
        ("weight-401-digits", 0, "1 edge(s) skipped (0 unknown endpoint, 0 unknown type, 1 non"),
        ("weight-5001-digits", 2, "holds an integer of 5001 digits"),
        ("weight-100k-deep", 2, "is nested too deeply to read"),
        ("id-lone-surrogate", 0, ""),
        ("empty-query", 2, "--query is empty"),
        ("first-param-0", 2, "--first-param: expected a whole number from 1 to 65535"),
        ("missing-summaries", 2, "--summaries-file missing.json: no such file"),
        ("summaries-not-json", 2, "--summaries-file a.md is not valid JSON"),
    ],
)
def test_the_inputs_that_used_to_print_a_traceback_are_one_clear_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    case: str,
    expected_code: int,
    message: str,
) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n")
    explain = ["explain-where", "a = '${x}'", "--columns", "a:Text"]
    argv = {
        "params-5000-digits": [*explain, "--params", '{"x": ' + "1" * 5000 + "}"],
        "params-20k-deep": [*explain, "--params", '{"x": ' + "[" * 20_000 + "]" * 20_000 + "}"],
        "weight-401-digits": ["graph", "epr", _graph_file(tmp_path, "w401", "1" * 401)],
        "weight-5001-digits": ["graph", "epr", _graph_file(tmp_path, "w5001", "1" * 5001)],
        "weight-100k-deep": [
            "graph",
            "navigate",
            _graph_file(tmp_path, "deep", "[" * 100_000 + "]" * 100_000),
            "-q",
            "alpha",
        ],
        "id-lone-surrogate": [
            "graph",
            "navigate",
            _graph_file(tmp_path, "surrogate", first_id='"\\ud800"'),
            "-q",
            "alpha",
        ],
        "empty-query": ["graph", "navigate", _graph_file(tmp_path, "good"), "--query", " "],
        "first-param-0": [*explain, "--first-param", "0"],
        "missing-summaries": [
            "ingest-dir",
            str(tmp_path / "docs"),
            "--corpus",
            "C",
            "--tenant",
            "4b1c0b8e-35d5-4a5f-9c69-0d3f7fd0a5b8",
            "--dry-run",
            "--summaries-file",
            "missing.json",
        ],
        "summaries-not-json": [
            "ingest-dir",
            str(tmp_path / "docs"),
            "--corpus",
            "C",
            "--tenant",
            "4b1c0b8e-35d5-4a5f-9c69-0d3f7fd0a5b8",
            "--dry-run",
            "--summaries-file",
            "a.md",
        ],
    }[case]
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 2
    captured = capsys.readouterr()
    assert code == expected_code, captured.err
    assert message in captured.err
    if code:
        assert captured.err.startswith("mnemo: error: ")
        assert captured.err.count("\n") == 1
    if case == "id-lone-surrogate":
        assert "\\ud800" in captured.out  # escaped on the way out, never an encoding crash
