"""The loop: every row of the ending table, the error rules, parallel and sequential calls, results in call order."""

from __future__ import annotations

import threading
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import pytest

import onellm
from onellm import StopReason
from onellm.errors import BadDefinitionError, OverloadedError, RateLimitError, RunCancelledError
from onellm.messages import JsonPart, TextPart
from onellm.messages._events import TextDelta
from onellm.testing import ScriptStep

from .conftest import Harness, add_quick_and_slow, calls, cancel_once_finished, done, say

pytestmark = pytest.mark.anyio

CLERK = """\
name: clerk
model: claude-sonnet
systemPrompt: You look up court dockets. Call task_complete with your answer.
inputs:
  caseNo: ""
initialPrompts:
  - user:
      - text: "Find docket {{ .inputs.caseNo }} and report its status."
references:
  - tools: [get_docket, task_complete]
"""


@onellm.tool
def get_docket(caseNo: str) -> str:
    """Looks up a docket entry.

    Args:
        caseNo: Case number, for example 24-1234.
    """
    return "Docket " + caseNo + ": open"


async def test_the_getting_started_clerk_completes_with_the_seeds_figures(harness: Harness) -> None:
    harness.runtime.tools.add(get_docket)
    path = harness.write("agents/clerk.yaml", CLERK)
    harness.script(
        calls(("c1", "get_docket", '{"caseNo":"24-1234"}'), usage=(300, 20)),
        calls(
            ("c2", "task_complete", '{"result":"Docket 24-1234 is open.","summary":"Looked up the docket."}'),
            usage=(340, 25),
        ),
    )
    with onellm.use_runtime(harness.runtime):
        agent = await onellm.run_agent(path, {"caseNo": "24-1234"})
    assert f"{agent.stop_reason.name.title()}: {agent.text} ({agent.cost.total})" == (
        "Completed: Docket 24-1234 is open. (0.001730)"
    )
    assert (agent.result, agent.summary, agent.turns) == ("Docket 24-1234 is open.", "Looked up the docket.", 2)
    assert (agent.usage.input_tokens, agent.usage.output_tokens) == (640, 45)
    assert agent.instance.state == "stopped"
    first, second = harness.provider.requests
    assert [t.name for t in first.tools] == ["get_docket", "task_complete"]
    assert first.system == "You look up court dockets. Call task_complete with your answer."
    assert first.messages[0].user == [TextPart("Find docket 24-1234 and report its status.")]
    # the second call sees the first turn with its result
    assert second.messages[0].tool_calls[0].result == [TextPart("Docket 24-1234: open")]
    saved = await harness.runtime.store.load(agent.instance.id)  # type: ignore[arg-type]
    assert saved is not None
    assert saved.dumps() == agent.instance.dumps()
    assert saved.capabilities_recorded is True
    assert saved.inputs == {"caseNo": "24-1234"}
    assert saved.agent_definition == str(path)


async def test_a_plain_answer_leaves_the_instance_waiting(harness: Harness) -> None:
    harness.script(say("Hello there.", (10, 3)))
    result = await harness.runtime.run_agent(harness.agent())
    assert (result.stop_reason, result.instance.state, result.text) == (StopReason.WAITING, "waiting", "Hello there.")
    assert result.result is None
    assert result.summary is None


async def test_a_loop_ending_tool_still_runs_the_rest_of_its_turn(harness: Harness) -> None:
    harness.script(
        calls(("a", "task_complete", {"result": "r", "summary": "s"}), ("b", "echo", {"text": "after"})),
    )
    result = await harness.runtime.run_agent(harness.agent())
    assert result.stop_reason is StopReason.COMPLETED
    assert harness.ran == [("echo", {"text": "after"})]
    last = result.instance.messages[-1]
    assert [c.result for c in last.tool_calls] == [[TextPart("Task complete.")], [TextPart("echo: after")]]
    assert harness.provider.pending == 0


async def test_any_tool_with_ends_loop_completes_with_its_value(harness: Harness) -> None:
    @onellm.tool(ends_loop=True)
    def finish(total: int) -> dict[str, int]:
        """Reports the total.

        Args:
            total: The total.
        """
        return {"total": total}

    harness.runtime.tools.add(finish)
    harness.script(calls(("f", "finish", {"total": 7})))
    result = await harness.runtime.run_agent(harness.agent(tools="[finish]"))
    assert (result.stop_reason, result.result, result.output) == (StopReason.COMPLETED, {"total": 7}, {"total": 7})
    assert result.instance.messages[-1].tool_calls[0].result == [JsonPart(json={"total": 7})]


