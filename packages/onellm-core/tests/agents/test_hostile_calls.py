"""What the model, the tools and the hooks hand the loop when they misbehave: arguments that are not an object, names
that are no tool's, repeated or empty call ids, hundreds of calls, odd return values, exceptions past `Exception`,
hooks that raise, answer with the wrong decision or a decision that cannot be used. Each ends as the Agents page says
(an error result the model reads and the loop goes on, or a typed error), with its records written and the saved
instance readable and able to go on."""

from __future__ import annotations

import datetime
import time
from typing import Any

import anyio
import msgspec
import pytest

import onellm
from onellm import StopReason
from onellm.agents import (
    AfterInference,
    AfterToolCall,
    BeforeCompaction,
    BeforeInference,
    BeforeToolCall,
    Block,
    ModifyInputs,
    ModifyMessage,
    ModifyRequest,
    ModifyResult,
    RequireApproval,
    Respond,
)
from onellm.errors import HookBlockedError, StorageError
from onellm.instances import FileInstanceStore, Instance
from onellm.messages import JsonPart, Message, TextPart, ToolCall
from onellm.records import Record
from onellm.tools import ToolResult

from .conftest import Harness, calls, done, make_runtime, say

pytestmark = pytest.mark.anyio


async def read_back(h: Harness, instance_id: str | None) -> Instance:
    """The instance as a new store over the same folder reads it."""
    assert instance_id is not None
    loaded = await FileInstanceStore(h.folder / "instances", durable=False).load(instance_id)
    assert loaded is not None
    return loaded


async def goes_on(h: Harness, instance_id: str | None, *tools: Any) -> onellm.AgentResult[Any]:
    """Message the saved instance through a new runtime over the same store: the run takes it up again."""
    assert instance_id is not None
    records: list[Record] = []
    store = FileInstanceStore(h.folder / "instances", durable=False)
    runtime, provider = make_runtime(h.folder, store, [], records)
    runtime.tools.add(*tools)
    provider.enqueue(say("going on"))
    run = await runtime.get_agent(instance_id)
    await run.message("Go on.")
    result = await run.result()
    assert result.text == "going on"
    return result


def texts(result: list[Any] | None) -> str:
    assert result is not None
    return "".join(p.text for p in result if isinstance(p, TextPart))


# ------------------------------------------------------------------------------------------------ the model's side


async def test_arguments_that_are_not_a_json_object_are_error_results_kept_as_sent(file_harness: Harness) -> None:
    h = file_harness
    long_text = "[" + "1, " * 200 + "1]"
    h.script(
        calls(
            ("n", "echo", "null"),
            ("i", "echo", "42"),
            ("s", "echo", '"text"'),
            ("l", "echo", long_text),
            ("x", "echo", "{not json"),
            ("e", "echo", ""),
        ),
        done(),
    )
    result = await h.runtime.run_agent(h.agent())
    assert result.stop_reason is StopReason.COMPLETED
    assert h.ran == []
    first = result.instance.messages[0].tool_calls
    assert all(c.is_error for c in first[:5])
    assert texts(first[0].result) == "The arguments of tool 'echo' are not a JSON object: null"
    assert texts(first[3].result) == f"The arguments of tool 'echo' are not a JSON object: {long_text[:200]}..."
    saved = await read_back(h, result.instance.id)
    kept = saved.messages[0].tool_calls
    assert [c.invalid_inputs for c in kept[:5]] == ["null", "42", '"text"', long_text, "{not json"]
    assert [c.result for c in kept] == [c.result for c in first]


async def test_tool_names_that_are_empty_spaced_or_in_another_case_are_unknown(harness: Harness) -> None:
    h = harness
    h.script(
        calls(
            ("a", "", {"text": "x"}), ("b", "ec ho", {"text": "x"}), ("c", "ECHO", {"text": "x"}), ("d", " echo", {})
        ),
        done(),
    )
    result = await h.runtime.run_agent(h.agent())
    assert h.ran == []
    answered = result.instance.messages[0].tool_calls
    assert all(c.is_error for c in answered)
    assert [texts(c.result) for c in answered] == [
        f"Unknown tool '{name}'. The tools you can call are: echo, task_complete."
        for name in ("", "ec ho", "ECHO", " echo")
    ]


def nested(levels: int) -> Any:
    value: Any = "bottom"
    for _ in range(levels):
        value = [value]
    return value


async def test_deeply_nested_and_huge_arguments(file_harness: Harness) -> None:
    # Saved as they came, arguments 400 levels deep made an instance file no store would read back.
    h = file_harness
    huge = "y" * 1_000_000
    h.script(
        calls(("d", "echo", {"text": nested(400)}), ("h", "echo", {"text": huge}), ("s", "echo", {"text": nested(60)})),
        done(),
    )
    result = await h.runtime.run_agent(h.agent())
    deep_call, huge_call, shallow_call = result.instance.messages[0].tool_calls
    assert deep_call.is_error
    assert texts(deep_call.result).startswith("The arguments of tool 'echo' nest deeper than 64 levels: {")
    assert deep_call.inputs == {}
    assert deep_call.invalid_inputs is not None
    assert msgspec.json.decode(deep_call.invalid_inputs) == {"text": nested(400)}  # kept whole, as text
    assert texts(huge_call.result) == "echo: " + huge
    assert texts(shallow_call.result) == "Argument 'text' must be a string, not an array."
    saved = await read_back(h, result.instance.id)
    assert saved.messages[0].tool_calls[0].invalid_inputs == deep_call.invalid_inputs
    assert saved.messages[0].tool_calls[1].inputs == {"text": huge}
    assert saved.messages[0].tool_calls[2].inputs == {"text": nested(60)}
    await goes_on(h, result.instance.id)


