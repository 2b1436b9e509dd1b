"""Fork and duplicate by id, and the faults a resumed run meets: impossible instance files, calls left without a result,
a store that cannot save, a second runner, unknown ids."""

from __future__ import annotations

from typing import Any

import pytest

from onellm import StopReason
from onellm.agents._state import INTERRUPTED
from onellm.errors import (
    AgentStateError,
    BadDefinitionError,
    InstanceLockedError,
    InstanceNotFoundError,
    StorageError,
)
from onellm.instances import AskUser, MemoryInstanceStore, PendingApproval
from onellm.messages import TextPart

from .conftest import Harness, calls, done, say

pytestmark = pytest.mark.anyio


# ----------------------------------------------------------------------------------------------------- fork


async def test_fork_through_a_message_copies_up_to_it_and_runs_on(file_harness: Harness) -> None:
    h = file_harness
    h.script(calls(("a", "echo", {"text": "one"})), calls(("b", "echo", {"text": "two"})), say("finished"))
    source = await h.runtime.run_agent(h.agent())
    first = source.instance.messages[0]
    fork = await h.runtime.fork(source.instance.id, through=first.id)  # type: ignore[arg-type]
    assert fork.id != source.instance.id
    assert [m.id for m in fork.messages] == [first.id]
    assert fork.state == "stopped"
    assert fork.run_started_at is None
    assert fork.forked_from is not None
    assert (fork.forked_from.instance_id, fork.forked_from.message_id) == (source.instance.id, first.id)
    assert fork.capabilities == source.instance.capabilities
    saved = (h.folder / "instances" / f"{fork.id}.yaml").read_text()
    assert "forkedFrom:" in saved
    # the fork runs on from there; the source is untouched
    h.script(say("a different ending"))
    run = await h.runtime.get_agent(fork.id)  # type: ignore[arg-type]
    await run.message("Take another path.")
    result = await run.result()
    assert result.text == "a different ending"
    assert [m.id for m in result.instance.messages][:1] == [first.id]
    again = await h.runtime.store.load(source.instance.id)  # type: ignore[arg-type]
    assert again is not None
    assert again.dumps() == source.instance.dumps()


async def test_duplicating_a_waiting_for_approval_agent_leaves_its_held_calls_unrun(harness: Harness) -> None:
    h = harness
    h.script(calls(("d", "deploy", {"target": "prod"})))
    source = await h.runtime.run_agent(h.agent(tools="[deploy, task_complete]"))
    copy = await h.runtime.duplicate(source.instance.id)  # type: ignore[arg-type]
    assert copy.pending_approvals == []
    assert copy.state == "stopped"
    assert len(copy.messages) == len(source.instance.messages)
    h.script(done("did not deploy"))
    run = await h.runtime.get_agent(copy.id)  # type: ignore[arg-type]
    await run.message("Skip the deploy.")
    result = await run.result()
    assert h.ran == []
    held = result.instance.messages[0].tool_calls[0]
    assert held.is_error
    assert held.result == [TextPart(INTERRUPTED)]
    assert result.stop_reason is StopReason.COMPLETED
    # the source still waits for its decision
    src = await h.runtime.get_agent(source.instance.id)  # type: ignore[arg-type]
    assert [e.tool_call_id for e in src.pending_approvals] == ["d"]


async def test_fork_of_an_unknown_instance_or_message_is_a_typed_error(harness: Harness) -> None:
    with pytest.raises(InstanceNotFoundError, match="no instance 'nope'"):
        await harness.runtime.fork("nope")
    h = harness
    h.script(say("hi"))
    source = await h.runtime.run_agent(h.agent())
    with pytest.raises(InstanceNotFoundError, match="has no message 'zzz'") as caught:
        await h.runtime.fork(source.instance.id, through="zzz")  # type: ignore[arg-type]
    assert caught.value.message_id == "zzz"
    with pytest.raises(InstanceNotFoundError):
        await h.runtime.get_agent("missing")


# --------------------------------------------------------------------------------------------- impossible files


async def _waiting(h: Harness) -> Any:
    h.script(calls(("d", "deploy", {"target": "prod"}), ("e", "echo", {"text": "x"})))
    result = await h.runtime.run_agent(h.agent(tools="[deploy, echo, task_complete]"))
    return result.instance


