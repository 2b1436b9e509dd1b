"""`decider.schema.json`: exactly the listed keywords are enforced on the inputs (before anything is sent) and the
outputs (before the run completes), and a mismatch names its path."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from onellm.deciders import Mismatch, check_value
from onellm.errors import DeciderInputError, DeciderOutputError
from onellm.testing import ScriptedDecisionProvider

pytestmark = pytest.mark.anyio

TICKET = {
    "type": "object",
    "properties": {
        "title": {"type": "string"},
        "priority": {"type": "integer", "minimum": 1, "maximum": 5},
        "tier": {"enum": ["gold", "silver"]},
        "kind": {"const": "ticket"},
        "lines": {"type": "array", "items": {"type": "object", "required": ["sku"]}},
        "pair": {"items": [{"type": "string"}, {"type": "number"}]},
        "ref": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        "meta": {"type": "object", "additionalProperties": {"type": "string"}},
        "maybe": {"type": ["string", "null"]},
        "free": {"pattern": "^x$", "minLength": 99, "format": "email"},
    },
    "required": ["title"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("value", "path", "problem"),
    [
        ({}, "inputs.title", "is required"),
        ({"title": 3}, "inputs.title", "expected a string, found a number"),
        ({"title": "t", "priority": 2.5}, "inputs.priority", "expected an integer"),
        ({"title": "t", "priority": True}, "inputs.priority", "expected an integer, found a boolean"),
        ({"title": "t", "priority": 0}, "inputs.priority", "must be at least 1"),
        ({"title": "t", "priority": 6}, "inputs.priority", "must be at most 5"),
        ({"title": "t", "tier": "bronze"}, "inputs.tier", "must be one of 'gold', 'silver'"),
        ({"title": "t", "kind": "order"}, "inputs.kind", "must be 'ticket'"),
        ({"title": "t", "lines": [{"sku": 1}, {}]}, "inputs.lines[1].sku", "is required"),
        ({"title": "t", "pair": ["a", "b"]}, "inputs.pair[1]", "expected a number"),
        ({"title": "t", "ref": 1.5}, "inputs.ref", "fits none of the allowed forms"),
        ({"title": "t", "meta": {"a b": 1}}, 'inputs.meta["a b"]', "expected a string"),
        ({"title": "t", "maybe": 1}, "inputs.maybe", "expected a string or a null"),
        ({"title": "t", "extra": 1}, "inputs.extra", "is not an allowed property"),
    ],
)
def test_each_enforced_keyword_names_the_path(value: Any, path: str, problem: str) -> None:
    with pytest.raises(Mismatch) as caught:
        check_value(value, TICKET, "inputs")
    assert caught.value.path == path
    assert problem in caught.value.problem


def test_what_fits_passes_and_other_keywords_are_ignored() -> None:
    check_value(
        {
            "title": "t",
            "priority": Decimal("3.0"),  # a whole number written with a fraction is an integer
            "tier": "gold",
            "kind": "ticket",
            "lines": [{"sku": "A"}],
            "pair": ["a", 1, "more"],
            "ref": 7,
            "meta": {"a": "b"},
            "maybe": None,
            "free": "not an email, longer than nothing",
        },
        TICKET,
        "inputs",
    )
    check_value(1, {"enum": [1.0]}, "x")  # JSON equality: 1 is 1.0
    with pytest.raises(Mismatch):
        check_value(True, {"enum": [1]}, "x")  # but true is not 1


DECIDER = """\
model: jev-latest
state: "{{ .inputs.title }}"
questions:
  topic:
    type: choice
    instructions: Which team?
    criteria: {billing: Money, orders: Parcels}
"""


async def test_inputs_failing_the_schema_are_refused_before_sending(h: Any, tmp_path: Path) -> None:
    engine = ScriptedDecisionProvider("typesafe")
    runtime = h.runtime_with(engine)
    folder = h.write_decider(tmp_path / "triage", DECIDER, schema={"inputs": TICKET})
    with pytest.raises(DeciderInputError) as caught:
        await runtime.decide(folder, {"title": "t", "priority": 9})
    assert caught.value.path == "inputs.priority"
    assert caught.value.decider == "triage"
    assert str(caught.value) == "triage: inputs.priority: must be at most 5, found 9"
    assert engine.requests == []
    assert await runtime.list_decisions() == []


async def test_outputs_failing_the_schema_fail_the_run_naming_the_path(h: Any, tmp_path: Path) -> None:
    engine = ScriptedDecisionProvider("typesafe")
    runtime = h.runtime_with(engine)
    outputs = {
        "type": "object",
        "properties": {"topic": {"properties": {"choice": {"enum": ["orders"]}}}},
    }
    folder = h.write_decider(tmp_path / "triage", DECIDER, schema={"outputs": outputs})
    with pytest.raises(DeciderOutputError) as caught:
        await runtime.decide(folder, {"title": "t"})
    assert caught.value.path == "outputs.topic.choice"
    assert "must be one of 'orders', found 'billing'" in str(caught.value)
    [summary] = await runtime.list_decisions()
    assert summary.state == "error"
    assert len(engine.requests) == 1  # the answers were paid for and are kept
    stored = await runtime.get_decision(summary.instance_id)
    assert stored is not None
    assert stored.answers["topic"]["choice"] == "billing"


async def test_outputs_of_logic_are_checked(h: Any, tmp_path: Path) -> None:
    engine = ScriptedDecisionProvider("typesafe")
    runtime = h.runtime_with(engine)
    logic = "def decide(answers, inputs):\n    return {'route': 7}\n"
    schema = {"outputs": {"type": "object", "properties": {"route": {"type": "string"}}, "required": ["route"]}}
    folder = h.write_decider(tmp_path / "triage", DECIDER, schema=schema, decider__py=logic)
    with pytest.raises(DeciderOutputError, match=r"outputs\.route: expected a string, found a number"):
        await runtime.decide(folder, {"title": "t"})
