"""Approvals: held calls saved with a pending approval, decisions written to the instance file, the run going on once
every call is decided, denials as error results, the shell's loop gate, and all of it across a new runtime."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

import onellm
from onellm import StopReason
from onellm.agents import ApprovalNeeded, BeforeToolCall, RequireApproval
from onellm.errors import AgentStateError
from onellm.instances import FileInstanceStore
from onellm.messages import TextPart
from onellm.records import Record

from .conftest import Harness, calls, done, make_runtime, say

pytestmark = pytest.mark.anyio


async def test_a_tool_that_requires_approval_holds_its_call_and_the_others_run(file_harness: Harness) -> None:
    h = file_harness
    h.script(calls(("d", "deploy", {"target": "prod"}), ("e", "echo", {"text": "meanwhile"})))
    result = await h.runtime.run_agent(h.agent(tools="[deploy, echo, task_complete]"))
    assert result.stop_reason is StopReason.WAITING_FOR_APPROVAL
    assert result.instance.state == "waiting_for_approval"
    assert h.ran == [("echo", {"text": "meanwhile"})]
    (entry,) = result.pending_approvals
    turn = result.instance.messages[0]
    assert (entry.tool_call_id, entry.tool, entry.message_id, entry.inputs) == (
        "d",
        "deploy",
        turn.id,
        {"target": "prod"},
    )
    assert entry.reason == "tool 'deploy' needs a person's approval for each call"
    assert entry.requested_at is not None
    assert entry.decision is None
    held, other = turn.tool_calls
    assert held.result is None
    assert other.result == [TextPart("echo: meanwhile")]
    text = (h.folder / "instances" / f"{result.instance.id}.yaml").read_text()
    assert "pendingApprovals:\n- toolCallId: d\n  tool: deploy\n" in text
    assert [(r.tool_call_id, r.decision, r.by) for r in h.kinds("approval")] == [("d", "requested", "tool")]


async def test_approve_writes_the_decision_then_the_run_goes_on(file_harness: Harness) -> None:
    h = file_harness
    h.script(calls(("d", "deploy", {"target": "prod"})))
    run = await h.runtime.start_agent(h.agent(tools="[deploy, task_complete]"))
    assert (await run.result()).stop_reason is StopReason.WAITING_FOR_APPROVAL
    await run.approve("d")
    # the decision is in the file before anything runs
    saved = await h.runtime.store.load(run.instance_id)  # type: ignore[arg-type]
    assert saved is not None
    assert saved.pending_approvals[0].decision == "approved"
    assert h.ran == []
    h.script(done("shipped"))
    result = await run.result()
    assert result.stop_reason is StopReason.COMPLETED
    assert result.text == "shipped"
    assert h.ran == [("deploy", {"target": "prod"})]
    assert result.instance.pending_approvals == []
    assert result.instance.messages[0].tool_calls[0].result == [TextPart("deployed to prod")]
    # the model saw the approved call's result
    assert h.provider.requests[-1].messages[0].tool_calls[0].result == [TextPart("deployed to prod")]
    assert [(r.decision, r.by) for r in h.kinds("approval")] == [("requested", "tool"), ("approved", "api")]


async def test_deny_answers_the_call_with_the_reason(harness: Harness) -> None:
    h = harness
    h.script(calls(("d", "deploy", {"target": "prod"})))
    run = await h.runtime.start_agent(h.agent(tools="[deploy, task_complete]"))
    await run.result()
    await run.deny("d", reason="not on a Friday")
    h.script(say("Understood."))
    result = await run.result()
    call = result.instance.messages[0].tool_calls[0]
    assert call.is_error
    assert call.result == [TextPart("A person denied this call: not on a Friday")]
    assert h.ran == []
    assert result.stop_reason is StopReason.WAITING


async def test_the_run_waits_until_every_held_call_is_decided(harness: Harness) -> None:
    h = harness
    h.script(calls(("d1", "deploy", {"target": "a"}), ("d2", "deploy", {"target": "b"})))
    run = await h.runtime.start_agent(h.agent(tools="[deploy, task_complete]"))
    await run.result()
    await run.approve("d1")
    partial = await run.result()  # nothing runs yet: d2 waits
    assert partial.stop_reason is StopReason.WAITING_FOR_APPROVAL
    assert [e.tool_call_id for e in partial.pending_approvals] == ["d2"]
    assert h.ran == []
    await run.deny("d2")
    h.script(done())
    result = await run.result()
    assert h.ran == [("deploy", {"target": "a"})]
    a, b = result.instance.messages[0].tool_calls
    assert a.result == [TextPart("deployed to a")]
    assert b.is_error
    assert b.result == [TextPart("A person denied this call.")]


async def test_approve_without_an_id_decides_every_held_call(harness: Harness) -> None:
    h = harness
    h.script(calls(("d1", "deploy", {"target": "a"}), ("d2", "deploy", {"target": "b"})), done())
    run = await h.runtime.start_agent(h.agent(tools="[deploy, task_complete]"))
    await run.result()
    await run.approve()
    await run.result()
    assert sorted(t["target"] for _, t in h.ran) == ["a", "b"]


async def test_deciding_with_nothing_pending_is_a_typed_error(harness: Harness) -> None:
    h = harness
    h.script(say("hi"), calls(("d", "deploy", {"target": "a"})))
    run = await h.runtime.start_agent(h.agent(tools="[deploy]"))
    await run.result()
    with pytest.raises(AgentStateError, match="no tool call waits for approval"):
        await run.approve()
    await run.message("deploy please")
    await run.result()
    with pytest.raises(AgentStateError, match="tool call 'zz' does not wait for approval"):
        await run.deny("zz")


async def test_a_hook_can_require_approval(harness: Harness) -> None:
    h = harness

    def risky(ctx: BeforeToolCall) -> RequireApproval | None:
        return RequireApproval("echoing secrets") if "secret" in ctx.inputs.get("text", "") else None

    h.runtime.hooks.add(risky, point="beforeToolCall")
    h.script(calls(("s", "echo", {"text": "the secret"}), ("p", "echo", {"text": "public"})))
    run = await h.runtime.start_agent(h.agent())
    result = await run.result()
    assert result.stop_reason is StopReason.WAITING_FOR_APPROVAL
    assert result.pending_approvals[0].reason == "echoing secrets"
    assert h.ran == [("echo", {"text": "public"})]
    hook = h.kinds("hook")
    assert [(r.point, r.decision, r.reason) for r in hook] == [("beforeToolCall", "requireApproval", "echoing secrets")]
    await run.approve()
    h.script(done())
    await run.result()
    # approved: the call runs without asking the hook again
    assert h.ran == [("echo", {"text": "public"}), ("echo", {"text": "the secret"})]


async def test_events_tell_when_approval_is_needed_and_approving_there_goes_on(harness: Harness) -> None:
    h = harness
    h.script(calls(("d", "deploy", {"target": "prod"})), done())
    run = await h.runtime.start_agent(h.agent(tools="[deploy, task_complete]"))
    seen: list[str] = []
    async for event in run.events():
        seen.append(type(event).__name__)
        if isinstance(event, ApprovalNeeded):
            assert (event.call_id, event.tool, event.inputs) == ("d", "deploy", {"target": "prod"})
            await run.approve(event.call_id)
    assert "ApprovalNeeded" in seen
    result = await run.result()
    assert result.stop_reason is StopReason.COMPLETED
    assert h.ran == [("deploy", {"target": "prod"})]


async def test_a_new_runtime_over_the_same_store_approves_and_finishes(tmp_path: Path) -> None:
    records: list[Record] = []
    ran: list[tuple[str, dict[str, object]]] = []
    store_dir = tmp_path / "instances"
    first, provider = make_runtime(tmp_path, FileInstanceStore(store_dir, durable=False), ran, records)
    provider.enqueue(calls(("d", "deploy", {"target": "prod"})))
    path = tmp_path / "agent.yaml"
    path.write_text(
        "model: claude-sonnet\nreferences:\n  - tools: [deploy, task_complete]\n"
        "initialPrompts:\n  - user:\n      - text: ship it\n"
    )
    result = await first.run_agent(path)
    instance_id = result.instance.id
    assert instance_id is not None

    second, provider2 = make_runtime(tmp_path, FileInstanceStore(store_dir, durable=False), ran, records)
    provider2.enqueue(done("shipped"))
    run = await second.approve(instance_id)
    finished = await run.result()
    assert finished.stop_reason is StopReason.COMPLETED
    assert ran == [("deploy", {"target": "prod"})]


async def test_an_approved_call_that_had_started_is_not_run_again(harness: Harness) -> None:
    """A run that stopped between running an approved call and saving its result (the entry has `startedAt`)."""
    h = harness
    h.script(calls(("d", "deploy", {"target": "prod"})))
    run = await h.runtime.start_agent(h.agent(tools="[deploy, task_complete]"))
    await run.result()
    instance = run.instance
    instance.pending_approvals[0].decision = "approved"
    instance.pending_approvals[0].extra["startedAt"] = "2026-01-01T00:00:00Z"
    instance.state = "running"
    await h.runtime.store.save(instance)
    h.script(done())
    picked = await h.runtime.get_agent(instance.id)  # type: ignore[arg-type]
    result = await picked.result()
    assert h.ran == []
    call = result.instance.messages[0].tool_calls[0]
    assert call.is_error
    assert "approved and started" in call.result[0].text
    assert result.instance.pending_approvals == []


async def test_shell_loop_approval_holds_every_command_and_runs_it_once_approved(tmp_path: Path) -> None:
    records: list[Record] = []
    runtime = onellm.Runtime(
        store=FileInstanceStore(tmp_path / "instances", durable=False),
        capabilities=(
            onellm.Capabilities.files(tmp_path) + onellm.Capabilities.shell_with_loop_approval()
        ).with_working_directory(tmp_path),
        records=[onellm.EventRecordSink(records.append)],
        environ={},
    )
    provider = onellm.testing.ScriptedProvider("anthropic")
    runtime.providers.set("anthropic", provider)
    runtime.tools.add(*onellm.builtin_tools())
    path = tmp_path / "agent.yaml"
    path.write_text(
        "model: claude-sonnet\nreferences:\n  - tools: [execute_terminal_command, task_complete]\n"
        "initialPrompts:\n  - user:\n      - text: list\n"
    )
    provider.enqueue(
        calls(
            ("sh", "execute_terminal_command", {"command": "echo approved-output"}),
            ("bad", "execute_terminal_command", {"command": "echo a; rm -rf /"}),
        )
    )
    run = await runtime.start_agent(path)
    result = await run.result()
    assert result.stop_reason is StopReason.WAITING_FOR_APPROVAL
    (entry,) = result.pending_approvals
    assert entry.tool_call_id == "sh"
    assert entry.reason is not None
    assert entry.reason.startswith("shell command: echo approved-output  (in ")
    refused = result.instance.messages[0].tool_calls[1]
    assert refused.is_error
    assert "CapabilityDeniedError" in refused.result[0].text

    # another runtime over the same store, with the same grant, approves after a restart
    again = onellm.Runtime(
        store=FileInstanceStore(tmp_path / "instances", durable=False),
        capabilities=(
            onellm.Capabilities.files(tmp_path) + onellm.Capabilities.shell_with_loop_approval()
        ).with_working_directory(tmp_path),
        environ={},
    )
    provider2 = onellm.testing.ScriptedProvider("anthropic")
    again.providers.set("anthropic", provider2)
    again.tools.add(*onellm.builtin_tools())
    provider2.enqueue(done())
    picked = await again.approve(run.instance_id)  # type: ignore[arg-type]
    finished = await picked.result()
    out = finished.instance.messages[0].tool_calls[0]
    assert not out.is_error
    assert out.result is not None
    assert "approved-output" in out.result[0].text


async def test_shell_with_an_approver_asks_inside_the_tool_and_holds_nothing(tmp_path: Path) -> None:
    asked: list[str] = []

    def approver(request: onellm.capabilities.CommandRequest) -> bool:
        asked.append(request.line)
        return False

    runtime = onellm.Runtime(
        capabilities=(
            onellm.Capabilities.files(tmp_path) + onellm.Capabilities.shell_with_approval(approver)
        ).with_working_directory(tmp_path),
        environ={},
    )
    provider = onellm.testing.ScriptedProvider("anthropic")
    runtime.providers.set("anthropic", provider)
    runtime.tools.add(*onellm.builtin_tools())
    path = tmp_path / "agent.yaml"
    path.write_text(
        "model: claude-sonnet\nreferences:\n  - tools: [execute_terminal_command, task_complete]\n"
        "initialPrompts:\n  - user:\n      - text: list\n"
    )
    provider.enqueue(calls(("sh", "execute_terminal_command", {"command": "echo hi"})), done())
    result = await runtime.run_agent(path)
    assert result.stop_reason is StopReason.COMPLETED
    assert asked == ["echo hi"]
    call = result.instance.messages[0].tool_calls[0]
    assert call.is_error
    assert "was not approved" in call.result[0].text


async def test_approve_waits_for_a_segment_finishing_in_another_task(harness: Harness) -> None:
    h = harness
    gate = anyio.Event()
    running = anyio.Event()

    @onellm.tool(requires_approval=True)
    async def launch() -> str:
        """Launches."""
        return "launched"

    @onellm.tool
    async def slow() -> str:
        """Takes a moment."""
        running.set()
        await gate.wait()
        return "slow done"

    h.runtime.tools.add(launch, slow)
    h.script(calls(("l", "launch", {}), ("s", "slow", {})), done())
    run = await h.runtime.start_agent(h.agent(tools="[launch, slow, task_complete]"))
    outcome: list[object] = []

    async def approver() -> None:
        await running.wait()
        gate.set()
        await run.approve("l")  # the segment is still running: this waits for it to rest
        outcome.append("approved")

    async with anyio.create_task_group() as group:
        group.start_soon(approver)
        first = await run.result()
    assert first.stop_reason is StopReason.WAITING_FOR_APPROVAL or outcome == ["approved"]
    result = await run.result()
    assert result.stop_reason is StopReason.COMPLETED
    assert result.instance.messages[0].tool_calls[0].result == [TextPart("launched")]
