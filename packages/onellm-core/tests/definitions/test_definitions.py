"""Agent definitions, flows and deciders: values, strict and lenient loading, and saving."""

from __future__ import annotations

import datetime
from decimal import Decimal
from pathlib import Path

import pytest

import onellm
from onellm.definitions import (
    ContextStrategy,
    Decider,
    Definition,
    FlowMetadata,
    HookEntry,
    Question,
    Reference,
    Thinking,
)
from onellm.errors import BadDefinitionError, UnwritableValueError
from onellm.messages import FromPart, Message, TextPart

AGENT = """\
# agent
name: clerk
description: Answers docket questions.
model: claude-sonnet
serviceTier: priority
thinking: {effort: high, budget: 2048}
temperature: 0.5
maxIterations: 9
maxTokens: 1000
systemPrompt: You are a clerk.
references:
  - routine: tools/docket.tool.yaml
    tools: [get_docket]
    required: true
  - routine: tools/shell.tool.yaml
  - swarm: helpers
workingDirectory: cases
initialPrompts:
  - user:
      - text: Case {{ .inputs.caseNo }}
      - from: inputs.images
inputs: {caseNo: 24-1234}
headers: {X-Trace: abc}
invocationMode: interactive
llmTurnLogs: true
missingKey: error
hooks:
  - file: hooks/a.js
    points: [onCost]
contextStrategy: {type: compact, triggerPercent: 80, keepLast: 6}
extraTop: 1
"""


def test_every_key_is_a_snake_case_attribute() -> None:
    d = Definition.loads(AGENT, file="clerk.yaml")
    assert d.name == "clerk"
    assert d.description == "Answers docket questions."
    assert d.model == "claude-sonnet"
    assert d.service_tier == "priority"
    assert d.thinking == Thinking(effort="high", budget=2048)
    assert d.temperature == Decimal("0.5")
    assert d.max_iterations == 9
    assert d.max_tokens == 1000
    assert d.system_prompt == "You are a clerk."
    assert d.references == [
        Reference(routine="tools/docket.tool.yaml", tools=["get_docket"], required=True),
        Reference(routine="tools/shell.tool.yaml"),
        Reference(swarm="helpers"),
    ]
    assert d.working_directory == "cases"
    assert d.initial_prompts == [Message(user=[TextPart("Case {{ .inputs.caseNo }}"), FromPart(path="inputs.images")])]
    assert d.inputs == {"caseNo": "24-1234"}
    assert d.headers == {"X-Trace": "abc"}
    assert d.invocation_mode == "interactive"
    assert d.llm_turn_logs is True
    assert d.missing_key == "error"
    assert d.hooks == [HookEntry(file="hooks/a.js", points=["onCost"])]
    assert d.context_strategy == ContextStrategy(type="compact", trigger_percent=80, keep_last=6)
    assert d.extra == {"extraTop": 1}
    assert d.kind == "agent"
    assert d.warnings == []
    assert onellm.Definition is Definition
    assert onellm.Decider is Decider


def test_positions_of_nodes_for_other_checkers() -> None:
    d = Definition.loads(AGENT, file="clerk.yaml")
    assert d.position(("references", 1)) == (15, 5)
    assert d.position(("references", 0, "tools")) == (13, 12)
    assert Definition(model="m").position(("model",)) is None


def _refuse_shell(ref: Reference) -> str | None:
    return "the shell is not granted" if ref.routine and "shell" in ref.routine else None


def test_strict_load_fails_on_a_refused_reference() -> None:
    with pytest.raises(BadDefinitionError) as info:
        Definition.loads(AGENT, file="clerk.yaml", check_reference=_refuse_shell)
    err = info.value
    assert (err.file, err.line, err.column) == ("clerk.yaml", 15, 5)
    assert "tools/shell.tool.yaml" in err.detail
    assert "not granted" in err.detail


def test_lenient_load_drops_a_refused_reference_but_never_loses_it() -> None:
    d = Definition.loads(AGENT, file="clerk.yaml", strict=False, check_reference=_refuse_shell)
    assert [r.source for r in d.references or []] == ["tools/docket.tool.yaml", "helpers"]
    assert len(d.warnings) == 1
    assert (d.warnings[0].line, d.warnings[0].column) == (15, 5)
    assert str(d.warnings[0]).startswith("clerk.yaml:15:5: ")
    assert d.dumps() == AGENT
    d.model = "gpt-6-luna"
    out = d.dumps()
    assert "routine: tools/shell.tool.yaml" in out
    assert Definition.loads(out).references == [
        Reference(routine="tools/docket.tool.yaml", tools=["get_docket"], required=True),
        Reference(routine="tools/shell.tool.yaml"),
        Reference(swarm="helpers"),
    ]