async def test_max_iterations_ends_in_error_without_an_exception(harness: Harness) -> None:
    harness.script(*[calls((f"c{i}", "echo", {"text": str(i)})) for i in range(3)])
    path = harness.agent(extra="maxIterations: 3\n")
    result = await harness.runtime.run_agent(path)
    assert result.stop_reason is StopReason.MAX_ITERATIONS
    assert result.instance.state == "error"
    assert result.error is not None
    assert (result.error.type, result.error.message) == ("MaxIterations", "max iterations (3) reached")
    assert result.turns == 3
    assert len(harness.ran) == 3
    saved = await harness.runtime.store.load(result.instance.id)  # type: ignore[arg-type]
    assert saved is not None
    assert saved.error is not None
    assert saved.error.type == "MaxIterations"
    errors = harness.kinds("error")
    assert [(e.error_type, e.message) for e in errors] == [("MaxIterations", "max iterations (3) reached")]


async def test_max_iterations_defaults_to_200(harness: Harness) -> None:
    harness.script(*[calls((f"c{i}", "echo", {"text": "x"})) for i in range(200)])
    result = await harness.runtime.run_agent(harness.agent())
    assert result.stop_reason is StopReason.MAX_ITERATIONS
    assert result.turns == 200
    assert result.error is not None
    assert result.error.message == "max iterations (200) reached"


async def test_a_provider_failure_raises_its_typed_error_and_leaves_error(harness: Harness) -> None:
    harness.script(
        calls(("c1", "echo", {"text": "a"})),
        ScriptStep.failure(RateLimitError("slow down", provider="anthropic", status=429)),
    )
    run = await harness.runtime.start_agent(harness.agent())
    with pytest.raises(RateLimitError):
        await run.result()
    saved = await harness.runtime.store.load(run.instance_id)  # type: ignore[arg-type]
    assert saved is not None
    assert saved.state == "error"
    assert saved.error is not None
    assert saved.error.type == "RateLimitError"
    # the first turn, with its result, is kept
    assert saved.messages[0].tool_calls[0].result == [TextPart("echo: a")]
    stops = [r for r in harness.kinds("run") if r.event == "stopped"]
    assert stops[-1].state == "error"


async def test_agent_retry_retries_a_transient_failure(harness: Harness) -> None:
    from onellm.providers import RetryPolicy

    clock = onellm.FakeClock()
    harness.runtime.clock = clock
    harness.runtime.agent_retry = RetryPolicy(max_retries=2, base_delay=0.01, jitter=0)
    harness.script(
        ScriptStep.failure(OverloadedError("busy", provider="anthropic", status=529)),
        ScriptStep.failure(OverloadedError("busy", provider="anthropic", status=529)),
        done("ok"),
    )
    result = await harness.runtime.run_agent(harness.agent())
    assert result.stop_reason is StopReason.COMPLETED
    assert result.instance.error is None
    assert len(result.instance.messages) == 1  # one turn, answered on the third try
    assert harness.provider.served == 3


async def test_agent_retry_is_off_by_default(harness: Harness) -> None:
    harness.script(ScriptStep.failure(OverloadedError("busy", provider="anthropic", status=529)), done())
    with pytest.raises(OverloadedError):
        await harness.runtime.run_agent(harness.agent())
    assert harness.provider.pending == 1


async def test_agent_retry_does_not_retry_a_permanent_failure(harness: Harness) -> None:
    from onellm.errors import BadRequestError
    from onellm.providers import RetryPolicy

    harness.runtime.agent_retry = RetryPolicy(max_retries=3, base_delay=0, jitter=0)
    harness.script(ScriptStep.failure(BadRequestError("no", provider="anthropic", status=400)), done())
    with pytest.raises(BadRequestError):
        await harness.runtime.run_agent(harness.agent())
    assert harness.provider.served == 1