@pytest.mark.parametrize(
    ("breakage", "path", "message"),
    [
        ("ghost", "pendingApprovals[0].toolCallId", "names tool call 'ghost', which no message holds"),
        ("answered", "pendingApprovals[0].toolCallId", "waits for approval but already has a result"),
        ("twice", "pendingApprovals[1]", "has two pending approvals"),
        ("decision", "pendingApprovals[0].decision", "is neither 'approved' nor 'denied'"),
        ("message", "pendingApprovals[0].messageId", "which the instance does not hold"),
        ("ask", "askUser.toolCallId", "askUser names tool call 'nobody'"),
        ("duplicate", "messages[0].toolCalls[1].id", "two tool calls with the id 'd'"),
    ],
)
async def test_an_instance_in_an_impossible_state_is_refused_and_left_alone(
    harness: Harness, breakage: str, path: str, message: str
) -> None:
    import copy as copying

    h = harness
    instance = await _waiting(h)
    entry = instance.pending_approvals[0]
    if breakage == "ghost":
        entry.tool_call_id = "ghost"
        entry.message_id = None
    elif breakage == "answered":
        entry.tool_call_id = "e"
    elif breakage == "twice":
        instance.pending_approvals.append(PendingApproval(tool_call_id="d", tool="deploy"))
    elif breakage == "decision":
        entry.decision = "maybe"
    elif breakage == "message":
        entry.message_id = "m-missing"
    elif breakage == "ask":
        instance.ask_user = AskUser(tool_call_id="nobody", message_id=None)
    elif breakage == "duplicate":
        turn = copying.copy(instance.messages[0])
        twin = copying.copy(turn.tool_calls[1])
        twin.id = "d"
        turn.tool_calls = [turn.tool_calls[0], twin]
        instance.messages[0] = turn
    instance.forget_written_text()
    store = h.runtime.store
    assert isinstance(store, MemoryInstanceStore)
    await store.save(instance)
    before = store.text_of(instance.id)  # type: ignore[arg-type]
    with pytest.raises(BadDefinitionError) as caught:
        await h.runtime.get_agent(instance.id)  # type: ignore[arg-type]
    error = caught.value
    assert error.path == path
    assert message in error.detail
    assert f"instance {instance.id}" in error.detail
    assert store.text_of(instance.id) == before  # type: ignore[arg-type]


async def test_a_call_left_without_a_result_after_a_crash_is_answered_not_run_again(harness: Harness) -> None:
    h = harness
    h.script(say("waiting"))
    result = await h.runtime.run_agent(h.agent())
    instance = result.instance
    # as a crash leaves it: the answer saved with its call unanswered, the state `running`
    import copy as copying

    from onellm.messages import ToolCall

    turn = copying.copy(instance.messages[-1])
    turn.tool_calls = [ToolCall(id="x1", tool="echo", inputs={"text": "side effect"})]
    instance.messages[-1] = turn
    instance.state = "running"
    await h.runtime.store.save(instance)
    h.script(done("recovered"))
    run = await h.runtime.get_agent(instance.id)  # type: ignore[arg-type]
    final = await run.result()  # a `running` instance nobody holds was interrupted: going on needs no message
    assert final.stop_reason is StopReason.COMPLETED
    assert h.ran == []
    call = final.instance.messages[-2].tool_calls[0]
    assert call.is_error
    assert call.result == [TextPart(INTERRUPTED)]
    assert any(r.kind == "run" and r.event == "resumed" for r in h.records)


async def test_an_unknown_state_is_treated_as_stopped(harness: Harness) -> None:
    h = harness
    h.script(say("hi"))
    result = await h.runtime.run_agent(h.agent())
    instance = result.instance
    instance.state = "hibernating"
    await h.runtime.store.save(instance)
    run = await h.runtime.get_agent(instance.id)  # type: ignore[arg-type]
    rest = await run.result()
    assert rest.stop_reason is StopReason.STOPPED
    assert h.provider.served == 1
    h.script(say("awake"))
    await run.message("Wake up.")
    assert (await run.result()).text == "awake"


# --------------------------------------------------------------------------------------------------- storage


