"""A `decider.js` or `decider.ts` beside a `decider.yaml` is the decider's logic when core runs it: found through the
`onellm.decider_logic` entry point this package installs, run in the sandbox, for `Runtime.decide` and for the
`run_decider` tool alike."""

from __future__ import annotations

import importlib.metadata
import shutil
from pathlib import Path

import pytest

from onellm import Capabilities, Runtime, ToolContext
from onellm.instances import MemoryInstanceStore
from onellm.testing import ScriptedDecisionProvider
from onellm.tools.builtin import builtin_tools
from onellm_js import JsDeciderLogic

pytestmark = pytest.mark.anyio

TRIAGE = Path(__file__).parent / "fixtures" / "deciders" / "triage-ticket"
LOGIC = """\
export function prepare(inputs) {
  return { ...inputs, body: inputs.body ?? "(no body)" };
}
export function decide({ answers, inputs }) {
  return {
    team: answers.topic.choice,
    escalate: answers.urgency.score >= 2 || answers.angry.noul > 0.4,
    note: inputs.customer ? `for ${inputs.customer}` : undefined,
  };
}
"""


def _answer(question: object) -> object:
    kind = getattr(question, "type", None)
    if kind == "choice":
        return "technical"
    if kind == "score":
        return 2.0
    return 0.1


def test_the_entry_point_names_the_loader() -> None:
    [entry] = importlib.metadata.entry_points(group="onellm.decider_logic", name="javascript")
    assert entry.load() is JsDeciderLogic


async def test_core_runs_decider_js_beside_the_definition(tmp_path: Path) -> None:
    folder = tmp_path / "triage-ticket"
    folder.mkdir()
    shutil.copy(TRIAGE / "decider.yaml", folder / "decider.yaml")
    (folder / "decider.js").write_text(LOGIC, encoding="utf-8")
    engine = ScriptedDecisionProvider("typesafe", answer=_answer)
    runtime = Runtime(environ={}, store=MemoryInstanceStore())
    runtime.providers.set("typesafe", engine)
    result = await runtime.decide(folder, {"title": "Outage", "customer": "ACME"})
    assert engine.requests[0].state == {"ticket": {"title": "Outage", "body": "(no body)", "customer": "ACME"}}
    assert result.outputs == {"team": "technical", "escalate": True, "note": "for ACME"}
    assert result.instance.extra["decider"]["outputs"] == result.outputs


async def test_run_decider_runs_typescript_logic_in_the_sandbox(tmp_path: Path) -> None:
    work = tmp_path / "work"
    shutil.copytree(TRIAGE, work / "deciders" / "triage-ticket")
    engine = ScriptedDecisionProvider("typesafe", answer=_answer)
    runtime = Runtime(environ={}, store=MemoryInstanceStore(), capabilities=Capabilities.files(work))
    runtime.providers.set("typesafe", engine)
    tool = {t.name: t for t in builtin_tools()}["run_decider"]
    ctx = ToolContext(capabilities=runtime.capabilities, working_directory=work, runtime=runtime)
    result = await tool.invoke({"path": "deciders/triage-ticket", "inputs": {"title": "t", "customer": "Bo"}}, ctx)
    assert not result.is_error, result.text
    # The fixture's decide reads answers.angry.probability, which a noul answer does not have: no escalation from it.
    assert result.value["outputs"] == {"team": "technical", "escalate": True, "note": "escalated for Bo"}