async def cut_in_the_middle_of_an_answer(harness: Harness, *steps: ScriptStep) -> onellm.agents.AgentRun[Any]:
    """Start the agent and cancel it while the last scripted step streams its answer."""
    harness.script(*steps)
    streaming = anyio.Event()

    @harness.runtime.hooks.on_stream_event
    def watch(ctx: onellm.agents.OnStreamEvent) -> None:
        if isinstance(ctx.event, TextDelta):
            streaming.set()

    run = await harness.runtime.start_agent(harness.agent())
    await cancel_once_finished(run, streaming)
    harness.runtime.hooks.remove(watch)
    return run


async def test_cancel_during_a_model_call_keeps_the_partial_turn(harness: Harness) -> None:
    run = await cut_in_the_middle_of_an_answer(
        harness, calls(("c1", "echo", {"text": "a"})), ScriptStep.paused("Half an ans")
    )
    instance = run.instance
    assert instance.state == "stopped"
    assert instance.cancelled is True
    assert instance.messages[-1].text == "Half an ans"
    saved = await harness.runtime.store.load(run.instance_id)  # type: ignore[arg-type]
    assert saved is not None
    assert saved.cancelled is True
    assert saved.messages[-1].text == "Half an ans"
    assert saved.messages[0].tool_calls[0].result == [TextPart("echo: a")]
    assert harness.kinds("run")[-1].event == "cancelled"
    final = await run.result()  # at rest: a cancelled instance
    assert final.stop_reason is StopReason.CANCELLED


async def test_cancel_during_tool_calls_keeps_finished_results(harness: Harness) -> None:
    finished = add_quick_and_slow(harness.runtime)
    harness.script(calls(("fast", "quick", {}), ("slow", "slow", {})))
    run = await harness.runtime.start_agent(harness.agent(tools="[quick, slow, task_complete]"))
    await cancel_once_finished(run, finished)
    saved = await harness.runtime.store.load(run.instance_id)  # type: ignore[arg-type]
    assert saved is not None
    assert (saved.state, saved.cancelled) == ("stopped", True)
    fast, late = saved.messages[-1].tool_calls
    assert (fast.result, fast.is_error) == ([TextPart("quick")], False)
    assert late.is_error
    assert late.result == [TextPart("The call was cancelled before it finished.")]


async def test_an_outer_cancel_scope_cancels_the_run_the_same_way(harness: Harness) -> None:
    harness.script(calls(("slow", "wait_then", {"seconds": 30, "text": "late"})))
    run = await harness.runtime.start_agent(harness.agent(tools="[wait_then]"))
    # Half a second: time enough on a loaded machine for what comes before the wait.
    with anyio.move_on_after(0.5), pytest.raises(RunCancelledError):
        await run.result()
    saved = await harness.runtime.store.load(run.instance_id)  # type: ignore[arg-type]
    assert saved is not None
    assert saved.cancelled is True
    assert saved.messages[-1].tool_calls[0].is_error


async def test_calls_run_together_when_all_are_parallel_safe(harness: Harness) -> None:
    arrived: list[str] = []
    both = anyio.Event()

    @onellm.tool
    async def meet(name: str) -> str:
        """Waits for the other caller (at most 5 s).

        Args:
            name: Who arrives.
        """
        arrived.append(name)
        if len(arrived) == 2:
            both.set()
        with anyio.move_on_after(5):
            await both.wait()
        return f"{name} met" if both.is_set() else f"{name} alone"

    harness.runtime.tools.add(meet)
    harness.script(
        calls(("a", "meet", {"name": "a"}), ("b", "meet", {"name": "b"}), ("c", "echo", {"text": "c"})), done()
    )
    result = await harness.runtime.run_agent(harness.agent(tools="[meet, echo, task_complete]"))
    turn = result.instance.messages[0]
    # both ran at once (each waited for the other), and the results are in call order
    assert [c.id for c in turn.tool_calls] == ["a", "b", "c"]
    assert [c.result for c in turn.tool_calls] == [[TextPart("a met")], [TextPart("b met")], [TextPart("echo: c")]]
    sent = harness.provider.requests[1].messages[0].tool_calls
    assert [c.id for c in sent] == ["a", "b", "c"]


