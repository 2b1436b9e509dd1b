"""Messages and steering, `ask_user`, and the initial tool calls a definition injects."""

from __future__ import annotations

import anyio
import pytest

import onellm
from onellm import StopReason
from onellm.agents import MessageDelivered, QuestionAsked
from onellm.messages import TextPart

from .conftest import Harness, calls, done, say

pytestmark = pytest.mark.anyio


async def test_a_message_to_a_running_agent_is_read_after_the_turn_in_progress(harness: Harness) -> None:
    h = harness
    started = anyio.Event()
    release = anyio.Event()

    @onellm.tool
    async def work() -> str:
        """Works for a while."""
        started.set()
        await release.wait()
        return "worked"

    h.runtime.tools.add(work)
    h.script(calls(("w", "work", {})), say("Switching to French."))
    run = await h.runtime.start_agent(h.agent(tools="[work]"))

    async def steer() -> None:
        await started.wait()
        await run.message("Answer in French from now on.")
        release.set()

    async with anyio.create_task_group() as group:
        group.start_soon(steer)
        result = await run.result()
    assert result.stop_reason is StopReason.WAITING
    # the message became the next turn's user side, answered by the model
    first, steering = result.instance.messages
    assert first.tool_calls[0].result == [TextPart("worked")]
    assert steering.user == [TextPart("Answer in French from now on.")]
    assert steering.source is not None
    assert steering.source.kind == "api"
    assert steering.text == "Switching to French."
    second_request = h.provider.requests[1]
    # the results of the turn in progress come first, then the message
    assert second_request.messages[0].tool_calls[0].result == [TextPart("worked")]
    assert second_request.messages[-1].user == [TextPart("Answer in French from now on.")]
    assert result.turns == 2


async def test_a_message_to_a_waiting_agent_starts_a_new_run_segment(harness: Harness) -> None:
    h = harness
    h.script(say("What should I do?"), done("done now"))
    run = await h.runtime.start_agent(h.agent())
    first = await run.result()
    assert first.stop_reason is StopReason.WAITING
    await run.message("Finish up.", source="user")
    second = await run.result()
    assert second.stop_reason is StopReason.COMPLETED
    assert second.text == "done now"
    assert second.turns == 1
    events = [(r.event, r.state) for r in h.kinds("run") if r.event in ("started", "resumed", "stopped")]
    assert events == [("started", "running"), ("stopped", "waiting"), ("resumed", "running"), ("stopped", "stopped")]
    last = second.instance.messages[-1]
    assert last.user == [TextPart("Finish up.")]
    assert last.source is not None
    assert last.source.kind == "user"


async def test_a_message_to_a_stopped_or_failed_agent_starts_a_new_segment(harness: Harness) -> None:
    h = harness
    h.script(done("first"), calls(("e", "echo", {"text": "x"})), say("again"))
    run = await h.runtime.start_agent(h.agent(extra="maxIterations: 1\n"))
    assert (await run.result()).stop_reason is StopReason.COMPLETED
    await run.message("Once more.")
    over = await run.result()
    assert over.stop_reason is StopReason.MAX_ITERATIONS
    await run.message("Go on.")
    again = await run.result()
    assert again.stop_reason is StopReason.WAITING
    assert again.text == "again"
    assert again.instance.error is None


async def test_a_message_waits_while_approvals_are_pending(harness: Harness) -> None:
    h = harness
    h.script(calls(("d", "deploy", {"target": "prod"})))
    run = await h.runtime.start_agent(h.agent(tools="[deploy, task_complete]"))
    await run.result()
    await run.message("Also tell me when it is done.")
    still = await run.result()
    assert still.stop_reason is StopReason.WAITING_FOR_APPROVAL
    assert h.provider.served == 1
    await run.approve()
    h.script(done("deployed and told"))
    result = await run.result()
    assert result.stop_reason is StopReason.COMPLETED
    messages = result.instance.messages
    assert messages[0].tool_calls[0].result == [TextPart("deployed to prod")]
    assert messages[1].user == [TextPart("Also tell me when it is done.")]


async def test_a_persons_message_answers_ask_user(harness: Harness) -> None:
    h = harness
    h.runtime.tools.add(*[t for t in onellm.builtin_tools() if t.name == "ask_user"])
    h.script(calls(("q", "ask_user", {"question": "Which colour?", "choices": ["red", "blue"]})))
    run = await h.runtime.start_agent(h.agent(tools="[ask_user, task_complete]"))
    seen = [event async for event in run.events()]
    waiting = await run.result()
    assert waiting.stop_reason is StopReason.WAITING
    assert waiting.question is not None
    assert (waiting.question.question, waiting.question.choices) == ("Which colour?", ("red", "blue"))
    assert waiting.question_call_id == "q"
    assert waiting.instance.ask_user is not None
    assert waiting.instance.ask_user.tool_call_id == "q"
    assert any(isinstance(e, QuestionAsked) and e.question == "Which colour?" for e in seen)
    # a message from another agent joins the history and does not answer
    await run.message("FYI: the build is green.", source="agent", name="ci")
    still = await run.result()
    assert still.stop_reason is StopReason.WAITING
    assert still.instance.ask_user is not None
    assert h.provider.served == 1
    # the person's answer becomes the call's result
    h.script(done("blue it is"))
    await run.message("blue", source="user")
    delivered = [event async for event in run.events()]
    result = await run.result()
    assert result.stop_reason is StopReason.COMPLETED
    question_turn = result.instance.messages[0]
    assert question_turn.tool_calls[0].result == [TextPart("blue")]
    assert result.instance.ask_user is None
    assert result.instance.messages[1].source is not None
    assert result.instance.messages[1].source.name == "ci"
    answer = next(e for e in delivered if isinstance(e, MessageDelivered))
    assert answer.answered_call_id == "q"
    assert answer.text == "blue"