async def test_a_result_nested_too_deep_is_an_error_result_and_the_instance_reads_back(file_harness: Harness) -> None:
    h = file_harness

    @onellm.tool
    def tower(levels: int) -> Any:
        """Returns a value nested `levels` deep.

        Args:
            levels: How deep.
        """
        return nested(levels)

    h.runtime.tools.add(tower)
    h.script(calls(("d", "tower", {"levels": 150}), ("s", "tower", {"levels": 60})), done())
    result = await h.runtime.run_agent(h.agent(tools="[tower, task_complete]"))
    deep_call, shallow_call = result.instance.messages[0].tool_calls
    assert deep_call.is_error
    assert texts(deep_call.result) == (
        "Tool 'tower' returned a value that cannot be sent: the value is nested too deeply to be sent as JSON"
    )
    assert shallow_call.result == [JsonPart(json=nested(60))]
    saved = await read_back(h, result.instance.id)
    assert saved.messages[0].tool_calls[1].result == shallow_call.result
    await goes_on(h, result.instance.id, tower)


async def test_repeated_and_empty_call_ids_get_ids_of_their_own(file_harness: Harness) -> None:
    # A model that repeats an id (or sends none) must not leave a saved turn that the next run refuses to read.
    h = file_harness
    h.script(
        calls(
            ("a", "echo", {"text": "1"}),
            ("a", "echo", {"text": "2"}),
            ("", "echo", {"text": "3"}),
            ("", "echo", {"text": "4"}),
        ),
        done(),
    )
    result = await h.runtime.run_agent(h.agent())
    assert result.stop_reason is StopReason.COMPLETED
    assert sorted(h.ran, key=str) == [("echo", {"text": t}) for t in "1234"]
    answered = result.instance.messages[0].tool_calls
    ids = [c.id for c in answered]
    assert ids[0] == "a"
    assert all(ids)
    assert len(set(ids)) == 4
    assert [texts(c.result) for c in answered] == [f"echo: {t}" for t in "1234"]
    sent = h.provider.requests[1].messages[0].tool_calls
    assert [c.id for c in sent] == ids  # the model reads each result under the id its call now has
    saved = await read_back(h, result.instance.id)
    assert [c.id for c in saved.messages[0].tool_calls] == ids
    await goes_on(h, result.instance.id)


async def test_held_calls_with_one_id_are_decided_one_by_one(file_harness: Harness) -> None:
    h = file_harness
    h.script(calls(("a", "deploy", {"target": "staging"}), ("a", "deploy", {"target": "prod"})), done())
    run = await h.runtime.start_agent(h.agent(tools="[deploy, task_complete]"))
    held = await run.result()
    assert held.stop_reason is StopReason.WAITING_FOR_APPROVAL
    first, second = (e.tool_call_id for e in held.instance.pending_approvals)
    assert first == "a"
    assert second is not None
    assert second != "a"
    await run.approve("a")
    await run.deny(second, reason="not prod")
    result = await run.result()
    assert result.stop_reason is StopReason.COMPLETED
    assert h.ran == [("deploy", {"target": "staging"})]
    staging, prod = result.instance.messages[0].tool_calls
    assert texts(staging.result) == "deployed to staging"
    assert prod.is_error
    assert "not prod" in texts(prod.result)
    await goes_on(h, run.instance_id)


async def test_repeated_ids_from_a_hook_or_the_definition_get_ids_of_their_own(file_harness: Harness) -> None:
    h = file_harness

    def answer(ctx: BeforeInference) -> Respond | None:
        if ctx.turn > 1:
            return None
        repeated = [ToolCall(id="x", tool="echo", inputs={"text": t}) for t in ("1", "2")]
        return Respond(message=Message(tool_calls=repeated))

    h.runtime.hooks.add(answer, point="beforeInference", name="cache")
    extra = (
        "  - toolCalls:\n"
        "      - id: same\n        tool: echo\n        inputs: {text: first}\n"
        "      - id: same\n        tool: echo\n        inputs: {text: second}\n"
    )
    h.script(done())
    result = await h.runtime.run_agent(h.agent(extra=extra))
    assert result.stop_reason is StopReason.COMPLETED
    injected = next(m for m in result.instance.messages if m.tool_calls and m.tool_calls[0].injected)
    answered = next(m for m in result.instance.messages if m.tool_calls and m.tool_calls[0].id == "x")
    for message in (injected, answered):
        ids = [c.id for c in message.tool_calls]
        assert len(set(ids)) == 2
        assert all(c.result is not None and not c.is_error for c in message.tool_calls)
    assert sorted(t["text"] for _, t in h.ran) == ["1", "2", "first", "second"]
    await goes_on(h, result.instance.id)