async def test_results_follow_call_order_not_finishing_order(harness: Harness) -> None:
    harness.script(
        calls(
            ("slow", "wait_then", {"seconds": 0.05, "text": "first"}),
            ("quick", "wait_then", {"seconds": 0.0, "text": "second"}),
        ),
        done(),
    )
    result = await harness.runtime.run_agent(harness.agent(tools="[wait_then, task_complete]"))
    assert [text for _, text in ((n, a["text"]) for n, a in harness.ran)] == ["second", "first"]  # finishing order
    turn = result.instance.messages[0]
    assert [c.result for c in turn.tool_calls] == [[TextPart("first")], [TextPart("second")]]


async def test_one_call_that_is_not_parallel_safe_makes_the_turn_sequential(harness: Harness) -> None:
    harness.script(
        calls(
            ("a", "wait_then", {"seconds": 0.05, "text": "first"}),
            ("b", "write_note", {"text": "note"}),
            ("c", "wait_then", {"seconds": 0.0, "text": "third"}),
        ),
        done(),
    )
    await harness.runtime.run_agent(harness.agent(tools="[wait_then, write_note, task_complete]"))
    assert [name for name, _ in harness.ran] == ["wait_then", "write_note", "wait_then"]
    assert [args["text"] for _, args in harness.ran] == ["first", "note", "third"]


async def test_a_tool_that_raises_gives_the_model_an_error_and_the_loop_goes_on(harness: Harness) -> None:
    harness.script(calls(("x", "explode", {"reason": "disk on fire"})), done())
    result = await harness.runtime.run_agent(harness.agent(tools="[explode, task_complete]"))
    assert result.stop_reason is StopReason.COMPLETED
    call = result.instance.messages[0].tool_calls[0]
    assert call.is_error
    assert call.result == [TextPart("Tool 'explode' failed: RuntimeError: disk on fire")]


async def test_a_tool_that_never_returns_times_out_as_an_error_result(harness: Harness) -> None:
    harness.script(calls(("h", "hang", {})), done())
    result = await harness.runtime.run_agent(harness.agent(tools="[hang, task_complete]"))
    call = result.instance.messages[0].tool_calls[0]
    assert call.is_error
    assert call.result == [TextPart("Tool 'hang' timed out after 0.05 s.")]
    assert result.stop_reason is StopReason.COMPLETED


async def test_an_unknown_tool_gives_an_error_result(harness: Harness) -> None:
    harness.script(calls(("u", "rm_rf", {"path": "/"})), done())
    result = await harness.runtime.run_agent(harness.agent())
    call = result.instance.messages[0].tool_calls[0]
    assert call.is_error
    assert call.result == [TextPart("Unknown tool 'rm_rf'. The tools you can call are: echo, task_complete.")]


async def test_malformed_arguments_give_an_error_result(harness: Harness) -> None:
    harness.script(
        calls(("m", "echo", "{not json"), ("w", "echo", {"text": 5}), ("n", "echo", "[1, 2]")),
        done(),
    )
    result = await harness.runtime.run_agent(harness.agent())
    bad, wrong, array = result.instance.messages[0].tool_calls
    assert bad.is_error
    assert bad.invalid_inputs == "{not json"
    assert bad.result == [TextPart("The arguments of tool 'echo' are not a JSON object: {not json")]
    assert wrong.is_error
    assert "text" in wrong.result[0].text
    assert array.is_error
    assert harness.ran == []


async def test_nulls_for_optional_arguments_are_dropped_before_the_call(harness: Harness) -> None:
    seen: list[object] = []

    @onellm.tool
    def greet(name: str, greeting: str = "Hello") -> str:
        """Greets.

        Args:
            name: Who.
            greeting: How.
        """
        seen.append(greeting)
        return f"{greeting}, {name}"

    harness.runtime.tools.add(greet)
    harness.script(calls(("g", "greet", {"name": "Ann", "greeting": None})), done())
    result = await harness.runtime.run_agent(harness.agent(tools="[greet, task_complete]"))
    assert seen == ["Hello"]
    assert result.instance.messages[0].tool_calls[0].result == [TextPart("Hello, Ann")]


async def test_the_prompt_argument_follows_the_initial_prompts(harness: Harness) -> None:
    harness.script(say("ok"))
    result = await harness.runtime.run_agent(harness.agent(), prompt="And be quick.")
    request = harness.provider.requests[0]
    assert [m.user_text for m in request.messages] == ["Do the task.", "And be quick."]
    assert result.instance.messages[1].source is not None
    assert result.instance.messages[1].source.kind == "api"


