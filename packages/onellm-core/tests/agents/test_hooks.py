"""Hooks: the points and their decisions, registration forms, fail closed and fail open, records, definition hooks
through a hook source, and nothing built for them when there are none."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from onellm import StopReason
from onellm.agents import (
    AfterInference,
    AfterToolCall,
    BeforeInference,
    BeforeToolCall,
    Block,
    Hook,
    Hooks,
    ModifyInputs,
    ModifyMessage,
    ModifyRequest,
    ModifyResult,
    OnCost,
    OnMessage,
    OnStateChange,
    OnStreamEvent,
    Respond,
)
from onellm.errors import CapabilityMissingError, HookBlockedError
from onellm.messages import TextPart

from .conftest import Harness, calls, done, say

pytestmark = pytest.mark.anyio


# ------------------------------------------------------------------------------------------------- registration


def test_hooks_register_objects_functions_and_decorators() -> None:
    hooks = Hooks()

    class Audit(Hook):
        def before_tool_call(self, ctx: BeforeToolCall) -> None:
            return None

        async def on_cost(self, ctx: OnCost) -> None:
            return None

    class Plain:
        def after_inference(self, ctx: AfterInference) -> None:
            return None

    audit = Audit()
    hooks.add(audit)
    hooks.add(Plain())

    def observe(ctx: OnMessage) -> None:
        return None

    hooks.add(observe, point="onMessage")

    @hooks.before_inference
    async def first(ctx: BeforeInference) -> None:
        return None

    assert [
        (p, type(h).__name__ if not callable(h) or isinstance(h, Hook | Plain) else h.__name__) for p, h in hooks
    ] == [
        ("beforeInference", "first"),
        ("afterInference", "Plain"),
        ("beforeToolCall", "Audit"),
        ("onMessage", "observe"),
        ("onCost", "Audit"),
    ]
    assert len(hooks) == 5
    assert hooks.at("before_tool_call") == (audit,)
    assert hooks.remove(audit)
    assert len(hooks) == 3
    with pytest.raises(TypeError, match="needs its point"):
        hooks.add(observe)
    with pytest.raises(ValueError, match="unknown hook point 'beforeEverything'"):
        hooks.add(observe, point="beforeEverything")
    with pytest.raises(TypeError, match="implements no hook point"):
        hooks.add(object())


# ------------------------------------------------------------------------------------------------ interceptors


async def test_before_inference_can_modify_the_request(harness: Harness) -> None:
    h = harness

    @h.runtime.hooks.before_inference
    def shorter(ctx: BeforeInference) -> ModifyRequest:
        return ModifyRequest(system="Be brief.", max_output_tokens=50)

    h.script(say("ok"))
    await h.runtime.run_agent(h.agent())
    request = h.provider.requests[0]
    assert (request.system, request.max_output_tokens) == ("Be brief.", 50)
    (record,) = h.kinds("hook")
    assert (record.point, record.hook, record.decision) == (
        "beforeInference",
        "test_before_inference_can_modify_the_request.<locals>.shorter",
        "modify",
    )


async def test_before_inference_block_fails_the_run(harness: Harness) -> None:
    h = harness
    h.runtime.hooks.add(lambda ctx: Block("no calls after hours"), point="beforeInference", name="curfew")
    run = await h.runtime.start_agent(h.agent())
    with pytest.raises(HookBlockedError) as caught:
        await run.result()
    error = caught.value
    assert (error.point, error.reason) == ("beforeInference", "no calls after hours")
    assert "no calls after hours" in str(error)
    assert h.provider.served == 0
    saved = await h.runtime.store.load(run.instance_id)  # type: ignore[arg-type]
    assert saved is not None
    assert saved.state == "error"
    assert saved.error is not None
    assert saved.error.type == "HookBlockedError"
    assert [m.user_text for m in saved.messages] == ["Do the task."]  # the unsent turn is not kept
    assert [(r.hook, r.decision, r.reason) for r in h.kinds("hook")] == [("curfew", "block", "no calls after hours")]


async def test_before_inference_respond_answers_without_the_model(harness: Harness) -> None:
    h = harness
    h.runtime.hooks.add(lambda ctx: Respond(text="From the cache."), point="beforeInference", name="cache")
    result = await h.runtime.run_agent(h.agent())
    assert (result.stop_reason, result.text) == (StopReason.WAITING, "From the cache.")
    assert h.provider.served == 0
    assert result.cost.total == 0
    assert [r.decision for r in h.kinds("hook")] == ["respond"]


async def test_after_inference_can_change_the_answer_or_block(harness: Harness) -> None:
    h = harness

    @h.runtime.hooks.after_inference
    def redact(ctx: AfterInference) -> ModifyMessage | None:
        return (
            ModifyMessage(text=ctx.message.text.replace("hunter2", "****")) if "hunter2" in ctx.message.text else None
        )

    h.script(say("The password is hunter2."))
    result = await h.runtime.run_agent(h.agent())
    assert result.text == "The password is ****."
    saved = await h.runtime.store.load(result.instance.id)  # type: ignore[arg-type]
    assert saved is not None
    assert saved.messages[-1].text == "The password is ****."

    h.runtime.hooks.clear()
    h.runtime.hooks.add(lambda ctx: Block("unsafe"), point="afterInference", name="guard")
    h.script(calls(("e", "echo", {"text": "x"})))
    run = await h.runtime.start_agent(h.agent())
    with pytest.raises(HookBlockedError, match="unsafe"):
        await run.result()
    assert h.ran == []
    saved = await h.runtime.store.load(run.instance_id)  # type: ignore[arg-type]
    assert saved is not None
    assert saved.state == "error"
    call = saved.messages[-1].tool_calls[0]
    assert call.is_error
    assert call.result == [TextPart("Not run: a hook blocked the answer that made this call.")]


async def test_before_tool_call_modify_block_and_respond(harness: Harness) -> None:
    h = harness

    def gate(ctx: BeforeToolCall) -> Any:
        text = ctx.inputs.get("text")
        if text == "shout":
            return ModifyInputs({"text": "SHOUT"})
        if text == "forbidden":
            return Block("not that word")
        if text == "cached":
            return Respond(result="from the hook")
        return None

    h.runtime.hooks.add(gate, point="beforeToolCall")
    h.script(
        calls(
            ("a", "echo", {"text": "shout"}), ("b", "echo", {"text": "forbidden"}), ("c", "echo", {"text": "cached"})
        ),
        done(),
    )
    result = await h.runtime.run_agent(h.agent())
    a, b, c = result.instance.messages[0].tool_calls
    assert a.result == [TextPart("echo: SHOUT")]
    assert b.is_error
    assert b.result == [TextPart("A hook blocked this call: not that word")]
    assert not c.is_error
    assert c.result == [TextPart("from the hook")]
    assert h.ran == [("echo", {"text": "SHOUT"})]
    assert [r.decision for r in h.kinds("hook")] == ["modify", "block", "respond"]


async def test_after_tool_call_modify_and_block(harness: Harness) -> None:
    h = harness

    class Results(Hook):
        def after_tool_call(self, ctx: AfterToolCall) -> Any:
            if ctx.call.tool != "echo":
                return None
            if ctx.inputs["text"] == "secret":
                return Block("leaks a secret")
            return ModifyResult(ctx.result.text.upper())

    h.runtime.hooks.add(Results())
    h.script(calls(("a", "echo", {"text": "hello"}), ("b", "echo", {"text": "secret"})), done())
    result = await h.runtime.run_agent(h.agent())
    a, b = result.instance.messages[0].tool_calls
    assert a.result == [TextPart("ECHO: HELLO")]
    assert b.is_error
    assert b.result == [TextPart("A hook blocked this call's result: leaks a secret")]
    # the two calls ran together: their records come in finishing order
    assert sorted((r.hook, r.decision) for r in h.kinds("hook")) == [("Results", "block"), ("Results", "modify")]


async def test_interceptors_run_in_order_and_see_each_others_changes(harness: Harness) -> None:
    h = harness
    seen: list[str] = []

    def first(ctx: BeforeToolCall) -> ModifyInputs | None:
        if ctx.call.tool != "echo":
            return None
        seen.append("first:" + ctx.inputs["text"])
        return ModifyInputs({"text": ctx.inputs["text"] + "+1"})

    async def second(ctx: BeforeToolCall) -> ModifyInputs | None:
        if ctx.call.tool != "echo":
            return None
        seen.append("second:" + ctx.inputs["text"])
        return ModifyInputs({"text": ctx.inputs["text"] + "+2"})

    h.runtime.hooks.add(first, point="beforeToolCall")
    h.runtime.hooks.add(second, point="beforeToolCall")
    h.script(calls(("a", "echo", {"text": "x"})), done())
    await h.runtime.run_agent(h.agent())
    assert seen == ["first:x", "second:x+1"]
    assert h.ran == [("echo", {"text": "x+1+2"})]


# -------------------------------------------------------------------------------------- fail closed, fail open


async def test_an_interceptor_that_raises_blocks_the_step(harness: Harness) -> None:
    h = harness

    def broken(ctx: BeforeToolCall) -> None:
        if ctx.call.tool == "echo":
            raise KeyError("missing config")

    h.runtime.hooks.add(broken, point="beforeToolCall", name="broken")
    h.script(calls(("a", "echo", {"text": "x"})), done())
    result = await h.runtime.run_agent(h.agent())
    call = result.instance.messages[0].tool_calls[0]
    assert h.ran == []
    assert call.is_error
    assert call.result == [
        TextPart("A hook blocked this call: hook broken failed at beforeToolCall: KeyError: 'missing config'")
    ]
    (hook,) = h.kinds("hook")
    assert (hook.decision, hook.hook) == ("block", "broken")
    (error,) = h.kinds("error")
    assert (error.error_type, error.where) == ("KeyError", "hook broken at beforeToolCall")


async def test_a_before_inference_hook_that_raises_fails_the_run_closed(harness: Harness) -> None:
    h = harness

    def broken(ctx: BeforeInference) -> None:
        raise RuntimeError("policy server down")

    h.runtime.hooks.add(broken, point="beforeInference", name="policy")
    with pytest.raises(HookBlockedError, match="policy server down"):
        await h.runtime.run_agent(h.agent())
    assert h.provider.served == 0


async def test_a_decision_the_point_does_not_take_blocks_the_step(harness: Harness) -> None:
    h = harness
    h.runtime.hooks.add(
        lambda ctx: ModifyInputs({"x": 1}) if ctx.call.tool == "echo" else None, point="afterToolCall", name="confused"
    )
    h.script(calls(("a", "echo", {"text": "x"})), done())
    result = await h.runtime.run_agent(h.agent())
    call = result.instance.messages[0].tool_calls[0]
    assert call.is_error
    assert call.result is not None
    assert "afterToolCall takes Continue, ModifyResult, Block, not ModifyInputs" in call.result[0].text  # type: ignore[union-attr]


async def test_observers_see_messages_states_and_costs_and_fail_open(harness: Harness) -> None:
    h = harness
    states: list[tuple[str | None, str]] = []
    costs: list[tuple[object, object]] = []
    messages: list[str | None] = []

    class Watch(Hook):
        def on_state_change(self, ctx: OnStateChange) -> None:
            states.append((ctx.previous, ctx.state))

        async def on_cost(self, ctx: OnCost) -> None:
            costs.append((ctx.cost.total, ctx.total))

        def on_message(self, ctx: OnMessage) -> None:
            messages.append(ctx.message.id)
            raise RuntimeError("observer bug")

    h.runtime.hooks.add(Watch())
    h.script(calls(("a", "echo", {"text": "x"}), usage=(1000, 100)), done())
    result = await h.runtime.run_agent(h.agent())
    assert result.stop_reason is StopReason.COMPLETED
    assert states == [("running", "stopped")]
    from decimal import Decimal

    assert costs == [(Decimal("0.003000"), Decimal("0.003000"))]
    assert len(messages) == 3  # the prompt, then each answered turn
    errors = h.kinds("error")
    assert {e.where for e in errors} == {"hook Watch at onMessage"}
    assert all(e.error_type == "RuntimeError" for e in errors)


async def test_stream_event_observers_see_the_answer_as_it_streams(harness: Harness) -> None:
    h = harness
    seen: list[str] = []

    @h.runtime.hooks.on_stream_event
    def watch(ctx: OnStreamEvent) -> None:
        seen.append(type(ctx.event).__name__)

    h.script(say("streamed answer"))
    result = await h.runtime.run_agent(h.agent())
    assert result.text == "streamed answer"
    assert seen[0] == "MessageStart"
    assert "TextDelta" in seen
    assert seen[-1] == "Done"


async def test_a_run_without_hooks_builds_no_hook_context(harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    from onellm.agents import _hooks

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a hook context was built")

    for name in (
        "BeforeInference",
        "AfterInference",
        "BeforeToolCall",
        "AfterToolCall",
        "OnMessage",
        "OnStateChange",
        "OnCost",
        "OnStreamEvent",
    ):
        monkeypatch.setattr(_hooks, name, refuse)
    monkeypatch.setattr(_hooks.RunHooks, "__init__", refuse)
    h = harness
    h.script(calls(("a", "echo", {"text": "x"}), usage=(10, 1)), done())
    result = await h.runtime.run_agent(h.agent())
    assert result.stop_reason is StopReason.COMPLETED
    assert h.runtime._hooks is None  # never even made a registry
    assert h.kinds("hook") == []


# ----------------------------------------------------------------------------------------------- definition hooks


@dataclass
class FakeDecision:
    action: str = "continue"
    reason: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    failed: bool = False


@dataclass
class FakeHook:
    name: str
    points: tuple[str, ...]
    answers: dict[str, FakeDecision]
    calls: list[tuple[str, Any]]

    @property
    def observer_only(self) -> bool:
        return all(p in ("onMessage", "onStateChange", "onCost") for p in self.points)

    async def call(self, point: str, payload: Any, **options: Any) -> FakeDecision:
        self.calls.append((point, payload))
        if payload.get("tool", "echo") != "echo":
            return FakeDecision()  # these hooks care about echo only
        return self.answers.get(point, FakeDecision())


@dataclass
class FakeSource:
    hooks: list[FakeHook]
    loaded: list[tuple[Sequence[Any], Any]] = field(default_factory=list)

    async def load(
        self, entries: Sequence[Any], *, capabilities: Any, base: Any = None, definition: str | None = None
    ) -> list[FakeHook]:
        self.loaded.append((entries, base))
        return self.hooks


def _with_hooks(h: Harness, points: str = "") -> Any:
    return h.agent(extra=f"hooks:\n  - file: hooks/guard.js\n{points}")


async def test_definition_hooks_run_through_the_hook_source_inside_host_hooks(harness: Harness) -> None:
    h = harness
    order: list[str] = []
    seen: list[tuple[str, Any]] = []
    js = FakeHook(
        "hooks/guard.js",
        ("beforeToolCall", "afterToolCall", "onMessage"),
        {
            "beforeToolCall": FakeDecision("modify", "policy", {"inputs": {"text": "from js"}}),
            "afterToolCall": FakeDecision("modify", None, {"result": {"text": "rewritten", "isError": False}}),
        },
        seen,
    )
    source = FakeSource([js])
    h.runtime.hook_source = source

    @h.runtime.hooks.before_tool_call
    def host_before(ctx: BeforeToolCall) -> None:
        order.append(f"host before {ctx.call.tool} {ctx.inputs.get('text')}")

    @h.runtime.hooks.after_tool_call
    def host_after(ctx: AfterToolCall) -> None:
        order.append(f"host after {ctx.call.tool} {ctx.result.text}")

    h.script(calls(("a", "echo", {"text": "model"})), done())
    result = await h.runtime.run_agent(_with_hooks(h))
    assert h.ran == [("echo", {"text": "from js"})]
    assert result.instance.messages[0].tool_calls[0].result == [TextPart("rewritten")]
    # the host's hooks wrap the definition's: before it on the way in, after it on the way out
    assert order[:2] == ["host before echo model", "host after echo rewritten"]
    points = [p for p, _ in seen]
    # the prompt, then the answer as it arrives, then its call
    assert points[:4] == ["onMessage", "onMessage", "beforeToolCall", "afterToolCall"]
    before = next(payload for p, payload in seen if p == "beforeToolCall")
    assert before == {
        "instanceId": result.instance.id,
        "toolCallId": "a",
        "tool": "echo",
        "inputs": {"text": "model"},
        "injected": False,
    }
    assert source.loaded[0][1] == h.folder
    assert [(r.hook, r.decision, r.reason) for r in h.kinds("hook")] == [
        ("hooks/guard.js", "modify", "policy"),
        ("hooks/guard.js", "modify", None),
    ]


async def test_a_definition_hook_that_failed_blocks_closed(harness: Harness) -> None:
    h = harness
    js = FakeHook(
        "hooks/guard.js",
        ("beforeToolCall",),
        {"beforeToolCall": FakeDecision("block", "hook hooks/guard.js failed at beforeToolCall: boom", failed=True)},
        [],
    )
    h.runtime.hook_source = FakeSource([js])
    h.script(calls(("a", "echo", {"text": "x"})), done())
    result = await h.runtime.run_agent(_with_hooks(h))
    call = result.instance.messages[0].tool_calls[0]
    assert call.is_error
    assert "boom" in call.result[0].text
    assert h.ran == []


async def test_a_definition_hook_can_answer_for_the_model(harness: Harness) -> None:
    h = harness
    js = FakeHook(
        "hooks/guard.js",
        ("beforeInference",),
        {"beforeInference": FakeDecision("respond", None, {"text": "answered by the hook"})},
        [],
    )
    h.runtime.hook_source = FakeSource([js])
    result = await h.runtime.run_agent(_with_hooks(h))
    assert result.text == "answered by the hook"
    assert h.provider.served == 0
    (point, payload) = js.calls[0]
    assert point == "beforeInference"
    assert payload["system"] == "You help."
    assert payload["tools"] == ["echo", "task_complete"]
    assert payload["messages"][0]["user"] == [{"text": "Do the task."}]


async def test_hook_files_without_a_hook_source_fail_closed(harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    from onellm.agents import _hooks

    monkeypatch.setattr(_hooks, "_INSTALLED", [None])
    h = harness
    with pytest.raises(CapabilityMissingError, match=r"onellm-js package \(pip install onellm-js\)") as caught:
        await h.runtime.run_agent(_with_hooks(h))
    assert "hooks/guard.js" in str(caught.value)
    assert h.provider.served == 0
    # lenient: observer-only entries are dropped with a warning ...
    h.script(say("ok"))
    result = await h.runtime.run_agent(_with_hooks(h, "    points: [onMessage, onCost]\n"), strict=False)
    assert result.text == "ok"
    assert any("was left out: no hook source is installed" in w.message for w in result.warnings)
    # ... but an interceptor never is
    with pytest.raises(CapabilityMissingError):
        await h.runtime.run_agent(_with_hooks(h, "    points: [beforeToolCall]\n"), strict=False)


async def test_resuming_an_instance_whose_definition_names_hooks_needs_a_hook_source(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    from onellm.agents import _hooks

    h = harness
    h.runtime.hook_source = FakeSource([FakeHook("hooks/guard.js", ("onCost",), {}, [])])
    h.script(say("waiting"))
    result = await h.runtime.run_agent(_with_hooks(h))
    h.runtime.hook_source = None
    monkeypatch.setattr(_hooks, "_INSTALLED", [None])
    run = await h.runtime.get_agent(result.instance.id)  # type: ignore[arg-type]
    await run.message("go on")
    with pytest.raises(CapabilityMissingError, match="onellm-js"):
        await run.result()
    assert h.provider.served == 1