async def test_a_modified_answer_with_repeated_ids_gets_ids_of_its_own(harness: Harness) -> None:
    h = harness

    def twice(ctx: AfterInference) -> ModifyMessage | None:
        if not ctx.message.tool_calls or ctx.message.tool_calls[0].tool != "echo":
            return None
        call = ctx.message.tool_calls[0]
        return ModifyMessage(message=Message(tool_calls=[call, call]))

    h.runtime.hooks.add(twice, point="afterInference", name="twice")
    h.script(calls(("e", "echo", {"text": "x"})), done())
    result = await h.runtime.run_agent(h.agent())
    first, second = result.instance.messages[0].tool_calls
    assert first.id == "e"
    assert second.id not in (None, "", "e")
    assert h.ran == [("echo", {"text": "x"})] * 2


async def test_hundreds_of_calls_in_one_turn_all_run_and_keep_call_order(file_harness: Harness) -> None:
    h = file_harness
    h.script(calls(*((f"c{i}", "echo", {"text": str(i)}) for i in range(300))), done())
    result = await h.runtime.run_agent(h.agent())
    assert result.stop_reason is StopReason.COMPLETED
    assert len(h.ran) == 300
    saved = await read_back(h, result.instance.id)
    answered = saved.messages[0].tool_calls
    assert [texts(c.result) for c in answered] == [f"echo: {i}" for i in range(300)]
    assert len(h.provider.requests[1].messages[0].tool_calls) == 300


async def test_task_complete_beside_other_calls_runs_the_rest_and_the_first_fitting_one_ends(harness: Harness) -> None:
    h = harness
    h.script(
        calls(
            ("bad", "task_complete", {"result": {"ok": "yes"}, "summary": "s"}),
            ("e", "echo", {"text": "after"}),
            ("good", "task_complete", {"result": {"ok": True}, "summary": "fits"}),
            ("late", "task_complete", {"result": {"ok": False}, "summary": "also"}),
        )
    )
    path = h.agent(
        extra="outputSchema:\n  type: object\n  properties:\n    ok:\n      type: boolean\n  required: [ok]\n"
        "  additionalProperties: false\n"
    )
    result = await h.runtime.run_agent(path)
    assert result.stop_reason is StopReason.COMPLETED
    assert result.output == {"ok": True}
    assert h.ran == [("echo", {"text": "after"})]
    bad, echo, good, late = result.instance.messages[0].tool_calls
    assert bad.is_error
    assert "ok" in texts(bad.result)
    assert not echo.is_error
    assert not good.is_error
    assert late.result is not None


async def test_task_complete_that_never_fits_leaves_the_loop_going(harness: Harness) -> None:
    h = harness
    path = h.agent(
        tools="[task_complete]",
        extra="outputSchema:\n  type: object\n  properties:\n    n:\n      type: integer\n  required: [n]\n",
    )
    h.script(
        calls(("t1", "task_complete", {"result": [1], "summary": "s"})),
        calls(("t2", "task_complete", {"result": None, "summary": "s"})),
        calls(("t3", "task_complete", "[]")),
        say("I give up."),
    )
    result = await h.runtime.run_agent(path)
    assert result.stop_reason is StopReason.WAITING
    answered = [m.tool_calls[0] for m in result.instance.messages if m.tool_calls]
    assert [c.is_error for c in answered] == [True, True, True]


# ------------------------------------------------------------------------------------------------ the tools' side


def odd_tools() -> list[Any]:
    @onellm.tool
    def nothing() -> None:
        """Returns None."""

    @onellm.tool
    def raw_bytes() -> Any:
        """Returns bytes."""
        return b"\x00\xff"

    @onellm.tool
    def an_object() -> Any:
        """Returns something with no JSON form."""
        return object()

    @onellm.tool
    def a_generator() -> Any:
        """Returns a generator."""
        return (i for i in range(3))

    @onellm.tool
    def number_keys() -> Any:
        """Returns a dict with keys that are not strings."""
        return {1: "one"}

    @onellm.tool
    def not_a_number() -> Any:
        """Returns NaN inside JSON."""
        return {"x": float("nan")}

    @onellm.tool
    def unawaited() -> Any:
        """A sync tool that returns a coroutine."""

        async def later() -> str:
            return "awaited"

        return later()

    @onellm.tool
    def a_lot() -> str:
        """Returns a huge string."""
        return "z" * 2_000_000

    @onellm.tool
    def value_error() -> str:
        """Raises ValueError."""
        raise ValueError("bad value")

    @onellm.tool
    def storage_error() -> str:
        """Raises an OnellmError."""
        raise StorageError("disk gone")

    @onellm.tool
    def hand_built() -> Any:
        """Returns a ToolResult whose JSON part holds something with no JSON form."""
        return ToolResult(parts=[JsonPart(json={"at": object()})])

    @onellm.tool
    def dated() -> Any:
        """Returns a ToolResult whose JSON part holds a date."""
        return ToolResult(parts=[JsonPart(json={"on": datetime.date(2026, 1, 2)})])

    @onellm.tool
    def error_word() -> Any:
        """Returns a ToolResult whose is_error is a word."""
        return ToolResult(parts=[TextPart("x")], is_error="yes")  # type: ignore[arg-type]

    @onellm.tool
    def number_text() -> Any:
        """Returns a text part whose text is a number."""
        return [TextPart(text=5)]  # type: ignore[arg-type]

    return [
        dated,
        error_word,
        hand_built,
        number_text,
        nothing,
        raw_bytes,
        an_object,
        a_generator,
        number_keys,
        not_a_number,
        unawaited,
        a_lot,
        value_error,
        storage_error,
    ]