def test_a_changed_value_keeps_comments_and_unknown_keys() -> None:
    d = Definition.loads(AGENT)
    d.max_tokens = 2000
    d.references = (d.references or [])[:1]
    out = d.dumps()
    assert out.startswith("# agent\n")
    assert "maxTokens: 2000\n" in out
    assert "swarm: helpers" not in out
    again = Definition.loads(out)
    assert again.extra == {"extraTop": 1}
    assert again == d


def test_changes_inside_nested_values_are_seen() -> None:
    d = Definition.loads(AGENT)
    assert d.inputs is not None
    d.inputs["caseNo"] = "25-0001"
    assert "caseNo: 25-0001" in d.dumps()
    prompts = d.initial_prompts or []
    prompts[0].user.append(TextPart("More."))
    assert "- text: More." in d.dumps()
    decider = Decider.loads(_decider("owner: {team: a}\n"))
    decider.extra["owner"]["team"] = "b"
    assert "team: b" in decider.dumps()
    decider.questions["q"].extra["weight"] = 2
    assert Decider.loads(decider.dumps()).questions["q"].extra == {"weight": 2}


def test_null_and_absent_are_the_same_and_empty_lists_stay() -> None:
    text = "name: ~\nmodel: m\nreferences: []\nhooks: []\n"
    d = Definition.loads(text)
    assert d.name is None
    assert d.references == []
    d.model = "n"
    out = d.dumps()
    assert "references: []" in out
    assert "hooks: []" in out
    assert Definition.loads(out).references == []


def test_a_definition_built_in_code_writes_the_canonical_layout() -> None:
    d = Definition(
        name="new",
        model="claude-sonnet",
        temperature=Decimal("0.7"),
        references=[Reference(routine="tools/a.tool.yaml", tools=[])],
        initial_prompts=[Message(user=[TextPart("Hello\nthere\n")])],
        context_strategy=ContextStrategy(type="clearToolResults"),
        extra={"owner": "me"},
    )
    text = d.dumps()
    assert text == (
        "name: new\n"
        "model: claude-sonnet\n"
        "temperature: 0.7\n"
        "references:\n"
        "  - routine: tools/a.tool.yaml\n"
        "    tools: []\n"
        "initialPrompts:\n"
        "  - user:\n"
        "      - text: |\n"
        "          Hello\n"
        "          there\n"
        "contextStrategy:\n"
        "  type: clearToolResults\n"
        "owner: me\n"
    )
    assert Definition.loads(text) == d


def test_save_writes_bytes_and_remembers_the_new_text(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_bytes(b"# keep me\r\nmodel: a\r\n")
    d = Definition.load(tmp_path)
    d.save()
    assert path.read_bytes() == b"# keep me\r\nmodel: a\r\n"
    d.model = "b"
    d.save()
    assert path.read_bytes() == b"# keep me\r\nmodel: b\r\n"
    assert d.dumps() == "# keep me\r\nmodel: b\r\n"
    fresh = Definition(model="c")
    with pytest.raises(ValueError, match="path"):
        fresh.save()
    fresh.save(tmp_path / "fresh.yaml")
    assert Definition.load(tmp_path / "fresh.yaml").model == "c"


def test_a_value_with_no_form_in_the_file_is_a_typed_error_and_the_file_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_bytes(b"# keep me\nmodel: a\n")
    d = Definition.load(tmp_path)
    d.extra["schedule"] = {"at": [datetime.date(2026, 1, 2)]}
    with pytest.raises(UnwritableValueError) as info:
        d.save()
    assert info.value.path == "schedule.at[0]"
    assert info.value.instance_id is None
    assert str(info.value) == (
        f"{path}: schedule.at[0] cannot be written: a definition file holds text, numbers, booleans, null, lists "
        "and mappings only, not a value of type date"
    )
    assert path.read_bytes() == b"# keep me\nmodel: a\n"
    fresh = Definition(model="c", extra={"raw": b"bytes"})
    with pytest.raises(
        UnwritableValueError, match=r"^definition: raw cannot be written: .* not a value of type bytes$"
    ):
        fresh.dumps()


def test_missing_file_is_a_bad_definition(tmp_path: Path) -> None:
    with pytest.raises(BadDefinitionError, match="does not exist"):
        Definition.load(tmp_path / "nowhere.yaml")


def test_flow_kind_from_the_file_name() -> None:
    flow = Definition.loads("model: m\nreferences:\n  - routine: a\n", file="x.flow")
    assert flow.kind == "flow"
    assert flow.warnings[0].message.startswith("references in a flow are ignored")
    agent = Definition.loads("model: m\n", file="x.yaml")
    assert agent.kind == "agent"


def test_flow_metadata_keeps_the_whole_file() -> None:
    text = "name: f\nversion: '2.1'\nhistory: [1, 2]\nrubric: {a: 1}\n"
    meta = FlowMetadata.loads(text)
    assert (meta.name, meta.version) == ("f", "2.1")
    assert meta.other == {"history": [1, 2], "rubric": {"a": 1}}
    assert meta.dumps() == text
    meta.version = "2.2"
    assert FlowMetadata.loads(meta.dumps()).other == meta.other


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("'{{ .inputs.items }}'", True),
        ("'  {{- .a -}}  '", True),
        ("'{{ .a }} {{ .b }}'", False),
        ("'x {{ .a }}'", False),
    ],
)
def test_for_each_is_exactly_one_action(value: str, ok: bool) -> None:
    text = f"model: m\nquestions:\n  q:\n    type: noul\n    instructions: x\n    forEach: {value}\n"
    if ok:
        assert Decider.loads(text).questions["q"].for_each is not None
    else:
        with pytest.raises(BadDefinitionError, match="forEach"):
            Decider.loads(text)