async def test_nothing_to_send_is_refused_before_anything_runs(harness: Harness) -> None:
    path = harness.agent(prompt=None)
    with pytest.raises(BadDefinitionError, match="nothing to send"):
        await harness.runtime.run_agent(path)
    assert await harness.runtime.store.list() == []


async def test_when_false_prompts_are_skipped_and_from_parts_expand(harness: Harness) -> None:
    harness.script(say("ok"))
    path = harness.write(
        "agent.yaml",
        """\
model: claude-sonnet
inputs:
  names: []
  loud: "no"
initialPrompts:
  - user:
      - text: Greet these.
      - from: inputs.names
  - when: "{{ .inputs.loud }}"
    user:
      - text: LOUDLY
""",
    )
    await harness.runtime.run_agent(path, {"names": ["Ann", "Bob"]})
    messages = harness.provider.requests[0].messages
    assert [m.user for m in messages] == [[TextPart("Greet these."), TextPart("Ann"), TextPart("Bob")]]


async def test_text_without_an_action_is_sent_as_written_and_a_from_part_reads_the_callers_own_inputs(
    file_harness: Harness,
) -> None:
    from onellm.messages import AssetPart

    file_harness.script(say("ok"))
    path = file_harness.write(
        "agent.yaml",
        """\
model: claude-sonnet
inputs:
  files: []
initialPrompts:
  - user:
      - text: "Braces { like } these, and }} alone, are text."
      - from: inputs.files
""",
    )
    picture = AssetPart(content_type="image/png", data=b"\x89PNG picture")
    done = await file_harness.runtime.run_agent(path, {"files": [picture]})
    sent = file_harness.provider.requests[0].messages[0].user
    assert sent[0] == TextPart("Braces { like } these, and }} alone, are text.")
    assert isinstance(sent[1], AssetPart)
    assert sent[1].data == b"\x89PNG picture"  # the bytes the caller gave, not the saved copy's reference
    saved = done.instance.messages[0].user[1]
    assert isinstance(saved, AssetPart)
    assert saved.data is None  # kept in the instance's asset store


async def test_the_system_prompt_is_rendered_each_turn_and_kept(harness: Harness) -> None:
    clock = onellm.FakeClock()
    harness.runtime.clock = clock
    path = harness.write(
        "agent.yaml",
        "model: claude-sonnet\nsystemPrompt: 'It is {{ .time.now }} for {{ .inputs.who }}.'\ninputs:\n  who: Ann\n"
        "references:\n  - tools: [echo]\ninitialPrompts:\n  - user:\n      - text: go\n",
    )

    class Tick:
        async def before_inference(self, ctx: onellm.agents.BeforeInference) -> None:
            clock.advance(60)

    harness.runtime.hooks.add(Tick())
    harness.script(calls(("e", "echo", {"text": "x"})), say("ok"))
    result = await harness.runtime.run_agent(path)
    first, second = (r.system for r in harness.provider.requests)
    assert first != second
    assert first is not None
    assert first.endswith("for Ann.")
    assert result.instance.rendered_system_prompt == second


async def test_the_output_type_shapes_task_complete_and_types_the_result(harness: Harness) -> None:
    from dataclasses import dataclass

    @dataclass
    class Invoice:
        customer: str
        total: Decimal

    harness.script(
        calls(("t", "task_complete", {"result": {"customer": "ACME", "total": "x"}, "summary": "s"})),
        calls(("t2", "task_complete", {"result": {"customer": "ACME", "total": 120.5}, "summary": "s"})),
    )
    result = await harness.runtime.run_agent(harness.agent(tools="[task_complete]"), output=Invoice)
    schema = harness.provider.requests[0].tools[0].input_schema
    assert schema["properties"]["result"]["properties"]["total"]["type"] == "number"  # type: ignore[index]
    assert result.instance.messages[0].tool_calls[0].is_error  # the first try did not fit
    assert result.output == Invoice("ACME", Decimal("120.5"))