async def test_odd_return_values_and_exceptions_are_results_the_model_reads(file_harness: Harness) -> None:
    h = file_harness
    tools = odd_tools()
    h.runtime.tools.add(*tools)
    names = [t.name for t in tools]
    h.script(calls(*((n, n, {}) for n in names)), done())
    result = await h.runtime.run_agent(h.agent(tools="[" + ", ".join(names) + ", task_complete]"))
    assert result.stop_reason is StopReason.COMPLETED
    by_id = {c.id: c for c in result.instance.messages[0].tool_calls}
    assert (by_id["nothing"].is_error, by_id["nothing"].result) == (False, [])
    assert by_id["raw_bytes"].result == [JsonPart(json="AP8=")]  # bytes travel as base64 text
    cannot = "returned a value that cannot be sent"
    assert texts(by_id["an_object"].result) == f"Tool 'an_object' {cannot}: a object cannot be sent as JSON"
    assert texts(by_id["a_generator"].result) == f"Tool 'a_generator' {cannot}: a generator cannot be sent as JSON"
    assert "a dict key must be a string" in texts(by_id["number_keys"].result)
    assert "nan has no JSON form" in texts(by_id["not_a_number"].result)
    assert all(by_id[n].is_error for n in ("an_object", "a_generator", "number_keys", "not_a_number"))
    # Saved as they were, these two made an instance that could not be saved (a bare TypeError) or read back.
    assert texts(by_id["hand_built"].result) == f"Tool 'hand_built' {cannot}: a object cannot be sent as JSON"
    assert texts(by_id["number_text"].result) == (
        f"Tool 'number_text' {cannot}: a text part's text must be a string, not int"
    )
    assert (
        texts(by_id["error_word"].result)
        == f"Tool 'error_word' {cannot}: a ToolResult's is_error must be a bool, not str"
    )
    assert by_id["dated"].result == [JsonPart(json={"on": "2026-01-02"})]  # as a returned date is sent
    assert texts(by_id["unawaited"].result) == "awaited"
    assert len(texts(by_id["a_lot"].result)) == 2_000_000
    assert texts(by_id["value_error"].result) == "Tool 'value_error' failed: ValueError: bad value"
    assert texts(by_id["storage_error"].result) == "Tool 'storage_error' failed: StorageError: disk gone"
    saved = await read_back(h, result.instance.id)
    assert [c.result for c in saved.messages[0].tool_calls] == [c.result for c in by_id.values()]
    await goes_on(h, result.instance.id, *tools)


async def test_a_sync_tool_blocking_past_its_timeout_is_an_error_and_the_loop_goes_on(harness: Harness) -> None:
    h = harness

    @onellm.tool(timeout_seconds=0.05)
    def stuck() -> str:
        """Blocks its worker thread."""
        time.sleep(1.5)
        return "late"

    h.runtime.tools.add(stuck)
    h.script(calls(("s", "stuck", {}), ("e", "echo", {"text": "x"})), done())
    started = time.perf_counter()
    result = await h.runtime.run_agent(h.agent(tools="[stuck, echo, task_complete]"))
    assert time.perf_counter() - started < 1.2  # the worker thread is left behind, not waited for
    stuck_call, echo_call = result.instance.messages[0].tool_calls
    assert stuck_call.is_error
    assert texts(stuck_call.result) == "Tool 'stuck' timed out after 0.05 s."
    assert texts(echo_call.result) == "echo: x"


async def test_an_async_tool_that_swallows_its_timeout_still_timed_out(harness: Harness) -> None:
    h = harness

    @onellm.tool(timeout_seconds=0.05)
    async def stubborn() -> str:
        """Ignores the cancellation of its timeout and answers late."""
        try:
            await anyio.sleep(5)
        except anyio.get_cancelled_exc_class():
            pass
        return "late anyway"

    h.runtime.tools.add(stubborn)
    h.script(calls(("s", "stubborn", {})), done())
    result = await h.runtime.run_agent(h.agent(tools="[stubborn, task_complete]"))
    call = result.instance.messages[0].tool_calls[0]
    assert call.is_error
    assert texts(call.result) == "Tool 'stubborn' timed out after 0.05 s."


class Fatal(BaseException):
    """An exception past `Exception`, as a tool's own library might raise."""


