"""Decider logic: the `DeciderLogic` seam, a Python module or a decorated class beside the definition with typed
answers, outputs read into a type, and JavaScript logic found through the installed package's entry point."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar, TypedDict

import msgspec
import pytest

from onellm.deciders import (
    ChoiceAnswer,
    DeciderLogic,
    NoulAnswer,
    PythonDeciderLogic,
    ScoreAnswer,
    _logic,
    attach_logic,
    decider_logic,
)
from onellm.definitions import Decider
from onellm.errors import BadDefinitionError, CapabilityMissingError, DeciderOutputError
from onellm.testing import ScriptedDecisionProvider

pytestmark = pytest.mark.anyio

TRIAGE = """\
model: jev-latest
state:
  title: "{{ .inputs.title }}"
  customer: "{{ .inputs.customer }}"
questions:
  topic:
    type: choice
    instructions: Which team should handle the ticket?
    criteria:
      billing: Charges and refunds
      orders: Delivery and returns
  urgency:
    type: score
    instructions: How urgent?
    criteria: [low, normal, high]
  angry:
    type: noul
    instructions: Is the customer angry?
  line-ok:
    type: noul
    instructions: "Line {{ .index }} ok?"
    forEach: "{{ .inputs.lines }}"
"""


class Topic(enum.Enum):
    BILLING = "billing"
    ORDERS = "orders"


@dataclass
class Answers:
    topic: ChoiceAnswer[Topic]
    urgency: ScoreAnswer
    angry: NoulAnswer
    line_ok: list[NoulAnswer]


@dataclass
class Routing:
    team: str
    escalate: bool
    bad_lines: list[int]


def _answer(question: Any) -> Any:
    if question.type == "choice":
        return ChoiceAnswer(choice="orders", confidence=0.9, probabilities={"billing": 0.05, "orders": 0.95})
    if question.type == "score":
        return ScoreAnswer(score=1.6, confidence=0.4, probabilities={0: 0.1, 1: 0.2, 2: 0.7})
    if question.question_id == "line-ok":
        return 0.2 if question.index == 1 else 0.9
    return 0.7


def _engine() -> ScriptedDecisionProvider:
    return ScriptedDecisionProvider("typesafe", answer=_answer)


INPUTS = {"title": "Where is my parcel?", "customer": "ACME", "lines": ["a", "b", "c"]}

MODULE = """
from dataclasses import dataclass
import enum
from onellm.deciders import ChoiceAnswer, NoulAnswer, ScoreAnswer

class Topic(enum.Enum):
    BILLING = "billing"
    ORDERS = "orders"

@dataclass
class Answers:
    topic: ChoiceAnswer[Topic]
    urgency: ScoreAnswer
    angry: NoulAnswer
    line_ok: list[NoulAnswer]

@dataclass
class Routing:
    team: Topic
    escalate: bool
    bad_lines: list[int]

def prepare(inputs):
    return {**inputs, "customer": inputs["customer"].upper() + " LTD"}

async def decide(answers: Answers, inputs) -> Routing:
    assert isinstance(answers.topic.choice, Topic)
    return Routing(
        team=answers.topic.choice,
        escalate=bool(answers.angry) and answers.urgency.level >= 2,
        bad_lines=[i for i, line in enumerate(answers.line_ok) if not line],
    )