def _decider(extra: str = "", question: str = "{type: noul, instructions: x}", qid: str = "q") -> str:
    return f"model: m\nquestions:\n  {qid}: {question}\n{extra}"


@pytest.mark.parametrize(
    "text",
    [
        _decider("llm: {samples: 1, temperature: 0}\n"),
        _decider("llm: {samples: 100, temperature: 2}\n"),
        _decider("cache: {key: " + "k" * 64 + "}\n"),
        _decider(qid="a" * 64),
        _decider(qid="A.b-c_9"),
        _decider(
            question="{type: choice, instructions: x, criteria: {" + ", ".join(f"v{i}: d" for i in range(255)) + "}}"
        ),
        _decider(question="{type: score, instructions: x, criteria: [" + ", ".join(f"l{i}" for i in range(10)) + "]}"),
        _decider(question="{type: score, instructions: x, criteria: {low: a, high: b}}"),
        _decider(question="{type: noul, instructions: x, criteria: {true: yes it is}}"),
        _decider(question="{type: noul, instructions: {main: x, extra: y}}"),
    ],
)
def test_decider_boundaries_that_are_allowed(text: str) -> None:
    decider = Decider.loads(text)
    assert decider.dumps() == text


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (
            _decider(
                question="{type: choice, instructions: x, criteria: {"
                + ", ".join(f"v{i}: d" for i in range(256))
                + "}}"
            ),
            "2 to 255",
        ),
        (_decider(question="{type: score, instructions: x, criteria: [only]}"), "2 to 10"),
        (_decider("llm: {samples: 1.5}\n"), "whole number"),
        (_decider("llm: {temperature: -0.1}\n"), "between 0 and 2"),
        (_decider("llm: {thinking: [a]}\n"), "effort name"),
        (_decider("cache: {explicit: 'yes'}\n"), "true or false"),
        (_decider(qid="a" * 65), "1 to 64"),
        (_decider(qid="'é'"), "1 to 64"),
        (_decider(question="{type: choice, instructions: x, criteria: {a: 1, b: 2}}"), "description is a string"),
        ("model: m\nquestions: [a]\n", "expected a mapping"),
        ("model: 3\nquestions:\n  q: {type: noul, instructions: x}\n", "expected a string"),
    ],
)
def test_decider_rules(text: str, words: str) -> None:
    with pytest.raises(BadDefinitionError) as info:
        Decider.loads(text, file="d.yaml")
    assert words in info.value.detail
    assert info.value.line is not None
    assert info.value.column is not None