@pytest.mark.parametrize("kind", [SystemExit, Fatal])
async def test_an_exception_past_exception_in_a_turn_run_together_is_raised_as_it_came(
    file_harness: Harness, kind: type[BaseException]
) -> None:
    # Raised in one of the turn's tasks it would end the event loop, or come out wrapped in an exception group.
    h = file_harness
    finished = anyio.Event()

    @onellm.tool
    async def first() -> str:
        """Answers at once."""
        finished.set()
        return "first"

    @onellm.tool
    async def fatal() -> str:
        """Raises past Exception once `first` answered."""
        await finished.wait()
        raise kind(3)

    @onellm.tool
    async def slow() -> str:
        """Answers much later."""
        await anyio.sleep(30)
        return "late"

    h.runtime.tools.add(first, fatal, slow)
    h.script(calls(("a", "first", {}), ("b", "fatal", {}), ("c", "slow", {})), done())
    run = await h.runtime.start_agent(h.agent(tools="[first, fatal, slow, task_complete]"))
    with pytest.raises(kind) as caught:
        await run.result()
    assert caught.value.args == (3,)
    saved = await read_back(h, run.instance_id)
    assert (saved.state, saved.cancelled) == ("stopped", True)
    a, b, c = saved.messages[-1].tool_calls
    assert (a.is_error, texts(a.result)) == (False, "first")
    assert b.is_error
    assert c.is_error
    assert texts(c.result) == "The call was cancelled before it finished."
    (error,) = h.kinds("error")
    assert (error.error_type, error.where) == (kind.__name__, "agent loop")
    assert [r.event for r in h.kinds("run")] == ["started", "cancelled"]
    await goes_on(h, run.instance_id, first, fatal, slow)


async def test_keyboard_interrupt_in_a_turn_run_in_order_keeps_the_calls_before_it(file_harness: Harness) -> None:
    h = file_harness

    @onellm.tool(parallel_safe=False)
    def interrupted() -> str:
        """Ctrl-C arrives while it runs."""
        raise KeyboardInterrupt

    h.runtime.tools.add(interrupted)
    h.script(calls(("e", "echo", {"text": "x"}), ("k", "interrupted", {}), ("l", "echo", {"text": "y"})), done())
    run = await h.runtime.start_agent(h.agent(tools="[echo, interrupted, task_complete]"))
    with pytest.raises(KeyboardInterrupt):
        await run.result()
    assert h.ran == [("echo", {"text": "x"})]
    saved = await read_back(h, run.instance_id)
    assert (saved.state, saved.cancelled) == ("stopped", True)
    done_call, stopped_call, never = saved.messages[-1].tool_calls
    assert texts(done_call.result) == "echo: x"
    assert stopped_call.is_error
    assert never.is_error
    await goes_on(h, run.instance_id, interrupted)


# ------------------------------------------------------------------------------------------------ the hooks' side


def hook_at(h: Harness, point: str, fn: Any, name: str = "odd") -> None:
    h.runtime.hooks.add(fn, point=point, name=name)


@pytest.mark.parametrize("point", ["beforeInference", "afterInference"])
async def test_a_raising_hook_around_inference_fails_the_run_naming_hook_and_point(
    file_harness: Harness, point: str
) -> None:
    h = file_harness

    def broken(ctx: Any) -> None:
        raise LookupError("policy table missing")

    hook_at(h, point, broken, "policy")
    h.script(calls(("e", "echo", {"text": "x"})))
    run = await h.runtime.start_agent(h.agent())
    with pytest.raises(HookBlockedError) as caught:
        await run.result()
    error = caught.value
    assert (error.point, error.hook) == (point, "policy")
    assert str(error) == (
        f"hook policy blocked the run of instance {run.instance_id} at {point}: "
        f"hook policy failed at {point}: LookupError: policy table missing"
    )
    assert h.ran == []
    (record,) = h.kinds("hook")
    assert (record.point, record.hook, record.decision) == (point, "policy", "block")
    assert h.kinds("error")[0].where == f"hook policy at {point}"
    saved = await read_back(h, run.instance_id)
    assert saved.state == "error"
    assert saved.error is not None
    assert saved.error.type == "HookBlockedError"
    await goes_on(h, run.instance_id)


async def test_an_explicit_block_names_its_hook_too(harness: Harness) -> None:
    h = harness
    hook_at(h, "afterInference", lambda ctx: Block("off topic"), "guard")
    h.script(say("hello"))
    with pytest.raises(HookBlockedError) as caught:
        await h.runtime.run_agent(h.agent())
    assert (caught.value.point, caught.value.hook, caught.value.reason) == ("afterInference", "guard", "off topic")
    assert str(caught.value).startswith("hook guard blocked the run of instance ")


@pytest.mark.parametrize("point", ["beforeToolCall", "afterToolCall"])
async def test_a_raising_hook_around_a_tool_call_is_an_error_result_and_the_loop_goes_on(
    file_harness: Harness, point: str
) -> None:
    h = file_harness

    def broken(ctx: Any) -> None:
        if ctx.call.tool == "echo":
            raise ValueError("no rule for echo")

    hook_at(h, point, broken)
    h.script(calls(("e", "echo", {"text": "x"})), done())
    result = await h.runtime.run_agent(h.agent())
    assert result.stop_reason is StopReason.COMPLETED
    call = result.instance.messages[0].tool_calls[0]
    assert call.is_error
    assert "hook odd failed at " + point + ": ValueError: no rule for echo" in texts(call.result)
    assert h.ran == ([] if point == "beforeToolCall" else [("echo", {"text": "x"})])
    assert [(r.point, r.decision) for r in h.kinds("hook")] == [(point, "block")]
    saved = await read_back(h, result.instance.id)
    assert saved.messages[0].tool_calls[0].result == call.result


