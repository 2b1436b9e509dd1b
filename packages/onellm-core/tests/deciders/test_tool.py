"""The `run_decider` built-in tool: the decider read under the read grant, every link in its folder resolved against
the read roots before loading, Python logic refused, the run an instance of its own under the caller."""

from __future__ import annotations

import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from onellm import Capabilities, Runtime, ToolContext
from onellm.instances import FileInstanceStore
from onellm.testing import ScriptedDecisionProvider
from onellm.tools.builtin import BUILTIN_TOOL_NAMES, BuiltinOptions, builtin_tools

pytestmark = pytest.mark.anyio

TRIAGE = """\
model: jev-latest
state: "{{ .inputs.title }}"
questions:
  topic:
    type: choice
    instructions: Which team?
    criteria: {billing: Money, orders: Parcels}
"""


def _tool() -> Any:
    tools = {t.name: t for t in builtin_tools(BuiltinOptions())}
    return tools["run_decider"]


def _setup(tmp_path: Path) -> tuple[Runtime, ScriptedDecisionProvider, Path]:
    work = tmp_path / "work"
    (work / "deciders").mkdir(parents=True)
    engine = ScriptedDecisionProvider("typesafe")
    runtime = Runtime(
        environ={},
        capabilities=Capabilities.files(work),
        store=FileInstanceStore(work / "state" / "runs", durable=False),
    )
    runtime.providers.set("typesafe", engine)
    return runtime, engine, work


async def _call(runtime: Runtime, work: Path, arguments: dict[str, Any]) -> Any:
    ctx = ToolContext(
        capabilities=runtime.capabilities, working_directory=work, runtime=runtime, instance_id="caller-1"
    )
    return await _tool().invoke(arguments, ctx)


def test_run_decider_is_a_built_in_tool_that_needs_the_read_grant() -> None:
    assert "run_decider" in BUILTIN_TOOL_NAMES
    tool = _tool()
    assert tool.required_grants == ("files_read",)
    assert set(tool.input_schema["properties"]) == {"path", "inputs", "model"}


async def test_the_model_runs_a_decider_and_reads_its_answers(h: Any, tmp_path: Path) -> None:
    runtime, engine, work = _setup(tmp_path)
    h.write_decider(work / "deciders" / "triage", TRIAGE)
    result = await _call(runtime, work, {"path": "deciders/triage", "inputs": {"title": "Refund"}})
    assert not result.is_error, result.text
    value = result.value
    assert value["answers"] == {
        "topic": {"type": "choice", "choice": "billing", "confidence": 0.5, "probabilities": {}}
    }
    assert "outputs" not in value
    assert value["cost"] > Decimal(0)
    run = await runtime.get_decision(value["instanceId"])
    assert run is not None
    assert run.origin == "agent"
    assert run.instance.caller_instance_id == "caller-1"
    assert result.cost_lines == []  # the run's own instance carries its cost
    assert engine.requests[0].state == "Refund"


async def test_a_link_in_the_folder_leading_out_of_the_roots_is_refused_before_loading(h: Any, tmp_path: Path) -> None:
    runtime, engine, work = _setup(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "decider.schema.json").write_text('{"inputs": {"type": "object"}}', encoding="utf-8")
    folder = h.write_decider(work / "deciders" / "triage", TRIAGE)
    os.symlink(outside / "decider.schema.json", folder / "decider.schema.json")
    result = await _call(runtime, work, {"path": "deciders/triage", "inputs": {"title": "x"}})
    assert result.is_error
    assert "CapabilityDeniedError" in result.text
    assert "deciders/triage/decider.schema.json" in result.text
    assert str(outside) not in result.text
    assert engine.requests == []


async def test_a_definition_that_is_a_link_out_of_the_roots_is_refused(h: Any, tmp_path: Path) -> None:
    runtime, engine, work = _setup(tmp_path)
    outside = h.write_decider(tmp_path / "outside", TRIAGE)
    folder = work / "deciders" / "triage"
    folder.mkdir()
    os.symlink(outside / "decider.yaml", folder / "decider.yaml")
    result = await _call(runtime, work, {"path": "deciders/triage"})
    assert result.is_error
    assert "CapabilityDeniedError" in result.text
    assert engine.requests == []


async def test_a_link_inside_the_roots_is_followed(h: Any, tmp_path: Path) -> None:
    runtime, engine, work = _setup(tmp_path)
    shared = h.write_decider(work / "shared", TRIAGE)
    folder = work / "deciders" / "triage"
    folder.mkdir()
    os.symlink(shared / "decider.yaml", folder / "decider.yaml")
    result = await _call(runtime, work, {"path": "deciders/triage", "inputs": {"title": "x"}})
    assert not result.is_error, result.text
    assert len(engine.requests) == 1


async def test_python_logic_is_refused_by_the_tool(h: Any, tmp_path: Path) -> None:
    runtime, engine, work = _setup(tmp_path)
    marker = tmp_path / "ran"
    h.write_decider(
        work / "deciders" / "triage",
        TRIAGE,
        decider__py=f"open({str(marker)!r}, 'w').write('x')\ndef decide(a, i):\n    return 1\n",
    )
    result = await _call(runtime, work, {"path": "deciders/triage", "inputs": {"title": "x"}})
    assert result.is_error
    assert "Python decider logic" in result.text
    assert not marker.exists()  # the module was never run
    assert engine.requests == []


async def test_paths_outside_the_roots_and_the_runtime_state_are_refused(h: Any, tmp_path: Path) -> None:
    runtime, engine, work = _setup(tmp_path)
    h.write_decider(tmp_path / "elsewhere", TRIAGE)
    result = await _call(runtime, work, {"path": str(tmp_path / "elsewhere")})
    assert result.is_error
    assert "CapabilityDeniedError" in result.text
    h.write_decider(work / "state" / "runs" / "sneaky", TRIAGE)
    result = await _call(runtime, work, {"path": "state/runs/sneaky"})
    assert result.is_error
    assert "CapabilityDeniedError" in result.text
    assert engine.requests == []


async def test_a_folder_without_a_decider_says_so(tmp_path: Path) -> None:
    runtime, _, work = _setup(tmp_path)
    (work / "deciders" / "empty").mkdir()
    result = await _call(runtime, work, {"path": "deciders/empty"})
    assert result.is_error
    assert "deciders/empty holds no decider.yaml" in result.text
