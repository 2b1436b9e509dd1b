"""A definition's JavaScript hook files in a real agent run: found through the `onellm.hook_sources` entry point, run at
the loop's points, failing closed and open as the agent loop says."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

import onellm
from onellm.messages import TextPart, Usage
from onellm.records import EventRecordSink, Record
from onellm.testing import ScriptedProvider, ScriptedToolCall, ScriptStep
from onellm_js import JsHookSource, JsSandboxOptions

pytestmark = pytest.mark.anyio

HOOKS = """
export function beforeToolCall(call) {
  if (call.tool === "echo" && call.inputs.text === "rm -rf") return { action: "block", reason: "not that" };
  if (call.tool === "echo" && call.inputs.text === "loud") return { action: "modify", inputs: { text: "LOUD" } };
  if (call.tool === "echo" && call.inputs.text === "boom") throw new Error("hook bug");
}
export function afterToolCall(done) {
  if (done.result.text === "echo: secret") return { action: "modify", result: { text: "[redacted]" } };
}
export function onCost(cost) { if (cost.total > 0) throw new Error("costs are watched, not stopped"); }
"""

AGENT = """\
model: claude-sonnet
references:
  - tools: [echo, task_complete]
hooks:
  - file: hooks/guard.js
initialPrompts:
  - user:
      - text: go
"""


@onellm.tool
def echo(text: str) -> str:
    """Says it back.

    Args:
        text: What.
    """
    return f"echo: {text}"


def _call(*items: tuple[str, str, dict[str, Any]], usage: tuple[int, int] | None = None) -> ScriptStep:
    return ScriptStep(
        tool_calls=tuple(ScriptedToolCall(i, t, a) for i, t, a in items),
        usage=Usage(input_tokens=usage[0], output_tokens=usage[1]) if usage else None,
    )


def test_the_package_offers_its_hook_source_by_entry_point() -> None:
    (entry,) = entry_points(group="onellm.hook_sources", name="javascript")
    assert entry.load() is JsHookSource


async def test_javascript_hooks_run_in_the_agent_loop(
    tmp_path: Path, make_options: Callable[..., JsSandboxOptions]
) -> None:
    (tmp_path / "hooks").mkdir()
    (tmp_path / "hooks" / "guard.js").write_text(textwrap.dedent(HOOKS), encoding="utf-8")
    (tmp_path / "agent.yaml").write_text(AGENT, encoding="utf-8")
    records: list[Record] = []
    runtime = onellm.Runtime(
        capabilities=onellm.Capabilities.files(tmp_path), records=[EventRecordSink(records.append)], environ={}
    )
    runtime.hook_source = JsHookSource(make_options(fuel=10_000_000, time_limit=3.0))
    provider = ScriptedProvider("anthropic")
    runtime.providers.set("anthropic", provider)
    runtime.tools.add(echo)
    provider.enqueue(
        _call(
            ("a", "echo", {"text": "rm -rf"}),
            ("b", "echo", {"text": "loud"}),
            ("c", "echo", {"text": "secret"}),
            ("d", "echo", {"text": "boom"}),
            usage=(100, 10),
        ),
        _call(("t", "task_complete", {"result": "ok", "summary": "checked the hooks"})),
    )
    result = await runtime.run_agent(tmp_path / "agent.yaml")
    assert result.stop_reason is onellm.StopReason.COMPLETED
    a, b, c, d = result.instance.messages[0].tool_calls
    assert a.is_error
    assert a.result == [TextPart("A hook blocked this call: not that")]
    assert b.result == [TextPart("echo: LOUD")]
    assert c.result == [TextPart("[redacted]")]
    assert d.is_error  # the hook threw: the call is blocked (fails closed)
    assert d.result is not None
    assert "hook hooks/guard.js failed at beforeToolCall" in d.result[0].text  # type: ignore[union-attr]
    hook_records = sorted((r.point, r.decision) for r in records if r.kind == "hook")  # type: ignore[attr-defined]
    assert hook_records == [
        ("afterToolCall", "modify"),
        ("beforeToolCall", "block"),
        ("beforeToolCall", "block"),
        ("beforeToolCall", "modify"),
    ]
    # the observer failed open: an error record, and the run went on
    observer = [r for r in records if r.kind == "error" and "onCost" in (r.where or "")]  # type: ignore[attr-defined]
    assert len(observer) == 1


async def test_the_hook_source_is_found_without_being_set(tmp_path: Path) -> None:
    (tmp_path / "hooks").mkdir()
    (tmp_path / "hooks" / "guard.js").write_text(
        'export function beforeToolCall(call) { return { action: "respond", text: "answered by js" }; }\n',
        encoding="utf-8",
    )
    (tmp_path / "agent.yaml").write_text(AGENT, encoding="utf-8")
    runtime = onellm.Runtime(capabilities=onellm.Capabilities.files(tmp_path), environ={})
    provider = ScriptedProvider("anthropic")
    runtime.providers.set("anthropic", provider)
    runtime.tools.add(echo)
    provider.enqueue(_call(("a", "echo", {"text": "x"})), ScriptStep.text("done"))
    result = await runtime.run_agent(tmp_path / "agent.yaml")
    assert result.instance.messages[0].tool_calls[0].result == [TextPart("answered by js")]


async def test_a_hook_file_outside_the_grants_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    inside = tmp_path / "inside"
    (outside / "hooks").mkdir(parents=True)
    inside.mkdir()
    (outside / "hooks" / "guard.js").write_text("export function onCost() {}\n", encoding="utf-8")
    (inside / "agent.yaml").write_text(AGENT.replace("hooks/guard.js", "../outside/hooks/guard.js"), encoding="utf-8")
    runtime = onellm.Runtime(capabilities=onellm.Capabilities.files(inside), environ={})
    runtime.providers.set("anthropic", ScriptedProvider("anthropic"))
    runtime.tools.add(echo)
    with pytest.raises(onellm.CapabilityMissingError, match=r"\.\./outside/hooks/guard\.js"):
        await runtime.run_agent(inside / "agent.yaml")