@pytest.mark.parametrize("how", ["raises", "wrong decision"])
async def test_a_failing_compaction_hook_skips_the_compaction(harness: Harness, how: str) -> None:
    h = harness

    def broken(ctx: BeforeCompaction) -> Any:
        if how == "raises":
            raise RuntimeError("no budget table")
        return Respond(text="compacted it myself")

    hook_at(h, "beforeCompaction", broken)
    path = h.agent(extra="contextStrategy:\n  type: clearToolResults\n  triggerPercent: 1\n  keepLast: 0\n")
    h.script(calls(("c1", "echo", {"text": "x"}), usage=(20_000, 10)), done())
    result = await h.runtime.run_agent(path)
    assert result.stop_reason is StopReason.COMPLETED
    assert result.instance.compactions == []
    (record,) = h.kinds("hook")
    assert (record.point, record.hook, record.decision) == ("beforeCompaction", "odd", "block")
    assert record.reason is not None
    assert ("RuntimeError: no budget table" if how == "raises" else "not Respond") in record.reason


WRONG_DECISIONS: list[tuple[str, Any]] = [
    ("beforeInference", ModifyResult("x")),
    ("beforeInference", RequireApproval()),
    ("afterInference", Respond(text="x")),
    ("afterInference", ModifyInputs({})),
    ("beforeToolCall", ModifyMessage(text="x")),
    ("beforeToolCall", ModifyResult("x")),
    ("afterToolCall", RequireApproval()),
    ("afterToolCall", Respond(text="x")),
    ("beforeToolCall", "yes"),
    ("afterToolCall", True),
]


@pytest.mark.parametrize(("point", "decision"), WRONG_DECISIONS)
async def test_a_decision_the_point_does_not_take_fails_closed(harness: Harness, point: str, decision: Any) -> None:
    h = harness
    hook_at(h, point, lambda ctx: decision if getattr(getattr(ctx, "call", None), "tool", "echo") == "echo" else None)
    h.script(calls(("e", "echo", {"text": "x"})), done())
    run = await h.runtime.start_agent(h.agent())
    bad = f"hook odd returned an invalid decision at {point}: {point} takes "
    if point in ("beforeInference", "afterInference"):
        with pytest.raises(HookBlockedError) as caught:
            await run.result()
        assert (caught.value.point, caught.value.hook) == (point, "odd")
        assert bad in str(caught.value)
    else:
        result = await run.result()
        call = result.instance.messages[0].tool_calls[0]
        assert call.is_error
        assert bad in texts(call.result)
        assert f"not {type(decision).__name__}" in texts(call.result)
    assert [(r.point, r.decision) for r in h.kinds("hook")] == [(point, "block")]


BAD_CONTENTS: list[tuple[str, Any, str]] = [
    ("beforeToolCall", ModifyInputs(["text"]), "ModifyInputs takes a mapping of arguments by name"),  # type: ignore[arg-type]
    ("beforeToolCall", ModifyInputs({1: "x"}), "ModifyInputs takes a mapping of arguments by name"),  # type: ignore[dict-item]
    ("beforeToolCall", ModifyInputs({"text": object()}), "ModifyInputs: argument 'text' is a object, not a JSON value"),
    (
        "beforeToolCall",
        ModifyInputs({"text": {"at": [float("nan")]}}),
        "argument 'text.at[0]' is nan, which has no JSON",
    ),
    ("beforeToolCall", ModifyInputs({"text": nested(80)}), "ModifyInputs: argument 'text[0]"),
    ("beforeToolCall", Respond(result=object()), "the result of Respond cannot be sent: a object cannot be sent"),
    ("beforeToolCall", Respond(message=Message()), "takes a result or a text, not a message"),
    ("afterToolCall", ModifyResult(object()), "the result of ModifyResult cannot be sent: a object cannot be sent"),
    ("afterToolCall", ModifyResult({2: "two"}), "a dict key must be a string to be sent as JSON"),
    ("afterToolCall", ModifyResult(float("inf")), "inf has no JSON form"),
    ("afterToolCall", ModifyResult(ToolResult(parts=[JsonPart(json=object())])), "a object cannot be sent as JSON"),
    ("afterInference", ModifyMessage(text="a", message=Message()), "takes a message or a text, one of them"),
    ("afterInference", ModifyMessage(), "takes a message or a text, one of them"),
    ("afterInference", ModifyMessage(message="hi"), "ModifyMessage.message takes a Message, not str"),  # type: ignore[arg-type]
    ("afterInference", ModifyMessage(text=5), "ModifyMessage.text takes a str, not int"),  # type: ignore[arg-type]
    (
        "beforeInference",
        Respond(message=Message(tool_calls=[ToolCall(id="z", tool="echo", inputs={"text": object()})])),
        "Respond.message.tool_calls[0]: argument 'text' is a object, not a JSON value",
    ),
    (
        "afterInference",
        ModifyMessage(message=Message(assistant=[TextPart(text=5)])),  # type: ignore[arg-type]
        "ModifyMessage.message: a text part's text must be a string, not int",
    ),
    ("beforeToolCall", RequireApproval(reason=5), "RequireApproval.reason takes a str, not int"),  # type: ignore[arg-type]
    ("afterToolCall", Block(reason=["no"]), "Block.reason takes a str, not list"),  # type: ignore[arg-type]
    ("afterInference", Block(reason=3), "Block.reason takes a str, not int"),  # type: ignore[arg-type]
    ("afterToolCall", ModifyResult(ToolResult(is_error="yes")), "is_error must be a bool, not str"),  # type: ignore[arg-type]
    ("beforeInference", ModifyRequest(max_output_tokens=-5), "max_output_tokens takes a positive int, not -5"),
    ("beforeInference", ModifyRequest(temperature="hot"), "temperature takes a number, not 'hot'"),  # type: ignore[arg-type]
    ("beforeInference", ModifyRequest(), "ModifyRequest changes nothing"),
    ("beforeInference", ModifyRequest(messages="hi"), "ModifyRequest.messages takes a list of Message"),  # type: ignore[arg-type]
    ("beforeInference", ModifyRequest(system=3), "ModifyRequest.system takes a str, not int"),  # type: ignore[arg-type]
    ("beforeInference", ModifyRequest(request={}), "ModifyRequest.request takes a ChatRequest, not dict"),  # type: ignore[arg-type]
    ("beforeInference", Respond(message=["x"]), "Respond.message takes a Message, not list"),  # type: ignore[arg-type]
]


