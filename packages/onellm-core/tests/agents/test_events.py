"""The events `AgentRun.events()` yields, the blocking `SyncAgentRun`, and following a run more than once."""

from __future__ import annotations

import threading
from decimal import Decimal
from typing import Any

import anyio
import pytest

import onellm
from onellm import StopReason
from onellm.agents import (
    AgentEvent,
    ApprovalNeeded,
    CostIncurred,
    MessageDelivered,
    StateChanged,
    ToolCallEnded,
    ToolCallStarted,
    TurnEnded,
    TurnStarted,
)
from onellm.messages import TextPart

from .conftest import Harness, calls, done

pytestmark = pytest.mark.anyio


def _brief(event: AgentEvent) -> tuple[Any, ...]:
    if isinstance(event, TurnStarted):
        return ("turn started", event.turn)
    if isinstance(event, TurnEnded):
        return ("turn ended", event.turn, event.tool_calls, event.cost.total)
    if isinstance(event, ToolCallStarted):
        return ("call started", event.call_id, event.tool, event.inputs)
    if isinstance(event, ToolCallEnded):
        return ("call ended", event.call_id, event.is_error, event.result)
    if isinstance(event, CostIncurred):
        return ("cost", event.cost.total, event.total, event.call_id)
    if isinstance(event, StateChanged):
        return ("state", event.previous, event.state)
    if isinstance(event, MessageDelivered):
        return ("message", event.source, event.text)
    if isinstance(event, ApprovalNeeded):
        return ("approval", event.call_id, event.tool)
    return (type(event).__name__,)


async def test_events_tell_the_whole_run_in_order(harness: Harness) -> None:
    h = harness
    h.script(
        calls(("a", "echo", {"text": "one"}), ("b", "explode", {"reason": "bad"}), usage=(1000, 100)),
        done("all done"),
    )
    run = await h.runtime.start_agent(h.agent(tools="[echo, explode, task_complete]"), prompt="Please.")
    events = [event async for event in run.events()]
    assert all(e.instance_id == run.instance_id for e in events)
    assert [_brief(e) for e in events] == [
        ("message", "api", "Please."),
        ("turn started", 1),
        ("turn ended", 1, 2, Decimal("0.003000")),
        ("cost", Decimal("0.003000"), Decimal("0.003000"), None),
        ("call started", "a", "echo", {"text": "one"}),
        ("call started", "b", "explode", {"reason": "bad"}),
        ("call ended", "a", False, [TextPart("echo: one")]),
        ("call ended", "b", True, [TextPart("Tool 'explode' failed: RuntimeError: bad")]),
        ("turn started", 2),
        ("turn ended", 2, 1, Decimal(0)),
        ("call started", "tc", "task_complete", {"result": "all done", "summary": "did it"}),
        ("call ended", "tc", False, [TextPart("Task complete.")]),
        ("state", "running", "stopped"),
    ]
    result = await run.result()  # at rest already: returns at once
    assert (result.stop_reason, result.text, result.turns) == (StopReason.COMPLETED, "all done", 0)
    assert h.provider.served == 2


async def test_leaving_the_events_loop_pauses_and_result_goes_on(harness: Harness) -> None:
    h = harness
    h.script(calls(("a", "echo", {"text": "one"})), calls(("b", "echo", {"text": "two"})), done())
    run = await h.runtime.start_agent(h.agent())
    async for event in run.events():
        if isinstance(event, ToolCallEnded):
            break
    assert h.ran == [("echo", {"text": "one"})]
    result = await run.result()
    assert result.stop_reason is StopReason.COMPLETED
    assert h.ran == [("echo", {"text": "one"}), ("echo", {"text": "two"})]


async def test_approving_while_the_run_is_still_going_in_the_same_task_is_refused(harness: Harness) -> None:
    h = harness
    h.script(calls(("d", "deploy", {"target": "x"}), ("e", "echo", {"text": "x"})), done())
    run = await h.runtime.start_agent(h.agent(tools="[deploy, echo, task_complete]"))
    refused: list[str] = []
    async for event in run.events():
        if isinstance(event, ToolCallStarted):
            # the held call exists only once the run rests; deciding from inside the run would wait forever
            with pytest.raises(onellm.AgentStateError, match="once the run waits for approval"):
                await run.approve()
            refused.append(event.tool)
        if isinstance(event, ApprovalNeeded):
            await run.approve(event.call_id)
    assert refused == ["echo", "deploy", "task_complete"]
    assert (await run.result()).stop_reason is StopReason.COMPLETED