def test_decider_values_and_names(tmp_path: Path) -> None:
    text = _decider(
        "llm: {samples: 3, serviceTier: flex, thinking: {effort: low}}\ncache: {explicit: true}\nowner: x\n"
    )
    folder = tmp_path / "route-ticket"
    folder.mkdir()
    (folder / "decider.yaml").write_text(text)
    (tmp_path / "spam.decider.yaml").write_text(text)
    decider = Decider.load(folder)
    assert decider.name == "route-ticket"
    assert decider.cache_key == "route-ticket"
    assert decider.model == "m"
    assert decider.questions == {"q": Question(type="noul", instructions="x")}
    assert decider.llm is not None
    assert (decider.llm.samples, decider.llm.service_tier, decider.llm.thinking) == (3, "flex", {"effort": "low"})
    assert decider.cache is not None
    assert decider.cache.explicit is True
    assert decider.extra == {"owner": "x"}
    assert Decider.load(tmp_path / "spam.decider.yaml").name == "spam"
    decider.cache.key = "shared"
    assert decider.cache_key == "shared"


def test_integer_question_ids_keep_their_key() -> None:
    text = "model: m\nquestions:\n  1: {type: noul, instructions: x}\n"
    decider = Decider.loads(text)
    assert list(decider.questions) == ["1"]
    decider.model = "n"
    assert Decider.loads(decider.dumps()).questions == decider.questions
    assert "\n  1:" in decider.dumps()


def test_decider_schema_beside_the_definition(tmp_path: Path) -> None:
    folder = tmp_path / "triage"
    folder.mkdir()
    (folder / "decider.yaml").write_text(_decider())
    (folder / "decider.schema.json").write_text(
        '{"inputs": {"type": "object", "required": ["title"], "properties": {"title": {"type": "string"}}},\n'
        ' "outputs": {"type": "object", "properties": {"score": {"minimum": 0.5}}}}\n'
    )
    decider = Decider.load(folder)
    assert decider.input_schema == {
        "type": "object",
        "required": ["title"],
        "properties": {"title": {"type": "string"}},
    }
    assert decider.output_schema == {"type": "object", "properties": {"score": {"minimum": Decimal("0.5")}}}
    (tmp_path / "spam.decider.yaml").write_text(_decider())
    assert Decider.load(tmp_path / "spam.decider.yaml").schema is None
    (tmp_path / "spam.decider.schema.json").write_text('{"inputs": {"type": "object"},\n  "outputs": [1,,]}')
    with pytest.raises(BadDefinitionError) as info:
        Decider.load(tmp_path / "spam.decider.yaml")
    assert info.value.file == str(tmp_path / "spam.decider.schema.json")
    assert (info.value.line, info.value.column) == (2, 17)


def test_from_plain_data() -> None:
    d = Definition.from_data({"model": "m", "references": [{"routine": "a"}], "custom": [1]})
    assert d.references == [Reference(routine="a")]
    assert d.extra == {"custom": [1]}
    assert Definition.loads(d.dumps()) == d
    with pytest.raises(BadDefinitionError) as info:
        Definition.from_data({"model": "m", "initialPrompts": [{"user": [{"bogus": 1}]}]})
    assert info.value.path == "initialPrompts[0].user[0]"
    assert info.value.line is None
    decider = Decider.from_data({"model": "m", "questions": {"q": {"type": "noul", "instructions": "x"}}}, name="n")
    assert decider.cache_key == "n"
    with pytest.raises(BadDefinitionError) as info:
        Decider.from_data({"model": "m", "questions": {"q": {"type": "score", "instructions": "x", "criteria": [1]}}})
    assert info.value.path == "questions.q.criteria"


def test_values_added_to_a_persons_file_are_quoted_by_the_canonical_rules() -> None:
    """A changed file keeps the person's comments and styles, and what the program added is written as every file
    onellm writes it: double quotes with JSON escapes, literal blocks, plain names as keys."""
    d = Definition.loads("# kept\nname: x\ninputs:\n  a: 'yes'\n")
    assert d.inputs is not None
    d.inputs.update({"b": "yes", "c": "two\nlines\n", "d": "bell\x07", "e": "24-1234", "f": {"X-Api": "1.2.3"}})
    d.inputs["weird key"] = "2026-01-02"
    assert d.dumps() == (
        "# kept\n"
        "name: x\n"
        "inputs:\n"
        "  a: 'yes'\n"
        '  b: "yes"\n'
        "  c: |\n"
        "    two\n"
        "    lines\n"
        '  d: "bell\\u0007"\n'
        "  e: 24-1234\n"
        "  f:\n"
        '    X-Api: "1.2.3"\n'
        '  "weird key": "2026-01-02"\n'
    )
    assert Definition.loads(d.dumps()).inputs == d.inputs