@pytest.mark.parametrize(("point", "decision", "said"), BAD_CONTENTS)
async def test_a_decision_with_contents_that_cannot_be_used_fails_closed(
    file_harness: Harness, point: str, decision: Any, said: str
) -> None:
    h = file_harness
    hook_at(h, point, lambda ctx: decision if getattr(getattr(ctx, "call", None), "tool", "echo") == "echo" else None)
    h.script(calls(("e", "echo", {"text": "x"})), done())
    run = await h.runtime.start_agent(h.agent())
    if point in ("beforeInference", "afterInference"):
        with pytest.raises(HookBlockedError) as caught:
            await run.result()
        assert (caught.value.point, caught.value.hook) == (point, "odd")
        assert said in str(caught.value)
        assert h.ran == []
    else:
        result = await run.result()
        assert result.stop_reason is StopReason.COMPLETED
        call = result.instance.messages[0].tool_calls[0]
        assert call.is_error
        assert f"hook odd returned an invalid decision at {point}: " in texts(call.result)
        assert said in texts(call.result)
        assert h.ran == ([] if point == "beforeToolCall" else [("echo", {"text": "x"})])
    assert [(r.point, r.hook, r.decision) for r in h.kinds("hook")] == [(point, "odd", "block")]
    assert [e.where for e in h.kinds("error")][:1] == [f"hook odd at {point}"]
    saved = await read_back(h, run.instance_id)
    assert all(c.result is not None for c in saved.messages[0].tool_calls)  # never a call left without an answer
    await goes_on(h, run.instance_id)


async def test_arguments_a_hook_gives_a_held_call_are_plain_json(file_harness: Harness) -> None:
    # A held call's arguments are saved with its approval: a datetime failed the save with a bare TypeError and left
    # the instance `running`.
    h = file_harness
    when = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    hook_at(h, "beforeToolCall", lambda ctx: ModifyInputs({"target": when}) if ctx.call.tool == "deploy" else None)
    h.script(calls(("d", "deploy", {"target": "prod"})), done())
    result = await h.runtime.run_agent(h.agent(tools="[deploy, task_complete]"))
    assert result.stop_reason is StopReason.COMPLETED
    assert h.ran == []
    call = result.instance.messages[0].tool_calls[0]
    assert call.is_error
    assert "ModifyInputs: argument 'target' is a datetime, not a JSON value" in texts(call.result)
    saved = await read_back(h, result.instance.id)
    assert (saved.state, saved.pending_approvals) == ("stopped", [])


async def test_every_decision_that_changes_the_step_is_a_hook_record(file_harness: Harness) -> None:
    h = file_harness

    def before(ctx: BeforeToolCall) -> Any:
        return {
            "m": ModifyInputs({"text": "changed"}),
            "b": Block("no"),
            "r": Respond(text="answered"),
            "q": RequireApproval("check first"),
        }.get(ctx.call.id or "")

    def after(ctx: AfterToolCall) -> Any:
        return ModifyResult({"wrapped": ctx.result.text}) if ctx.call.id == "m" else None

    hook_at(h, "beforeToolCall", before, "gate")
    hook_at(h, "afterToolCall", after, "wrap")
    h.script(
        calls(
            ("m", "echo", {"text": "x"}),
            ("b", "echo", {"text": "x"}),
            ("r", "echo", {"text": "x"}),
            ("q", "echo", {"text": "x"}),
        ),
        done(),
    )
    run = await h.runtime.start_agent(h.agent())
    held = await run.result()
    assert held.stop_reason is StopReason.WAITING_FOR_APPROVAL
    assert [(r.hook, r.decision, r.reason) for r in h.kinds("hook")] == [
        ("gate", "modify", None),
        ("gate", "block", "no"),
        ("gate", "respond", None),
        ("gate", "requireApproval", "check first"),
        ("wrap", "modify", None),
    ]
    saved = await read_back(h, run.instance_id)
    (pending,) = saved.pending_approvals
    assert (pending.tool_call_id, pending.reason) == ("q", "check first")
    m, b, r, q = saved.messages[0].tool_calls
    assert m.result == [JsonPart(json={"wrapped": "echo: changed"})]
    assert texts(b.result) == "A hook blocked this call: no"
    assert texts(r.result) == "answered"
    assert q.result is None
    await run.approve("q")
    result = await run.result()
    assert result.stop_reason is StopReason.COMPLETED
    assert h.ran == [("echo", {"text": "changed"}), ("echo", {"text": "x"})]