def test_the_blocking_run_follows_steers_and_approves(tmp_path: Any) -> None:
    from onellm.instances import MemoryInstanceStore
    from onellm.records import Record

    from .conftest import make_runtime

    ran: list[tuple[str, dict[str, Any]]] = []
    records: list[Record] = []
    runtime, provider = make_runtime(tmp_path, MemoryInstanceStore(), ran, records)
    path = tmp_path / "agent.yaml"
    path.write_text(
        "model: claude-sonnet\nreferences:\n  - tools: [deploy, echo, task_complete]\n"
        "initialPrompts:\n  - user:\n      - text: go\n"
    )
    provider.enqueue(calls(("d", "deploy", {"target": "prod"})), done("shipped"))
    run = runtime.start_agent_sync(path)
    seen = []
    for event in run.events():
        seen.append(type(event).__name__)
        if isinstance(event, ApprovalNeeded):
            run.approve(event.call_id)
    assert "ApprovalNeeded" in seen
    assert seen[-1] == "StateChanged"
    result = run.result()
    assert (result.stop_reason, result.text) == (StopReason.COMPLETED, "shipped")
    assert ran == [("deploy", {"target": "prod"})]
    # another thread steers a resting run; the blocking result() runs the new segment
    provider.enqueue(done("again"))
    thread = threading.Thread(target=run.message, args=("once more",))
    thread.start()
    thread.join()
    assert run.result().text == "again"
    picked = runtime.get_agent_sync(run.instance_id)  # type: ignore[arg-type]
    assert picked.state == "stopped"
    assert onellm.StopReason.COMPLETED is picked.result().stop_reason


def test_start_agent_sync_on_the_current_runtime(tmp_path: Any) -> None:
    from onellm.instances import MemoryInstanceStore

    from .conftest import make_runtime

    runtime, provider = make_runtime(tmp_path, MemoryInstanceStore(), [], [])
    path = tmp_path / "agent.yaml"
    path.write_text(
        "model: claude-sonnet\nreferences:\n  - tools: [task_complete]\ninitialPrompts:\n  - user:\n      - text: go\n"
    )
    provider.enqueue(done("via the default"))
    with onellm.use_runtime(runtime):
        run = onellm.start_agent_sync(path)
    assert run.result().text == "via the default"


async def test_the_blocking_cancel_from_another_thread_stops_a_blocking_result(harness: Harness) -> None:
    h = harness
    started = threading.Event()

    @onellm.tool
    async def forever() -> str:
        """Never ends."""
        started.set()
        await anyio.sleep_forever()
        return "never"

    h.runtime.tools.add(forever)
    h.script(calls(("f", "forever", {})))
    path = h.agent(tools="[forever]")
    outcome: list[BaseException] = []

    def blocking() -> None:
        run = h.runtime.start_agent_sync(path)

        def stopper() -> None:
            started.wait(10)
            run.cancel()

        other = threading.Thread(target=stopper)
        other.start()
        try:
            run.result()
        except BaseException as error:
            outcome.append(error)
        other.join()

    thread = threading.Thread(target=blocking)
    thread.start()
    await anyio.to_thread.run_sync(thread.join)
    assert len(outcome) == 1
    assert isinstance(outcome[0], onellm.RunCancelledError)


def test_the_blocking_run_refuses_a_decision_while_it_holds_at_an_event(tmp_path: Any) -> None:
    from onellm.instances import MemoryInstanceStore

    from .conftest import make_runtime

    ran: list[tuple[str, dict[str, Any]]] = []
    runtime, provider = make_runtime(tmp_path, MemoryInstanceStore(), ran, [])
    path = tmp_path / "agent.yaml"
    path.write_text(
        "model: claude-sonnet\nreferences:\n  - tools: [deploy, echo, task_complete]\n"
        "initialPrompts:\n  - user:\n      - text: go\n"
    )
    provider.enqueue(calls(("e", "echo", {"text": "x"}), ("d", "deploy", {"target": "prod"})), done())
    run = runtime.start_agent_sync(path)
    refused = 0
    for event in run.events():
        if isinstance(event, ToolCallStarted):
            with pytest.raises(onellm.AgentStateError):
                run.approve()
            refused += 1
        elif isinstance(event, ApprovalNeeded):
            run.approve(event.call_id)
    assert refused == 3  # echo, then deploy once approved, then task_complete
    assert run.result().stop_reason is StopReason.COMPLETED