"""


async def test_a_python_module_beside_the_definition_is_its_logic(h: Any, tmp_path: Path) -> None:
    engine = _engine()
    runtime = h.runtime_with(engine)
    folder = h.write_decider(tmp_path / "triage", TRIAGE, decider__py=MODULE)
    result = await runtime.decide(folder, INPUTS)
    assert engine.requests[0].state == {"title": "Where is my parcel?", "customer": "ACME LTD"}  # prepare ran
    assert result.outputs == {"team": "ORDERS", "escalate": True, "bad_lines": [1]}  # enums by name, as JSON
    assert result.instance.extra["decider"]["outputs"] == result.outputs
    assert result.answers["line-ok"][1] == {"type": "noul", "noul": 0.2}


async def test_outputs_are_read_into_a_type(h: Any, tmp_path: Path) -> None:
    runtime = h.runtime_with(_engine())
    folder = h.write_decider(
        tmp_path / "triage",
        TRIAGE,
        decider__py=MODULE.replace("team: Topic", "team: str").replace(
            "team=answers.topic.choice", "team=answers.topic.choice.value"
        ),
    )
    result = await runtime.decide(folder, INPUTS, output=Routing)
    assert result.outputs == Routing(team="orders", escalate=True, bad_lines=[1])


async def test_outputs_that_do_not_fit_the_type_name_the_path(h: Any, tmp_path: Path) -> None:
    runtime = h.runtime_with(_engine())
    folder = h.write_decider(tmp_path / "triage", TRIAGE)
    with pytest.raises(DeciderOutputError) as caught:
        await runtime.decide(folder, INPUTS, output=Routing)
    assert caught.value.path == "outputs.topic"  # the answers have no place in a Routing
    [summary] = await runtime.list_decisions()
    assert summary.state == "error"


async def test_a_decorated_class_is_the_logic_and_holds_the_decider(tmp_path: Path, h: Any) -> None:
    (tmp_path / "triage.decider.yaml").write_text(TRIAGE, encoding="utf-8")

    @decider_logic(tmp_path / "triage.decider.yaml")
    class Triage:
        @staticmethod
        def decide(answers: Answers, inputs: dict[str, Any]) -> Routing:
            return Routing(
                team=answers.topic.choice.value,
                escalate=answers.urgency.score > 1.5,
                bad_lines=[i for i, ok in enumerate(answers.line_ok) if ok.noul < 0.5],
            )

    decider: Decider = Triage.decider  # type: ignore[attr-defined]
    assert decider.name == "triage"
    runtime = h.runtime_with(_engine())
    result = await runtime.decide(Triage, INPUTS, output=Routing)
    assert result.outputs == Routing(team="orders", escalate=True, bad_lines=[1])
    again = await runtime.decide(decider, INPUTS)  # the decider remembers its logic
    assert again.outputs == {"team": "orders", "escalate": True, "bad_lines": [1]}


class TypedAnswers(TypedDict):
    topic: ChoiceAnswer[str]
    angry: NoulAnswer


class StructAnswers(msgspec.Struct):
    urgency: ScoreAnswer
    line_ok: list[NoulAnswer]


async def test_typed_dicts_and_structs_take_typed_answers(h: Any, tmp_path: Path) -> None:
    seen: list[Any] = []

    def first(answers: TypedAnswers, inputs: Any) -> str:
        seen.append(answers)
        return answers["topic"].choice

    def second(answers: StructAnswers, inputs: Any) -> int:
        seen.append(answers)
        return answers.urgency.level

    runtime = h.runtime_with(_engine())
    decider = Decider.loads(TRIAGE, file="triage.yaml", name="triage")
    result = await runtime.decide(attach_logic(decider, PythonDeciderLogic(decide=first)), INPUTS)
    assert result.outputs == "orders"
    decider = Decider.loads(TRIAGE, file="triage.yaml", name="triage")
    result = await runtime.decide(attach_logic(decider, PythonDeciderLogic(decide=second)), INPUTS)
    assert result.outputs == 2
    assert seen[0]["angry"] == NoulAnswer(noul=0.7)
    assert [a.noul for a in seen[1].line_ok] == [0.9, 0.2, 0.9]


@dataclass
class NoSuchQuestion:
    topik: ChoiceAnswer[str]


@dataclass
class WrongType:
    topic: NoulAnswer


@dataclass
class NotAList:
    angry: list[NoulAnswer]


@dataclass
class MustBeAList:
    line_ok: NoulAnswer


class Partial(enum.Enum):
    BILLING = "billing"


@dataclass
class EnumMissingAValue:
    topic: ChoiceAnswer[Partial]


@dataclass
class NotAnAnswer:
    topic: str


@pytest.mark.parametrize(
    ("answers", "problem"),
    [
        (NoSuchQuestion, "field 'topik' of NoSuchQuestion names no question"),
        (WrongType, "field 'topic' is a noul answer, but question 'topic' is a choice"),
        (NotAList, "field 'angry' must be one answer, not a list"),
        (MustBeAList, r"field 'line_ok' must be a list \(the question has forEach\)"),
        (EnumMissingAValue, "choice 'orders' of question 'topic' is not a member of Partial"),
        (NotAnAnswer, "field 'topic' of NotAnAnswer is not ChoiceAnswer"),
    ],
)
def test_typed_answers_that_do_not_fit_the_questions_fail_when_the_logic_is_bound(answers: type, problem: str) -> None:
    def decide(answers: Any, inputs: Any) -> Any:
        return None

    decide.__annotations__["answers"] = answers
    decider = Decider.loads(TRIAGE, file="triage.yaml")
    with pytest.raises(BadDefinitionError, match=problem):
        attach_logic(decider, PythonDeciderLogic(decide=decide))


def test_python_logic_implements_the_seam() -> None:
    logic = PythonDeciderLogic(prepare=lambda inputs: inputs)
    assert isinstance(logic, DeciderLogic)
    assert (logic.has_prepare, logic.has_decide) == (True, False)
    with pytest.raises(TypeError, match="prepare and/or decide"):
        PythonDeciderLogic()


async def test_a_missing_function_passes_its_input_through() -> None:
    logic = PythonDeciderLogic(decide=lambda answers, inputs: 1)
    assert await logic.prepare({"a": 1}) == {"a": 1}
    logic = PythonDeciderLogic(prepare=lambda inputs: inputs)
    assert await logic.decide({"q": 1}, {}) == {"q": 1}


async def test_a_python_module_that_does_not_parse_names_its_line(h: Any, tmp_path: Path) -> None:
    engine = _engine()
    runtime = h.runtime_with(engine)
    folder = h.write_decider(tmp_path / "triage", TRIAGE, decider__py="def decide(answers, inputs)\n    return 1\n")
    with pytest.raises(BadDefinitionError) as caught:
        await runtime.decide(folder, INPUTS)
    assert (caught.value.file, caught.value.line) == (str(folder / "decider.py"), 1)
    assert engine.requests == []


async def test_a_module_without_prepare_or_decide_is_refused(h: Any, tmp_path: Path) -> None:
    runtime = h.runtime_with(_engine())
    folder = h.write_decider(tmp_path / "triage", TRIAGE, decider__py="X = 1\n")
    with pytest.raises(BadDefinitionError, match=r"prepare.*decide"):
        await runtime.decide(folder, INPUTS)


async def test_two_kinds_of_logic_beside_one_definition_are_refused(h: Any, tmp_path: Path) -> None:
    runtime = h.runtime_with(_engine())
    folder = h.write_decider(
        tmp_path / "triage",
        TRIAGE,
        decider__py="def decide(a, i):\n    return 1\n",
        decider__js="export function decide() {}",
    )
    with pytest.raises(BadDefinitionError, match=r"two logic files beside the decider: decider\.py and decider\.js"):
        await runtime.decide(folder, INPUTS)


class _FakeJsLogic:
    """Stands in for onellm_js.JsDeciderLogic: the same shape, no sandbox."""

    loaded: ClassVar[list[tuple[Path, str]]] = []

    def __init__(self) -> None:
        self.has_prepare = False
        self.has_decide = True

    @classmethod
    async def load(cls, path: Path, *, name: str) -> _FakeJsLogic:
        cls.loaded.append((Path(path), name))
        return cls()

    async def prepare(self, inputs: Any) -> Any:
        return inputs

    async def decide(self, answers: Any, inputs: Any) -> Any:
        return {"team": answers["topic"]["choice"], "from": "js"}


async def test_javascript_logic_is_found_through_the_installed_entry_point(
    h: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    looked: list[str] = []

    def entry_points() -> list[Any]:
        looked.append(_logic.ENTRY_POINT_GROUP)
        return [SimpleNamespace(load=lambda: _FakeJsLogic)]

    monkeypatch.setattr(_logic, "_entry_points", entry_points)
    _FakeJsLogic.loaded.clear()
    runtime = h.runtime_with(_engine())
    folder = h.write_decider(tmp_path / "triage", TRIAGE, decider__ts="export function decide() {}")
    result = await runtime.decide(folder, INPUTS)
    assert result.outputs == {"team": "orders", "from": "js"}
    assert _FakeJsLogic.loaded == [(folder / "decider.ts", "triage")]
    assert looked == ["onellm.decider_logic"]


async def test_javascript_logic_without_onellm_js_is_capability_missing(
    h: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_logic, "_entry_points", list)
    engine = _engine()
    runtime = h.runtime_with(engine)
    folder = h.write_decider(tmp_path / "triage", TRIAGE, decider__js="export function decide() {}")
    with pytest.raises(CapabilityMissingError, match=r"pip install onellm-js"):
        await runtime.decide(folder, INPUTS)
    assert engine.requests == []


def test_core_does_not_import_onellm_js() -> None:
    import subprocess
    import sys

    code = "import onellm, onellm.deciders, onellm.deciders._logic, sys; print('onellm_js' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
