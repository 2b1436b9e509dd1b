"""Hook files: loading through the run's read grant, the interceptor table, failing closed and open, records."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from onellm.capabilities import Capabilities
from onellm.definitions import HookEntry
from onellm.errors import BadDefinitionError, CapabilityMissingError
from onellm.records import ErrorRecord, HookRecord
from onellm.tools import ToolContext
from onellm_js import HOOK_POINTS, JsFailure, JsHook, JsHookSource, JsSandbox, JsSandboxOptions

pytestmark = pytest.mark.anyio

GUARD = """
export function beforeToolCall(call) {
  if (call.tool === "delete_everything") return { action: "block", reason: "not today" };
  if (call.tool === "shell") return { action: "requireApproval" };
  if (call.tool === "cached") return { action: "respond", text: "from cache" };
  if (call.tool === "rename") return { action: "modify", inputs: { ...call.inputs, name: call.inputs.name.toUpperCase() } };
  if (call.tool === "odd") return { action: "explode" };
  if (call.tool === "shape") return { action: "modify", inputs: "not an object" };
  if (call.tool === "throws") throw new Error("hook bug");
  if (call.tool === "spins") for (;;) {}
}
export function beforeInference(request) {
  if (request.mode === "quiet") return { action: "modify", system: "Be brief.", maxOutputTokens: 100, temperature: 0.2 };
  if (request.mode === "canned") return { action: "respond", message: { role: "assistant", text: "canned" } };
  if (request.mode === "both") return { action: "respond", message: {}, text: "x" };
  if (request.mode === "hot") return { action: "modify", temperature: 5 };
}
export function afterToolCall(done) {
  if (done.result === "secret") return { action: "modify", result: { text: "[redacted]", isError: false } };
  if (done.result === "json") return { action: "modify", result: { text: "a", json: 1 } };
}
export function beforeCompaction() { return { action: "block", reason: "keep everything" } }
export function afterInference(response) { return response.ok ? undefined : { action: "modify", text: "fixed" } }
export function onMessage(message) { if (message.bad) throw new Error("observer bug"); return { action: "block" } }
"""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


@pytest.fixture
def source(make_options: Callable[..., JsSandboxOptions]) -> JsHookSource:
    return JsHookSource(make_options(fuel=10_000_000, time_limit=3.0))


@pytest.fixture
async def guard(tmp_path: Path, source: JsHookSource) -> JsHook:
    write(tmp_path / "agents" / "hooks", "guard.js", GUARD)
    hooks = await source.load(
        [HookEntry(file="hooks/guard.js")], capabilities=Capabilities.files(tmp_path), base=tmp_path / "agents"
    )
    return hooks[0]


async def test_loading_finds_the_points_a_file_handles(guard: JsHook) -> None:
    assert (guard.name, guard.points, guard.requires) == (
        "hooks/guard.js",
        ("beforeInference", "afterInference", "beforeToolCall", "afterToolCall", "beforeCompaction", "onMessage"),
        (),
    )
    assert guard.handles("beforeToolCall")
    assert not guard.handles("onCost")
    assert not guard.observer_only


async def test_interceptor_decisions(guard: JsHook) -> None:
    async def decide(point: str, payload: dict[str, Any]) -> tuple[str, str | None, dict[str, Any], bool]:
        d = await guard.call(point, payload)
        return d.action, d.reason, d.fields, d.failed

    assert await decide("beforeToolCall", {"tool": "read_file", "inputs": {}}) == ("continue", None, {}, False)
    assert await decide("beforeToolCall", {"tool": "delete_everything"}) == ("block", "not today", {}, False)
    assert await decide("beforeToolCall", {"tool": "shell"}) == ("requireApproval", None, {}, False)
    assert await decide("beforeToolCall", {"tool": "cached"}) == ("respond", None, {"text": "from cache"}, False)
    assert await decide("beforeToolCall", {"tool": "rename", "inputs": {"name": "ada", "n": 1}}) == (
        "modify",
        None,
        {"inputs": {"name": "ADA", "n": 1}},
        False,
    )
    assert await decide("beforeInference", {"mode": "quiet"}) == (
        "modify",
        None,
        {"system": "Be brief.", "maxOutputTokens": 100, "temperature": 0.2},
        False,
    )
    assert await decide("beforeInference", {"mode": "canned"}) == (
        "respond",
        None,
        {"message": {"role": "assistant", "text": "canned"}},
        False,
    )
    assert await decide("afterToolCall", {"result": "secret"}) == (
        "modify",
        None,
        {"result": {"text": "[redacted]", "isError": False}},
        False,
    )
    assert await decide("afterInference", {"ok": False}) == ("modify", None, {"text": "fixed"}, False)
    assert await decide("beforeCompaction", {}) == ("block", "keep everything", {}, False)


@pytest.mark.parametrize(
    ("point", "payload", "reason"),
    [
        (
            "beforeToolCall",
            {"tool": "odd"},
            "returned an invalid decision at beforeToolCall: unknown action 'explode' at beforeToolCall; "
            "the actions there are continue, modify, respond, requireApproval, block",
        ),
        (
            "beforeToolCall",
            {"tool": "shape"},
            "returned an invalid decision at beforeToolCall: inputs must be an object",
        ),
        (
            "beforeInference",
            {"mode": "both"},
            "returned an invalid decision at beforeInference: 'respond' at beforeInference needs exactly one of message, text",
        ),
        (
            "beforeInference",
            {"mode": "hot"},
            "returned an invalid decision at beforeInference: temperature must be a number from 0 to 2",
        ),
        (
            "afterToolCall",
            {"result": "json"},
            "returned an invalid decision at afterToolCall: result must have exactly one of text and json",
        ),
        ("beforeToolCall", {"tool": "throws"}, "failed at beforeToolCall: Error: hook bug\n    at guard.js:8:41"),
    ],
)
async def test_interceptors_fail_closed(guard: JsHook, point: str, payload: dict[str, Any], reason: str) -> None:
    decision = await guard.call(point, payload)
    assert (decision.action, decision.failed) == ("block", True)
    assert decision.reason is not None
    assert decision.reason.startswith(f"hook hooks/guard.js {reason}")
    record = decision.to_record(instance_id="i-1")
    assert isinstance(record, HookRecord)
    assert (record.point, record.hook, record.decision, record.reason, record.instance_id) == (
        point,
        "hooks/guard.js",
        "block",
        decision.reason,
        "i-1",
    )


async def test_a_limit_fails_closed_and_the_caller_can_fail_open(guard: JsHook) -> None:
    closed = await guard.call("beforeToolCall", {"tool": "spins"})
    assert (closed.action, closed.failed) == ("block", True)
    assert closed.error is not None
    assert closed.error.kind in (JsFailure.FUEL, JsFailure.TIME)
    opened = await guard.call("beforeToolCall", {"tool": "throws"}, fail_closed=False)
    assert (opened.action, opened.failed) == ("continue", True)


async def test_observers_fail_open_and_cannot_intercept(guard: JsHook) -> None:
    quiet = await guard.call("onMessage", {"text": "hi"})
    assert (quiet.action, quiet.failed, quiet.recorded, quiet.to_record()) == ("continue", False, False, None)
    broken = await guard.call("onMessage", {"bad": True}, owner="agent-7")
    assert (broken.action, broken.failed, broken.recorded) == ("continue", True, True)
    record = broken.to_record(instance_id="agent-7")
    assert isinstance(record, ErrorRecord)
    assert (record.error_type, record.where) == ("hookFailed", "hook hooks/guard.js at onMessage")
    assert record.message is not None
    assert record.message.startswith("hook hooks/guard.js failed at onMessage: Error: observer bug")


async def test_calls_are_checked(guard: JsHook) -> None:
    with pytest.raises(ValueError, match="unknown hook point"):
        await guard.call("beforeLunch", {})
    with pytest.raises(ValueError, match="does not handle onCost"):
        await guard.call("onCost", {})


async def test_a_hook_file_outside_the_read_grant_is_refused_without_showing_it(
    tmp_path: Path, source: JsHookSource
) -> None:
    write(tmp_path / "outside", "evil.js", "export function onCost() {} // TOP SECRET CONTENT")
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "linked.js").symlink_to(tmp_path / "outside" / "evil.js")
    caps = Capabilities.files(agents)
    for entry in ("../outside/evil.js", "linked.js", str(tmp_path / "outside" / "evil.js")):
        with pytest.raises(CapabilityMissingError) as info:
            await source.load([{"file": entry}], capabilities=caps, base=agents)
        message = str(info.value)
        assert message.startswith(f"{entry!r} cannot be read through the run's read grant")
        assert "SECRET" not in message


async def test_entries_are_checked(tmp_path: Path, source: JsHookSource) -> None:
    caps = Capabilities.files(tmp_path)
    write(tmp_path, "obs.js", "export function onCost(c) {}\nexport function helper() {}\n")
    write(tmp_path, "none.js", "export function helper() {}\n")
    write(tmp_path, "badhook.js", "export const hook = { requires: ['shell'] };\nexport function onCost() {}\n")
    with pytest.raises(BadDefinitionError, match="at most 16 hook files"):
        await source.load([{"file": "obs.js"}] * 17, capabilities=caps, base=tmp_path)
    with pytest.raises(BadDefinitionError, match="does not export a function for onMessage"):
        await source.load([{"file": "obs.js", "points": ["onMessage"]}], capabilities=caps, base=tmp_path)
    with pytest.raises(BadDefinitionError, match="unknown hook point 'onLunch'"):
        await source.load([{"file": "obs.js", "points": ["onLunch"]}], capabilities=caps, base=tmp_path)
    with pytest.raises(BadDefinitionError, match="this one exports none"):
        await source.load([{"file": "none.js"}], capabilities=caps, base=tmp_path)
    with pytest.raises(BadDefinitionError) as info:
        await source.load([{"file": "badhook.js"}], capabilities=caps, base=tmp_path)
    assert (info.value.file, info.value.line, info.value.column) == ("badhook.js", 1, 14)
    (hook,) = await source.load([{"file": "obs.js"}], capabilities=caps, base=tmp_path)
    assert (hook.points, hook.observer_only) == (("onCost",), True)
    assert HOOK_POINTS[-1] == "onCost"


async def test_a_hook_declares_what_ctx_may_use(
    tmp_path: Path, source: JsHookSource, make_context: Callable[..., ToolContext]
) -> None:
    (tmp_path / "policy.txt").write_text("blocked: rm")
    write(
        tmp_path,
        "reader.js",
        """
        export const hook = { requires: ["fileRead"] };
        export async function beforeToolCall(call, ctx) {
          const policy = await ctx.readFile("policy.txt");
          ctx.log("checked " + call.tool);
          ctx.addCost({ counter: "policyChecks", quantity: 1, unitPrice: "0.001" });
          return policy.includes(call.tool) ? { action: "block", reason: policy } : undefined;
        }
        """,
    )
    write(
        tmp_path, "plain.js", "export async function beforeToolCall(call, ctx) { await ctx.readFile('policy.txt') }\n"
    )
    reader = await source.load_file(tmp_path / "reader.js")
    assert reader.requires == ("fileRead",)
    ctx = make_context(tmp_path)
    decision = await reader.call("beforeToolCall", {"tool": "rm"}, context=ctx)
    assert (decision.action, decision.reason, decision.logs) == ("block", "blocked: rm", ["checked rm"])
    assert [line.counter for line in decision.cost_lines] == ["policyChecks"]
    plain = await source.load_file(tmp_path / "plain.js")
    refused = await plain.call("beforeToolCall", {"tool": "x"}, context=make_context(tmp_path))
    assert refused.action == "block"
    assert refused.reason is not None
    assert "needs 'fileRead' in the tool's requires list" in refused.reason


async def test_a_hook_file_whose_top_level_never_ends_fails_to_load(tmp_path: Path, source: JsHookSource) -> None:
    write(tmp_path, "stuck.js", "export function onCost() {}\nwhile (true) {}\n")
    with pytest.raises(BadDefinitionError, match="the hook file failed to load: fuel limit"):
        await source.load_file(tmp_path / "stuck.js")


def test_the_sandbox_of_a_source_is_shared(source: JsHookSource) -> None:
    assert isinstance(source.sandbox, JsSandbox)