async def test_initial_tool_calls_run_first_marked_injected(harness: Harness) -> None:
    h = harness
    path = h.write(
        "agent.yaml",
        """\
model: claude-sonnet
references:
  - tools: [echo, task_complete]
initialPrompts:
  - toolCalls:
      - tool: echo
        inputs:
          text: warm up
      - tool: echo
        when: "false"
        inputs:
          text: skipped
  - user:
      - text: Now the task.
""",
    )
    h.script(done())
    result = await h.runtime.run_agent(path)
    injected = result.instance.messages[0]
    assert len(injected.tool_calls) == 1
    call = injected.tool_calls[0]
    assert call.injected
    assert call.id is not None
    assert call.result == [TextPart("echo: warm up")]
    assert h.ran == [("echo", {"text": "warm up"})]
    request = h.provider.requests[0]
    assert request.messages[0].tool_calls[0].result == [TextPart("echo: warm up")]
    assert request.messages[1].user == [TextPart("Now the task.")]


async def test_a_held_injected_call_stops_the_initial_prompts_and_the_task_prompt_goes_behind_it(
    harness: Harness,
) -> None:
    h = harness
    path = h.write(
        "agent.yaml",
        """\
model: claude-sonnet
references:
  - tools: [deploy, echo, task_complete]
initialPrompts:
  - toolCalls:
      - tool: deploy
        inputs:
          target: staging
  - user:
      - text: This prompt does not run.
""",
    )
    run = await h.runtime.start_agent(path, prompt="Then report.")
    result = await run.result()
    assert result.stop_reason is StopReason.WAITING_FOR_APPROVAL
    assert h.provider.served == 0
    assert h.ran == []
    held, task = result.instance.messages
    assert held.tool_calls[0].injected
    assert held.tool_calls[0].result is None
    assert task.user == [TextPart("Then report.")]
    await run.approve()
    h.script(done("reported"))
    final = await run.result()
    assert final.stop_reason is StopReason.COMPLETED
    assert h.ran == [("deploy", {"target": "staging"})]
    assert [m.user_text for m in h.provider.requests[0].messages] == ["", "Then report."]


async def test_an_injected_ask_user_leaves_the_instance_waiting(harness: Harness) -> None:
    h = harness
    h.runtime.tools.add(*[t for t in onellm.builtin_tools() if t.name == "ask_user"])
    path = h.write(
        "agent.yaml",
        """\
model: claude-sonnet
references:
  - tools: [ask_user, task_complete]
initialPrompts:
  - toolCalls:
      - tool: ask_user
        inputs:
          question: What is the ticket number?
  - user:
      - text: Not run.
""",
    )
    run = await h.runtime.start_agent(path, prompt="Look the ticket up.")
    waiting = await run.result()
    assert waiting.stop_reason is StopReason.WAITING
    assert waiting.question is not None
    assert waiting.question.question == "What is the ticket number?"
    assert h.provider.served == 0
    h.script(done("found it"))
    await run.message("T-42")
    result = await run.result()
    assert result.instance.messages[0].tool_calls[0].result == [TextPart("T-42")]
    assert result.text == "found it"


async def test_initial_calls_with_a_result_are_kept_as_written(harness: Harness) -> None:
    h = harness
    path = h.write(
        "agent.yaml",
        """\
model: claude-sonnet
references:
  - tools: [echo, task_complete]
initialPrompts:
  - user:
      - text: Here is what we know.
    toolCalls:
      - id: k1
        tool: echo
        inputs:
          text: known
        result:
          - text: "echo: known"
""",
    )
    h.script(done())
    result = await h.runtime.run_agent(path)
    assert h.ran == []
    assert result.instance.messages[0].tool_calls[0].result == [TextPart("echo: known")]


async def test_assets_in_several_opening_messages_all_reach_the_asset_store(file_harness: Harness) -> None:
    h = file_harness
    path = h.write(
        "agent.yaml",
        "model: claude-sonnet\ninputs:\n  images: []\ninitialPrompts:\n  - user:\n      - text: Compare these.\n"
        "      - from: inputs.images\n",
    )
    images = [
        onellm.Asset.from_bytes(b"first", "image/png", "a.png"),
        onellm.Asset.from_bytes(b"second", "image/png", "b.png"),
    ]
    h.script(say("They differ."))
    result = await h.runtime.run_agent(
        path, {"images": images}, prompt=["And this one:", onellm.Asset.from_bytes(b"third", "image/png", "c.png")]
    )
    # the model got every image inline
    sent = [p for m in h.provider.requests[0].messages for p in m.user if isinstance(p, onellm.AssetPart)]
    assert [p.data for p in sent] == [b"first", b"second", b"third"]
    # and the saved instance refers to each one in its asset store, so a new process can send them again
    saved = await h.runtime.store.load(result.instance.id)  # type: ignore[arg-type]
    assert saved is not None
    stored = [p for m in saved.messages for p in m.user if isinstance(p, onellm.AssetPart)]
    assert [p.name for p in stored] == ["a.png", "b.png", "c.png"]
    assert all(p.key and p.data is None for p in stored)
    assets = h.runtime.store.assets(result.instance.id)  # type: ignore[attr-defined, arg-type]
    assert [assets.get(p.key) for p in stored] == [b"first", b"second", b"third"]
