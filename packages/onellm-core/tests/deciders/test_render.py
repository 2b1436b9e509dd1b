"""Templates in a decider: missing names are errors naming the file position and key path, no `embed`, code regions
not escaped, whole-value templates keep structure, and `forEach` expands a question per element.

Most cases call the private renderer (`render_decider`) directly: what it renders is what every engine sends, and
checking it there needs no engine; the last case goes through `Runtime.decide`."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from onellm.deciders._render import render_decider, whole_value_action
from onellm.definitions import Decider
from onellm.errors import DeciderInputError, TemplateError
from onellm.testing import ScriptedDecisionProvider

pytestmark = pytest.mark.anyio

STATE = """\
model: jev-latest
state:
  customer: "{{ .inputs.customer }}"
  lines: "{{ .inputs.lines }}"
  count: "{{ .inputs.lines | len }}"
  trimmed: "{{- .inputs.customer.name -}}"
  nothing: "{{ .inputs.nothing }}"
  text: "Customer {{ .inputs.customer.name }} ({{ len .inputs.lines }} lines)"
  spaced: " {{ .inputs.customer.name }}"
  plain: 12.50
  code: "```{{ .inputs.customer.name }}```"
questions:
  ok:
    type: choice
    instructions:
      task: "Is {{ .inputs.customer.name }} right?"
      note: Plain text
    criteria:
      "yes": "Yes for {{ .inputs.customer.name }}"
      "no": No
"""

INPUTS = {"customer": {"name": "Ada", "id": 7, "tags": ["a", "b"]}, "lines": [1, 2.5, None], "nothing": None}


def test_whole_value_templates_keep_structure_and_others_render_as_text() -> None:
    rendered = render_decider(Decider.loads(STATE, file="d/decider.yaml"), INPUTS)
    assert rendered.state == {
        "customer": {"name": "Ada", "id": 7, "tags": ["a", "b"]},
        "lines": [1, 2.5, None],
        "count": 3,
        "trimmed": "Ada",
        "nothing": None,
        "text": "Customer Ada (3 lines)",
        "spaced": " Ada",
        "plain": Decimal("12.50"),
        "code": "```Ada```",  # code regions are not escaped in a decider
    }
    [question] = rendered.questions
    assert question.instructions == {"task": "Is Ada right?", "note": "Plain text"}
    assert question.criteria == {"yes": "Yes for Ada", "no": "No"}


@pytest.mark.parametrize(
    ("text", "whole"),
    [
        ("{{ .a }}", True),
        ("{{.a.b | len}}", True),
        ("{{- .a -}}", True),
        (" {{ .a }}", False),
        ("{{ .a }} and {{ .b }}", False),
        ("{{ if .a }}x{{ end }}", False),
        ("{{/* a comment */}}", False),
        ("{{ }}", False),
        ("no action", False),
    ],
)
def test_which_strings_are_whole_value_templates(text: str, whole: bool) -> None:
    assert (whole_value_action(text) is not None) is whole


def test_a_missing_name_is_an_error_at_its_file_position_naming_the_path() -> None:
    text = 'model: jev-latest\nstate:\n  ticket:\n    title: "{{ .inputs.title }}"\nquestions:\n  q: {type: noul, instructions: Q?}\n'
    decider = Decider.loads(text, file="deciders/t/decider.yaml")
    with pytest.raises(TemplateError) as caught:
        render_decider(decider, {})
    error = caught.value
    assert (error.kind, error.name, error.line, error.column) == ("execute", "deciders/t/decider.yaml", 4, 23)
    assert str(error) == (
        'deciders/t/decider.yaml:4:23: execute error: at <.inputs.title>: map has no entry for key "title" '
        "(at state.ticket.title)"
    )


def test_a_missing_name_in_a_question_names_the_question() -> None:
    text = "model: jev-latest\nquestions:\n  line-ok:\n    type: noul\n    instructions: Is {{ .inputs.who }} ok?\n"
    with pytest.raises(
        TemplateError,
        match=r'decider.yaml:5:32: execute error: at <\.inputs\.who>: .*"who" \(at questions\["line-ok"\]\.instructions\)',
    ):
        render_decider(Decider.loads(text, file="decider.yaml"), {})


def test_a_decider_built_in_code_names_the_path_and_the_template_position() -> None:
    decider = Decider.from_data(
        {
            "model": "jev-latest",
            "state": {"a": "x {{ .inputs.b }}"},
            "questions": {"q": {"type": "noul", "instructions": "Q"}},
        },
        name="coded",
    )
    with pytest.raises(TemplateError, match=r"^decider coded:1:13: .*\(at state\.a\)"):
        render_decider(decider, {})


def test_embed_is_not_available() -> None:
    text = 'model: jev-latest\nstate: "{{ embed \\"notes.md\\" }}"\nquestions:\n  q: {type: noul, instructions: Q?}\n'
    with pytest.raises(TemplateError) as caught:
        render_decider(Decider.loads(text, file="decider.yaml"), {})
    assert caught.value.kind == "embed"


def test_a_parse_error_is_a_template_error_with_its_position() -> None:
    text = 'model: jev-latest\nstate: "{{ .inputs.a "\nquestions:\n  q: {type: noul, instructions: Q?}\n'
    with pytest.raises(TemplateError) as caught:
        render_decider(Decider.loads(text, file="decider.yaml"), {"a": 1})
    assert caught.value.kind == "parse"
    assert caught.value.line == 2


FOR_EACH = """\
model: jev-latest
questions:
  first: {type: noul, instructions: First?}
  line-ok:
    type: choice
    instructions: "Line {{ .index }}: {{ .item.sku }} for {{ .inputs.who }}"
    criteria:
      good: "{{ .item.sku }} is right"
      bad: Wrong
    forEach: " {{ .inputs.lines }} "
"""


def test_for_each_expands_with_item_and_index() -> None:
    rendered = render_decider(Decider.loads(FOR_EACH), {"who": "Bo", "lines": [{"sku": "A"}, {"sku": "B"}]})
    assert [(q.key, q.question_id, q.index, q.instructions, q.criteria) for q in rendered.questions] == [
        ("first", "first", None, "First?", None),
        ("line-ok[0]", "line-ok", 0, "Line 0: A for Bo", {"good": "A is right", "bad": "Wrong"}),
        ("line-ok[1]", "line-ok", 1, "Line 1: B for Bo", {"good": "B is right", "bad": "Wrong"}),
    ]
    assert rendered.for_each == {"line-ok": 2}


@pytest.mark.parametrize("given", ["three", 3, {"a": 1}])
def test_a_for_each_that_gives_no_list_names_the_question(given: Any) -> None:
    with pytest.raises(DeciderInputError, match=r"forEach of question 'line-ok' gives a .*, not a list") as caught:
        render_decider(Decider.loads(FOR_EACH), {"who": "Bo", "lines": given})
    assert caught.value.path == 'questions["line-ok"].forEach'


async def test_a_template_error_sends_nothing_and_saves_nothing(h: Any, tmp_path: Path) -> None:
    engine = ScriptedDecisionProvider("typesafe")
    runtime = h.runtime_with(engine)
    with pytest.raises(TemplateError):
        await runtime.decide(h.write_decider(tmp_path / "d", FOR_EACH), {"lines": [{"sku": "A"}]})
    assert engine.requests == []
    assert await runtime.list_decisions() == []