async def test_inputs_changed_in_place_by_a_hook_are_not_what_runs(file_harness: Harness) -> None:
    # Only a decision changes a call, and each is a hook record: an edit in place would run unseen while the saved
    # call shows the model's arguments.
    h = file_harness

    def sneaky(ctx: BeforeToolCall) -> None:
        if ctx.call.tool == "echo":
            ctx.inputs["text"] = "rewritten"

    hook_at(h, "beforeToolCall", sneaky)
    h.script(calls(("e", "echo", {"text": "asked"})), done())
    result = await h.runtime.run_agent(h.agent())
    assert h.ran == [("echo", {"text": "asked"})]
    assert h.kinds("hook") == []
    saved = await read_back(h, result.instance.id)
    call = saved.messages[0].tool_calls[0]
    assert (call.inputs, texts(call.result)) == ({"text": "asked"}, "echo: asked")


@pytest.mark.parametrize("point", ["onMessage", "onStateChange", "onCost", "streamEvent"])
async def test_a_raising_observer_is_an_error_record_and_the_run_goes_on(harness: Harness, point: str) -> None:
    h = harness
    seen: list[str] = []

    def broken(ctx: Any) -> None:
        seen.append(type(ctx).__name__)
        raise RuntimeError("dashboard down")

    hook_at(h, point, broken, "dashboard")
    h.script(calls(("e", "echo", {"text": "x"}), usage=(1000, 100)), done())
    result = await h.runtime.run_agent(h.agent())
    assert result.stop_reason is StopReason.COMPLETED
    assert seen
    errors = h.kinds("error")
    assert len(errors) == len(seen)
    assert {(e.error_type, e.where, e.message) for e in errors} == {
        ("RuntimeError", f"hook dashboard at {point}", "dashboard down")
    }
    assert h.kinds("hook") == []


@pytest.mark.parametrize("point", ["onMessage", "onStateChange", "onCost", "streamEvent"])
async def test_a_decision_from_an_observer_is_an_error_record_not_dropped(harness: Harness, point: str) -> None:
    h = harness
    hook_at(h, point, lambda ctx: Block("stop everything"), "confused")
    h.script(calls(("e", "echo", {"text": "x"}), usage=(1000, 100)), done())
    result = await h.runtime.run_agent(h.agent())
    assert result.stop_reason is StopReason.COMPLETED
    assert h.ran == [("echo", {"text": "x"})]
    errors = h.kinds("error")
    assert errors
    assert {(e.where, e.message) for e in errors} == {
        (f"hook confused at {point}", f"{point} only observes; the Block returned is ignored")
    }
    assert h.kinds("hook") == []


@pytest.mark.parametrize(
    "point",
    [
        "beforeInference",
        "afterInference",
        "beforeToolCall",
        "afterToolCall",
        "onMessage",
        "onStateChange",
        "onCost",
        "streamEvent",
    ],
)
async def test_a_hook_raising_past_exception_is_not_swallowed(file_harness: Harness, point: str) -> None:
    h = file_harness

    def fatal(ctx: Any) -> None:
        raise SystemExit(7)

    hook_at(h, point, fatal)
    h.script(calls(("e", "echo", {"text": "x"}), usage=(1000, 100)), done())
    run = await h.runtime.start_agent(h.agent())
    with pytest.raises(SystemExit):
        await run.result()
    saved = await read_back(h, run.instance_id)
    assert (saved.state, saved.cancelled) == ("stopped", True)
    assert all(c.result is not None for m in saved.messages for c in m.tool_calls)
    await goes_on(h, run.instance_id)


async def test_a_slow_hook_is_cancelled_with_the_run(file_harness: Harness) -> None:
    h = file_harness
    entered = anyio.Event()

    async def slow(ctx: BeforeToolCall) -> None:
        entered.set()
        await anyio.sleep(30)

    hook_at(h, "beforeToolCall", slow, "slow")
    h.script(calls(("e", "echo", {"text": "x"})), done())
    run = await h.runtime.start_agent(h.agent())

    async def cancel_when_entered() -> None:
        await entered.wait()
        await run.cancel()

    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        group.start_soon(cancel_when_entered)
        with pytest.raises(onellm.RunCancelledError):
            await run.result()
    assert time.perf_counter() - started < 5
    assert h.ran == []
    saved = await read_back(h, run.instance_id)
    assert (saved.state, saved.cancelled) == ("stopped", True)
    call = saved.messages[0].tool_calls[0]
    assert call.is_error
    assert texts(call.result) == "The call was cancelled before it ran."