async def test_an_output_schema_in_the_definition_shapes_task_complete(harness: Harness) -> None:
    path = harness.agent(
        tools="[task_complete]",
        extra="outputSchema:\n  type: object\n  properties:\n    ok:\n      type: boolean\n  required: [ok]\n"
        "  additionalProperties: false\n",
    )
    harness.script(calls(("t", "task_complete", {"result": {"ok": True}, "summary": "checked"})))
    result = await harness.runtime.run_agent(path)
    assert result.output == {"ok": True}
    assert result.stop_reason is StopReason.COMPLETED


async def test_run_agent_sync_runs_to_rest(harness: Harness, tmp_path: Path) -> None:
    harness.script(done("synced"))
    path = harness.agent()

    outcome: list[onellm.AgentResult[object]] = []

    def blocking() -> None:
        with onellm.use_runtime(harness.runtime):
            outcome.append(onellm.run_agent_sync(path))

    thread = threading.Thread(target=blocking)
    thread.start()
    await anyio.to_thread.run_sync(thread.join)
    (result,) = outcome
    assert (result.stop_reason, result.text) == (StopReason.COMPLETED, "synced")


async def test_run_agent_sync_refuses_inside_a_running_loop(harness: Harness) -> None:
    with pytest.raises(RuntimeError, match="run_agent_sync cannot be called when an event loop is already running"):
        onellm.run_agent_sync(harness.agent())


async def test_a_folder_with_agent_yaml_is_a_definition(harness: Harness) -> None:
    folder = harness.folder / "clerk"
    folder.mkdir()
    (folder / "agent.yaml").write_text("model: claude-sonnet\ninitialPrompts:\n  - user:\n      - text: hi\n")
    harness.script(say("hello"))
    result = await harness.runtime.run_agent(folder)
    assert result.text == "hello"


async def test_a_definition_object_runs_too(harness: Harness) -> None:
    definition = onellm.Definition.loads("model: claude-sonnet\ninitialPrompts:\n  - user:\n      - text: hi\n")
    harness.script(say("hello"))
    result = await harness.runtime.run_agent(definition, prompt="and more")
    assert result.text == "hello"


async def test_unknown_options_are_refused(harness: Harness) -> None:
    with pytest.raises(TypeError, match="unknown option"):
        await harness.runtime.start_agent(harness.agent(), temprature=1)


async def test_usage_and_cost_count_every_turn_and_tool_call(harness: Harness) -> None:
    from onellm.messages import CostLine

    @onellm.tool
    def paid(ctx: onellm.ToolContext) -> str:
        """Costs a cent."""
        ctx.add_cost_line(
            CostLine(counter="calls", quantity=1, per=1, unit_price=Decimal("0.01"), amount=Decimal("0.01"))
        )
        return "paid"

    harness.runtime.tools.add(paid)
    harness.script(
        calls(("p", "paid", {}), usage=(1000, 100)),
        done(),
    )
    result = await harness.runtime.run_agent(harness.agent(tools="[paid, task_complete]"))
    call = result.instance.messages[0].tool_calls[0]
    assert call.cost == Decimal("0.01")
    assert len(call.cost_lines) == 1
    turn_cost = result.instance.messages[0].usage.cost  # type: ignore[union-attr]
    assert turn_cost == Decimal("0.003000")
    assert result.cost.total == Decimal("0.013000")
    assert result.subtree_cost.total == result.cost.total


async def test_cancel_from_the_events_loop_stops_before_the_next_step(harness: Harness) -> None:
    harness.script(calls(("c1", "echo", {"text": "a"})), done())
    run = await harness.runtime.start_agent(harness.agent())

    async def follow() -> None:
        async for event in run.events():
            if isinstance(event, onellm.agents.TurnStarted) and event.turn == 2:
                await run.cancel()

    with pytest.raises(RunCancelledError):
        await follow()
    assert harness.provider.served == 1  # the second call was never sent
    saved = await harness.runtime.store.load(run.instance_id)  # type: ignore[arg-type]
    assert saved is not None
    assert (saved.state, saved.cancelled) == ("stopped", True)
    assert [m.tool_calls[0].result for m in saved.messages] == [[TextPart("echo: a")]]  # no empty turn left behind