class _FailingStore(MemoryInstanceStore):
    volatile = False  # it stands for a disk: every save of the loop is made

    def __init__(self) -> None:
        super().__init__()
        self.fail_after = 10**9
        self.saves = 0

    async def save(self, instance: Any) -> None:
        self.saves += 1
        if self.saves > self.fail_after:
            raise OSError(28, "No space left on device")
        await super().save(instance)


async def test_a_store_that_cannot_save_stops_the_run_with_a_typed_error_and_loses_nothing(harness: Harness) -> None:
    h = harness
    store = _FailingStore()
    h.runtime.store = store
    h.script(calls(("a", "echo", {"text": "one"})), calls(("b", "echo", {"text": "two"})), done())
    store.fail_after = 1  # the first answer is saved; the first turn's results are not
    run = await h.runtime.start_agent(h.agent())
    with pytest.raises(StorageError, match="No space left on device") as caught:
        await run.result()
    assert caught.value.operation == "save"
    kept = store.load_sync(run.instance_id)  # type: ignore[arg-type]
    assert kept is not None
    assert kept.messages[0].tool_calls[0].result is None  # what was saved is intact
    assert run.instance.messages[0].tool_calls[0].result == [TextPart("echo: one")]  # and memory has the rest
    # the disk has room again: the run goes on from memory, and the call that ran is not run twice
    store.fail_after = 10**9
    result = await run.result()
    assert result.stop_reason is StopReason.COMPLETED
    assert [args["text"] for _, args in h.ran] == ["one", "two"]


async def test_a_second_runner_is_kept_out(harness: Harness) -> None:
    import anyio

    h = harness
    gate = anyio.Event()
    inside = anyio.Event()

    import onellm

    @onellm.tool
    async def block() -> str:
        """Waits."""
        inside.set()
        await gate.wait()
        return "done"

    h.runtime.tools.add(block)
    h.script(calls(("w", "block", {})), say("first"))
    run = await h.runtime.start_agent(h.agent(tools="[block]"))
    async with anyio.create_task_group() as group:
        group.start_soon(run.result)
        await inside.wait()
        other = await h.runtime.get_agent(run.instance_id)  # type: ignore[arg-type]
        await other.message("me too")
        with pytest.raises(InstanceLockedError):
            await other.result()
        with pytest.raises(AgentStateError, match="already being driven"):
            await run.result()
        gate.set()


class _SlowStore:
    """Saves that take a while (a checkpoint each), noting how many were under way at once."""

    def __init__(self) -> None:
        self.saved: list[int] = []
        self.busy = 0
        self.most = 0

    async def save(self, instance: Any) -> None:
        import anyio.lowlevel

        self.busy += 1
        self.most = max(self.most, self.busy)
        try:
            for _ in range(3):
                await anyio.lowlevel.checkpoint()
            self.saved.append(len(instance.messages))
        finally:
            self.busy -= 1

    async def load(self, instance_id: str) -> None:
        return None


async def test_saves_of_one_run_from_several_tasks_are_written_one_at_a_time(harness: Harness) -> None:
    import anyio

    h = harness
    store = _SlowStore()
    h.runtime.store = store
    run = await h.runtime.start_agent(h.agent())
    async with anyio.create_task_group() as group:
        for _ in range(4):
            group.start_soon(run._save)
    assert store.most == 1  # never two writes at once
    assert len(store.saved) == 4  # every waiting save was written after the one before it
    await run._save()  # and the run saves again once they are all done
    assert len(store.saved) == 5


async def test_a_new_instance_carries_the_run_keys_over_the_definition_keys(harness: Harness) -> None:
    h = harness
    path = h.agent(extra="state: 5\nrequestedModel: from-the-file\ncolour: blue\n")
    run = await h.runtime.start_agent(path, {"who": "me"})
    inst = run.instance
    assert inst.state == "running"
    assert inst.model == "anthropic:claude-sonnet-5-5"
    assert inst.requested_model == "claude-sonnet"
    assert inst.run_started_at is not None
    assert inst.id == run.instance_id
    assert inst.system_prompt == "You help."
    assert inst.inputs == {"who": "me"}
    assert inst.extra == {"colour": "blue"}