async def test_resume_goes_on_after_a_cancelled_run(harness: Harness) -> None:
    started = anyio.Event()

    @onellm.tool
    async def slow() -> str:
        """Takes long."""
        started.set()
        await anyio.sleep(30)
        return "late"

    harness.runtime.tools.add(slow)
    harness.script(calls(("s", "slow", {})))
    run = await harness.runtime.start_agent(harness.agent(tools="[slow, task_complete]"))

    async def stop() -> None:
        await started.wait()
        await run.cancel()

    async with anyio.create_task_group() as group:
        group.start_soon(stop)
        with pytest.raises(RunCancelledError):
            await run.result()
    resting = await run.result()  # nothing to do without a message or resume()
    assert resting.stop_reason is StopReason.CANCELLED
    harness.script(done("picked up"))
    run.resume()
    result = await run.result()
    assert (result.stop_reason, result.text) == (StopReason.COMPLETED, "picked up")
    assert result.instance.cancelled is None
    assert result.instance.messages[0].tool_calls[0].result == [TextPart("The call was cancelled before it finished.")]


async def test_cancel_on_a_resting_run_does_nothing(harness: Harness) -> None:
    harness.script(say("hi"))
    run = await harness.runtime.start_agent(harness.agent())
    await run.result()
    await run.cancel()
    assert (await run.result()).stop_reason is StopReason.WAITING


async def test_a_resumed_run_does_not_take_a_cancelled_partial_answer_as_finished(harness: Harness) -> None:
    run = await cut_in_the_middle_of_an_answer(harness, calls(("c1", "echo", {"text": "a"})), ScriptStep.paused("Half"))
    assert run.instance.messages[-1].text == "Half"
    harness.script(done("picked up"))
    run.resume()
    result = await run.result()
    assert (result.stop_reason, result.text) == (StopReason.COMPLETED, "picked up")
    assert harness.provider.served == 3
    inst = result.instance
    assert "Half" not in [m.text for m in inst.messages]
    assert [c.id for m in inst.messages for c in m.tool_calls] == ["c1", "tc"]
    assert inst.cancelled is None


async def test_a_first_answer_cut_off_is_asked_again_after_a_restart(file_harness: Harness, tmp_path: Path) -> None:
    from onellm.instances import FileInstanceStore

    from .conftest import make_runtime

    run = await cut_in_the_middle_of_an_answer(file_harness, ScriptStep.paused("Half"))
    instance_id = run.instance_id or ""
    saved = await file_harness.runtime.store.load(instance_id)
    assert saved is not None
    assert (saved.cancelled, saved.messages[-1].text) == (True, "Half")
    again, provider = make_runtime(tmp_path, FileInstanceStore(tmp_path / "instances", durable=False), [], [])
    provider.enqueue(say("The whole answer."))
    picked = await again.get_agent(instance_id)
    picked.resume()
    result = await picked.result()
    assert (result.stop_reason, result.text) == (StopReason.WAITING, "The whole answer.")
    [message] = result.instance.messages
    assert (message.user_text, message.text) == ("Do the task.", "The whole answer.")


async def test_a_new_message_after_a_cut_answer_keeps_it_in_the_history(harness: Harness) -> None:
    run = await cut_in_the_middle_of_an_answer(harness, ScriptStep.paused("Half"))
    harness.script(say("Sure, the short one."))
    await run.message("Stop, just say it short.")
    result = await run.result()
    assert [(m.user_text, m.text) for m in result.instance.messages] == [
        ("Do the task.", "Half"),
        ("Stop, just say it short.", "Sure, the short one."),
    ]


async def test_a_run_at_rest_is_freed_without_the_cycle_collector(harness: Harness) -> None:
    import gc
    import weakref

    harness.script(calls(("c1", "echo", {"text": "hi"})), done())
    run = await harness.runtime.start_agent(harness.agent())
    gc.collect()
    gc.disable()
    try:
        result = await run.result()
        assert result.stop_reason is StopReason.COMPLETED
        gone = weakref.ref(run)
        del run, result
        assert gone() is None  # nothing left in a reference cycle: freed as the last reference went
        # and a run driven again after it rested still saves its turns
    finally:
        gc.enable()
    harness.script(say("again"), say("done"))
    again = await harness.runtime.start_agent(harness.agent(tools="[echo]"))
    first = await again.result()
    await again.message("once more")
    second = await again.result()
    assert (first.text, second.text) == ("again", "done")
    saved = await harness.runtime.store.load(again.instance_id)  # type: ignore[arg-type]
    assert saved is not None
    assert saved.dumps() == again.instance.dumps()
