"""Races on one agent instance: decisions, cancels, messages and drives from several tasks, threads, runtimes and
processes at once. Whatever wins, nothing saved is lost, a held call runs at most once, every failure is a typed
`OnellmError` naming the instance, and nothing hangs (each test runs under `anyio.fail_after`)."""

from __future__ import annotations

import functools
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

import onellm
from onellm import StopReason
from onellm.agents import AgentRun
from onellm.errors import AgentStateError, InstanceLockedError, OnellmError
from onellm.instances import FileInstanceStore, Instance, InstanceLease, MemoryInstanceStore
from onellm.messages import TextPart
from onellm.records import Record

from .conftest import Harness, calls, done, make_runtime, say

pytestmark = pytest.mark.anyio

LIMIT = 10


def second_runtime(h: Harness) -> tuple[onellm.Runtime, Any, list[tuple[str, dict[str, Any]]]]:
    """Another runtime over the same instance folder (as another process would open it)."""
    ran: list[tuple[str, dict[str, Any]]] = []
    records: list[Record] = []
    store = FileInstanceStore(h.folder / "instances", durable=False)
    runtime, provider = make_runtime(h.folder, store, ran, records)
    return runtime, provider, ran


async def held(h: Harness) -> AgentRun[Any]:
    """A run resting in `waiting_for_approval` on its `deploy` call `d`."""
    h.script(calls(("d", "deploy", {"target": "prod"})))
    run = await h.runtime.start_agent(h.agent(tools="[deploy, echo, task_complete]"))
    assert (await run.result()).stop_reason is StopReason.WAITING_FOR_APPROVAL
    return run


async def outcomes(*jobs: Any) -> list[BaseException | None]:
    """Start every job at once; what each ended with (None when it returned)."""
    ended: list[BaseException | None] = [None] * len(jobs)

    async def one(i: int) -> None:
        try:
            await jobs[i]()
        except Exception as error:
            ended[i] = error

    async with anyio.create_task_group() as group:
        for i in range(len(jobs)):
            group.start_soon(one, i)
    return ended


def names(error: BaseException | None, instance_id: str | None) -> None:
    assert isinstance(error, OnellmError), repr(error)
    assert instance_id is not None
    assert instance_id in str(error), str(error)


# ------------------------------------------------------------------------------------------------- decisions


async def test_approve_and_deny_of_one_held_call_at_once_one_wins_and_the_file_says_which(
    file_harness: Harness,
) -> None:
    h = file_harness
    with anyio.fail_after(LIMIT):
        run = await held(h)
        ended = await outcomes(lambda: run.approve("d"), lambda: run.deny("d", reason="no"))
        won = [i for i, e in enumerate(ended) if e is None]
        assert len(won) == 1, ended
        lost = ended[1 - won[0]]
        assert isinstance(lost, AgentStateError), repr(lost)
        names(lost, run.instance_id)
        saved = await h.runtime.store.load(run.instance_id)  # type: ignore[arg-type]
        assert saved is not None
        assert [e.decision for e in saved.pending_approvals] == [["approved", "denied"][won[0]]]
        h.script(done("over"))
        result = await run.result()
        assert result.stop_reason is StopReason.COMPLETED
        assert h.ran == ([("deploy", {"target": "prod"})] if won == [0] else [])


async def test_approve_twice_at_once_on_one_handle(file_harness: Harness) -> None:
    h = file_harness
    with anyio.fail_after(LIMIT):
        run = await held(h)
        ended = await outcomes(lambda: run.approve("d"), lambda: run.approve("d"))
        assert ended.count(None) == 1, ended
        (lost,) = [e for e in ended if e is not None]
        assert isinstance(lost, AgentStateError), repr(lost)
        names(lost, run.instance_id)
        h.script(done("over"))
        assert (await run.result()).stop_reason is StopReason.COMPLETED
        assert h.ran == [("deploy", {"target": "prod"})]


async def test_approve_from_two_runtimes_at_once_then_both_drive_the_held_call_runs_once(
    file_harness: Harness,
) -> None:
    h = file_harness
    with anyio.fail_after(LIMIT):
        run = await held(h)
        other, other_provider, other_ran = second_runtime(h)
        mine = await h.runtime.get_agent(run.instance_id)  # type: ignore[arg-type]
        theirs = await other.get_agent(run.instance_id)  # type: ignore[arg-type]
        ended = await outcomes(lambda: mine.approve("d"), lambda: theirs.approve("d"))
        assert ended.count(None) >= 1, ended
        for error in ended:
            if error is not None:
                assert isinstance(error, AgentStateError | InstanceLockedError), repr(error)
                names(error, run.instance_id)
        h.script(done("mine"))
        other_provider.enqueue(done("theirs"))
        ended = await outcomes(mine.result, theirs.result)
        for error in ended:
            if error is not None:
                assert isinstance(error, InstanceLockedError), repr(error)
                names(error, run.instance_id)
        assert h.ran + other_ran == [("deploy", {"target": "prod"})]
        # whichever lost goes on from the file: nothing runs again
        for handle in (mine, theirs):
            with_result = await handle.result()
            assert with_result.stop_reason is StopReason.COMPLETED
        assert h.ran + other_ran == [("deploy", {"target": "prod"})]


async def test_a_handle_resting_on_a_held_call_sees_a_decision_made_elsewhere(file_harness: Harness) -> None:
    h = file_harness
    with anyio.fail_after(LIMIT):
        run = await held(h)
        other, _, other_ran = second_runtime(h)
        await other.approve(run.instance_id)  # type: ignore[arg-type]
        h.script(done("shipped"))
        result = await run.result()
        assert result.stop_reason is StopReason.COMPLETED
        assert h.ran == [("deploy", {"target": "prod"})]
        assert other_ran == []


class GatedSaves:
    """Holds the store's saves for which `when(instance)` is true at a gate, until `open` is set."""

    def __init__(self, store: Any, when: Any) -> None:
        self.store = store
        self.when = when
        self.reached = anyio.Event()
        self.open = anyio.Event()
        self._save = store.save
        store.save = self.save

    async def save(self, instance: Any) -> None:
        if self.when(instance) and not self.open.is_set():
            self.reached.set()
            await self.open.wait()
        await self._save(instance)


async def test_result_started_while_a_decision_is_being_saved_runs_under_its_own_lease(file_harness: Harness) -> None:
    h = file_harness
    store = h.runtime.store
    probes: list[str] = []

    @onellm.tool(requires_approval=True)
    async def guarded(target: str) -> str:
        """Deploys, checking nobody else may run the instance meanwhile.

        Args:
            target: Where.
        """
        try:
            lease = await store.acquire(instance_id)  # type: ignore[attr-defined]
        except InstanceLockedError:
            probes.append("leased")
        else:
            probes.append("free")
            await lease.release()
        return f"deployed to {target}"

    h.runtime.tools.add(guarded)
    with anyio.fail_after(LIMIT):
        h.script(calls(("g", "guarded", {"target": "prod"})))
        run = await h.runtime.start_agent(h.agent(tools="[guarded, task_complete]"))
        assert (await run.result()).stop_reason is StopReason.WAITING_FOR_APPROVAL
        instance_id = run.instance_id
        gate = GatedSaves(store, lambda i: any(e.decision == "approved" for e in i.pending_approvals))
        h.script(done("over"))
        results: list[Any] = []

        async def drive() -> None:
            await gate.reached.wait()  # the decision is being written
            async with anyio.create_task_group() as inner:
                inner.start_soon(lambda: _append(results, run.result()))
                for _ in range(5):
                    await anyio.lowlevel.checkpoint()
                gate.open.set()

        ended = await outcomes(lambda: run.approve("g"), drive)
        assert ended == [None, None], ended
        assert results[0].stop_reason is StopReason.COMPLETED
        assert probes == ["leased"]
        # the lease is given back once the run rests
        lease = await store.acquire(instance_id)  # type: ignore[attr-defined]
        await lease.release()


async def test_a_handle_that_saw_a_call_held_reads_it_again_under_the_lease_not_while_another_decides(
    file_harness: Harness,
) -> None:
    # Two runtimes over one folder stand for two processes. The stale handle saw `d` undecided; the other one is
    # writing its approval under its lease when the stale one asks for the result. A read without the lease would
    # find the file still undecided and call the run waiting.
    h = file_harness
    with anyio.fail_after(LIMIT):
        h.script(calls(("d", "deploy", {"target": "prod"})))
        run = await h.runtime.start_agent(h.agent(tools="[deploy, task_complete]"))
        assert (await run.result()).stop_reason is StopReason.WAITING_FOR_APPROVAL
        instance_id = run.instance_id
        assert instance_id is not None
        other_ran: list[tuple[str, dict[str, Any]]] = []
        other_store = FileInstanceStore(h.folder / "instances", durable=False)
        other, _ = make_runtime(h.folder, other_store, other_ran, [])
        deciding = await other.get_agent(instance_id)
        gate = GatedSaves(other_store, lambda i: any(e.decision == "approved" for e in i.pending_approvals))
        seen: list[Any] = []

        async def ask_meanwhile() -> None:
            await gate.reached.wait()  # the approval is being written, under the other runtime's lease
            try:
                seen.append((await run.result()).stop_reason)
            except InstanceLockedError as error:
                seen.append(error)
            gate.open.set()

        assert await outcomes(lambda: deciding.approve("d"), ask_meanwhile) == [None, None]
        assert len(seen) == 1, seen
        assert isinstance(seen[0], InstanceLockedError), seen
        assert instance_id in str(seen[0])
        h.script(done("over"))
        assert (await run.result()).stop_reason is StopReason.COMPLETED
        assert h.ran == [("deploy", {"target": "prod"})]
        assert other_ran == []


async def _append(into: list[Any], awaitable: Any) -> None:
    into.append(await awaitable)


async def drive_catching(run: AgentRun[Any], failures: list[Any]) -> None:
    """Drive `run` to rest, keeping the `OnellmError` it raises in `failures`."""
    try:
        await run.result()
    except OnellmError as error:
        failures.append(error)


async def cancel_at_gate(run: AgentRun[Any], gate: Any) -> list[OnellmError]:
    """Drive `run`, cancel it once the drive is held at `gate` (`reached`, `open`), then let it go: what the drive
    raised."""
    failures: list[OnellmError] = []

    async with anyio.create_task_group() as group:
        group.start_soon(drive_catching, run, failures)
        await gate.reached.wait()
        await run.cancel()
        gate.open.set()
    return failures


# ------------------------------------------------------------------------------------------------- cancel


def add_blocker(h: Harness) -> tuple[anyio.Event, list[str]]:
    """Register `block`: marks that it started, then waits forever (until cancelled)."""
    started = anyio.Event()
    runs: list[str] = []

    @onellm.tool
    async def block(label: str) -> str:
        """Blocks.

        Args:
            label: A name.
        """
        runs.append(label)
        started.set()
        await anyio.sleep_forever()
        return "never"

    h.runtime.tools.add(block)
    return started, runs


def add_pause(h: Harness) -> tuple[anyio.Event, anyio.Event, list[str], Any]:
    """Register `pause`: marks that it started and that it ran, then waits for the gate. Returns the started event,
    the gate, the runs and the tool (to register on another runtime too)."""
    started = anyio.Event()
    gate = anyio.Event()
    ran: list[str] = []

    @onellm.tool
    async def pause() -> str:
        """Waits for the test."""
        ran.append("pause")
        started.set()
        await gate.wait()
        return "paused"

    h.runtime.tools.add(pause)
    return started, gate, ran, pause


async def assert_saved_cancelled(h: Harness, run: AgentRun[Any]) -> Any:
    saved = await h.runtime.store.load(run.instance_id)  # type: ignore[arg-type]
    assert saved is not None
    assert (saved.state, saved.cancelled) == ("stopped", True)
    assert all(c.result is not None for m in saved.messages for c in m.tool_calls)
    return saved


async def test_cancel_twice_at_once_while_a_tool_runs(file_harness: Harness) -> None:
    h = file_harness
    started, runs = add_blocker(h)
    with anyio.fail_after(LIMIT):
        h.script(calls(("b", "block", {"label": "one"})))
        run = await h.runtime.start_agent(h.agent(tools="[block, task_complete]"))
        failures: list[BaseException] = []

        async with anyio.create_task_group() as group:
            group.start_soon(drive_catching, run, failures)
            await started.wait()
            assert await outcomes(run.cancel, run.cancel) == [None, None]
        (failure,) = failures
        assert isinstance(failure, onellm.errors.RunCancelledError)
        names(failure, run.instance_id)
        saved = await assert_saved_cancelled(h, run)
        assert saved.messages[-1].tool_calls[0].is_error
        assert runs == ["one"]
        # cancelling a run that ended leaves the file as it is
        before = (h.folder / "instances" / f"{run.instance_id}.yaml").read_bytes()
        await run.cancel()
        await run.cancel()
        assert (h.folder / "instances" / f"{run.instance_id}.yaml").read_bytes() == before
        # and going on from it does not run the cancelled call again
        run.resume()
        h.script(done("after"))
        assert (await run.result()).stop_reason is StopReason.COMPLETED
        assert runs == ["one"]


async def test_cancel_of_a_run_resting_on_a_held_call_leaves_it_waiting(file_harness: Harness) -> None:
    h = file_harness
    with anyio.fail_after(LIMIT):
        run = await held(h)
        await run.cancel()
        saved = await h.runtime.store.load(run.instance_id)  # type: ignore[arg-type]
        assert saved is not None
        assert saved.state == "waiting_for_approval"
        assert [e.decision for e in saved.pending_approvals] == [None]
        await run.approve("d")
        h.script(done("shipped"))
        assert (await run.result()).stop_reason is StopReason.COMPLETED
        assert h.ran == [("deploy", {"target": "prod"})]


async def test_cancel_at_the_approval_event_of_a_followed_run_is_a_no_op_for_the_rest(file_harness: Harness) -> None:
    h = file_harness
    with anyio.fail_after(LIMIT):
        h.script(calls(("d", "deploy", {"target": "prod"})), done("shipped"))
        run = await h.runtime.start_agent(h.agent(tools="[deploy, task_complete]"))
        async for event in run.events():
            if isinstance(event, onellm.agents.ApprovalNeeded):
                await run.cancel()
                await run.approve(event.call_id)
        result = await run.result()
        assert result.stop_reason is StopReason.COMPLETED, result
        assert h.ran == [("deploy", {"target": "prod"})]


async def test_cancel_while_the_answer_is_being_saved(file_harness: Harness) -> None:
    h = file_harness
    with anyio.fail_after(LIMIT):
        gate = GatedSaves(
            h.runtime.store, lambda i: bool(i.messages and i.messages[-1].tool_calls and i.state == "running")
        )
        h.script(calls(("e", "echo", {"text": "one"})))
        run = await h.runtime.start_agent(h.agent())
        failures = await cancel_at_gate(run, gate)
        (failure,) = failures
        assert isinstance(failure, onellm.errors.RunCancelledError), repr(failure)
        names(failure, run.instance_id)
        saved = await assert_saved_cancelled(h, run)
        # the answer being saved is kept, its call answered as cancelled or with its result, never run twice
        assert [c.id for c in saved.messages[-1].tool_calls] == ["e"]
        assert h.ran in ([], [("echo", {"text": "one"})])
        run.resume()
        h.script(done("after"))
        assert (await run.result()).stop_reason is StopReason.COMPLETED
        assert len(h.ran) <= 1


# ------------------------------------------------------------------------------------------------- messages


def user_texts(instance: Any) -> list[str]:
    return [m.user_text for m in instance.messages if m.user]


@pytest.mark.parametrize("ticks", range(0, 24, 3))
async def test_a_message_racing_the_end_of_a_run_is_delivered_once_and_saved(file_harness: Harness, ticks: int) -> None:
    h = file_harness
    with anyio.fail_after(LIMIT):
        h.script(say("first"), say("second"))
        run = await h.runtime.start_agent(h.agent(prompt="Start."))
        results: list[Any] = []

        async def late() -> None:
            for _ in range(ticks):
                await anyio.lowlevel.checkpoint()
            await run.message("late")

        async with anyio.create_task_group() as group:
            group.start_soon(late)
            group.start_soon(_append, results, run.result())
        if "late" not in user_texts(run.instance):
            results.append(await run.result())  # it came after the run rested: the next segment reads it
        saved = await h.runtime.store.load(run.instance_id)  # type: ignore[arg-type]
        assert saved is not None
        assert user_texts(saved) == ["Start.", "late"]
        # read in the first turn (sent before it began) or in a turn of its own: never lost, never twice
        assert [m.text for m in saved.messages if m.assistant] in (["first"], ["first", "second"])
        assert saved.state == "waiting"


async def test_a_message_sent_as_the_run_rests_is_read_by_the_same_drive(file_harness: Harness) -> None:
    h = file_harness
    with anyio.fail_after(LIMIT):
        h.script(say("first"), say("second"))
        run = await h.runtime.start_agent(h.agent(prompt="Start."))
        async for event in run.events():
            is_rest = isinstance(event, onellm.agents.StateChanged) and event.state == "waiting"
            if is_rest and "late" not in user_texts(run.instance):
                await run.message("late")
        saved = await h.runtime.store.load(run.instance_id)  # type: ignore[arg-type]
        assert saved is not None
        assert user_texts(saved) == ["Start.", "late"]
        assert saved.state == "waiting"


async def test_many_messages_at_once_keep_their_order(file_harness: Harness) -> None:
    h = file_harness
    started, gate, _, _ = add_pause(h)
    with anyio.fail_after(LIMIT):
        h.script(calls(("p", "pause", {})), say("read them"))
        run = await h.runtime.start_agent(h.agent(tools="[pause, task_complete]", prompt="Start."))
        sent = [f"m{i}" for i in range(40)]
        async with anyio.create_task_group() as group:
            group.start_soon(run.result)
            await started.wait()
            async with anyio.create_task_group() as senders:
                for text in sent:
                    senders.start_soon(run.message, text)
            gate.set()
        saved = await h.runtime.store.load(run.instance_id)  # type: ignore[arg-type]
        assert saved is not None
        assert user_texts(saved) == ["Start.", *sent]
        # all of them reached the model in the one turn after the tool
        assert len(h.provider.requests) == 2


# ------------------------------------------------------------------------------------------------- several drivers


async def test_result_from_several_tasks_one_drives_the_others_get_a_typed_error(harness: Harness) -> None:
    h = harness
    with anyio.fail_after(LIMIT):
        h.script(calls(("w", "wait_then", {"seconds": 0.01, "text": "x"})), done("over"))
        run = await h.runtime.start_agent(h.agent(tools="[wait_then, task_complete]"))
        results: list[Any] = []

        async def drive() -> None:
            results.append(await run.result())

        ended = await outcomes(drive, drive, drive)
        assert ended.count(None) == 1, ended
        for error in ended:
            if error is not None:
                assert isinstance(error, AgentStateError)
                names(error, run.instance_id)
        assert results[0].stop_reason is StopReason.COMPLETED
        # once it rests, result() answers again at once
        assert (await run.result()).text == "over"


async def test_events_followed_by_two_consumers_the_second_gets_a_typed_error(harness: Harness) -> None:
    h = harness
    with anyio.fail_after(LIMIT):
        h.script(calls(("w", "wait_then", {"seconds": 0.01, "text": "x"})), done("over"))
        run = await h.runtime.start_agent(h.agent(tools="[wait_then, task_complete]"))
        seen: list[list[Any]] = [[], []]

        async def follow(i: int) -> None:
            async for event in run.events():
                seen[i].append(event)

        ended = await outcomes(lambda: follow(0), lambda: follow(1))
        assert ended.count(None) == 1, ended
        (error,) = [e for e in ended if e is not None]
        assert isinstance(error, AgentStateError)
        names(error, run.instance_id)
        winner = seen[ended.index(None)]
        assert any(isinstance(e, onellm.agents.ToolCallEnded) for e in winner)
        assert (await run.result()).text == "over"


async def test_another_runtime_cannot_run_a_running_instance_and_its_message_waits(file_harness: Harness) -> None:
    h = file_harness
    started, gate, _, pause = add_pause(h)
    with anyio.fail_after(LIMIT):
        h.script(calls(("p", "pause", {})), say("done here"))
        run = await h.runtime.start_agent(h.agent(tools="[pause, task_complete]", prompt="Start."))
        other, other_provider, _ = second_runtime(h)
        other.tools.add(pause)
        async with anyio.create_task_group() as group:
            group.start_soon(run.result)
            await started.wait()
            theirs = await other.get_agent(run.instance_id)  # type: ignore[arg-type]
            await theirs.message("from elsewhere")
            with pytest.raises(InstanceLockedError) as locked:
                await theirs.result()
            names(locked.value, run.instance_id)
            with pytest.raises((InstanceLockedError, AgentStateError)) as refused:
                await theirs.approve()
            names(refused.value, run.instance_id)
            gate.set()
        assert run.state == "waiting"
        assert [c.result for m in run.instance.messages for c in m.tool_calls] == [[TextPart("paused")]]
        # once the first rests, the refused runner's message is still there to deliver
        other_provider.enqueue(say("got it"))
        result = await theirs.result()
        assert user_texts(result.instance) == ["Start.", "from elsewhere"]
        saved = await h.runtime.store.load(run.instance_id)  # type: ignore[arg-type]
        assert saved is not None
        assert [m.text for m in saved.messages if m.assistant] == ["done here", "got it"]


async def test_fork_and_duplicate_while_the_source_runs_a_tool_copy_whole_turns(file_harness: Harness) -> None:
    h = file_harness
    started, gate, ran, pause = add_pause(h)
    with anyio.fail_after(LIMIT):
        h.script(calls(("p", "pause", {})), say("done here"))
        run = await h.runtime.start_agent(h.agent(tools="[pause, task_complete]", prompt="Start."))
        other, other_provider, _ = second_runtime(h)
        other.tools.add(pause)
        async with anyio.create_task_group() as group:
            group.start_soon(run.result)
            await started.wait()
            forked = await other.fork(run.instance_id)  # type: ignore[arg-type]
            duplicated = await other.duplicate(run.instance_id)  # type: ignore[arg-type]
            gate.set()
        assert run.state == "waiting"
        for copy in (forked, duplicated):
            assert copy.id != run.instance_id
            assert copy.state == "stopped"
            loaded = await other.store.load(copy.id)  # type: ignore[arg-type]
            assert loaded is not None
            assert [m.id for m in loaded.messages] == [m.id for m in run.instance.messages[: len(loaded.messages)]]
            # the copy goes on from there without running the source's call in flight
            other_provider.enqueue(say("copy on"))
            copy_run = await other.get_agent(copy.id)  # type: ignore[arg-type]
            copy_run.resume()
            result = await copy_run.result()
            assert all(c.result is not None for m in result.instance.messages for c in m.tool_calls)
        assert ran == ["pause"]


# ------------------------------------------------------------------------------------------------- threads


def in_threads(*jobs: Any) -> list[BaseException | None]:
    """Run every job in a thread of its own, released together; what each ended with (None when it returned)."""
    barrier = threading.Barrier(len(jobs))
    ended: list[BaseException | None] = [None] * len(jobs)

    def one(i: int) -> None:
        barrier.wait(LIMIT)
        try:
            jobs[i]()
        except Exception as error:
            ended[i] = error

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(jobs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(LIMIT)
        assert not thread.is_alive(), "a blocking call hung"
    return ended


def test_blocking_approve_and_deny_from_two_threads_one_wins(tmp_path: Path) -> None:
    ran: list[tuple[str, dict[str, Any]]] = []
    runtime, provider = make_runtime(tmp_path, FileInstanceStore(tmp_path / "instances", durable=False), ran, [])
    path = tmp_path / "agent.yaml"
    path.write_text(
        "model: claude-sonnet\nreferences:\n  - tools: [deploy, task_complete]\n"
        "initialPrompts:\n  - user:\n      - text: go\n"
    )
    provider.enqueue(calls(("d", "deploy", {"target": "prod"})))
    run = runtime.start_agent_sync(path)
    assert run.result().stop_reason is StopReason.WAITING_FOR_APPROVAL
    ended = in_threads(lambda: run.approve("d"), lambda: run.deny("d", reason="no"))
    assert ended.count(None) == 1, ended
    (lost,) = [e for e in ended if e is not None]
    assert isinstance(lost, AgentStateError), repr(lost)
    names(lost, run.instance_id)
    provider.enqueue(done("over"))
    assert run.result().stop_reason is StopReason.COMPLETED
    assert ran == ([("deploy", {"target": "prod"})] if ended[0] is None else [])
    # a second handle on the same instance agrees with the file
    picked = runtime.get_agent_sync(run.instance_id)  # type: ignore[arg-type]
    assert picked.state == "stopped"
    assert picked.pending_approvals == []


def test_blocking_messages_and_cancels_from_many_threads_while_one_blocks_in_result(tmp_path: Path) -> None:
    runtime, provider = make_runtime(tmp_path, FileInstanceStore(tmp_path / "instances", durable=False), [], [])
    started = threading.Event()
    release = threading.Event()

    @onellm.tool
    def pause() -> str:
        """Waits for the test (in a worker thread)."""
        started.set()
        release.wait(LIMIT)
        return "paused"

    runtime.tools.add(pause)
    path = tmp_path / "agent.yaml"
    path.write_text(
        "model: claude-sonnet\nreferences:\n  - tools: [pause, task_complete]\n"
        "initialPrompts:\n  - user:\n      - text: go\n"
    )
    provider.enqueue(calls(("p", "pause", {})), say("read them"))
    run = runtime.start_agent_sync(path)
    outcome: list[Any] = []

    def blocking() -> None:
        try:
            outcome.append(run.result())
        except Exception as error:
            outcome.append(error)

    driver = threading.Thread(target=blocking)
    driver.start()
    assert started.wait(LIMIT)
    sent = [f"m{i}" for i in range(12)]
    ended = in_threads(*(functools.partial(run.message, text) for text in sent))
    assert ended == [None] * len(sent)
    release.set()
    driver.join(LIMIT)
    assert not driver.is_alive()
    (result,) = outcome
    assert not isinstance(result, BaseException), repr(result)
    assert sorted(user_texts(result.instance)[1:]) == sorted(sent)
    assert len(provider.requests) == 2
    # cancels from several threads at a resting run do nothing
    assert in_threads(run.cancel, run.cancel, run.cancel) == [None, None, None]
    picked = runtime.get_agent_sync(run.instance_id)  # type: ignore[arg-type]
    assert (picked.state, picked.instance.cancelled) == ("waiting", None)


# ------------------------------------------------------------------------------------------------- processes

PROCESS = textwrap.dedent(
    """
    import os, sys, time
    import anyio
    import onellm
    from onellm.errors import InstanceLockedError, OnellmError
    from onellm.instances import FileInstanceStore
    from onellm.testing import ScriptedProvider, ScriptedToolCall, ScriptStep

    folder, mode = sys.argv[1], sys.argv[2]

    @onellm.tool(requires_approval=True)
    def deploy(target: str) -> str:
        '''Deploys.

        Args:
            target: Where.
        '''
        with open(os.path.join(folder, "effects.txt"), "a", encoding="utf-8") as f:
            f.write(f"deploy {target} {os.getpid()}\\n")
        time.sleep(0.2)  # long enough for the other process to try meanwhile
        return "deployed to " + target

    def step(i, tool, args):
        return ScriptStep(tool_calls=(ScriptedToolCall(i, tool, args),))

    async def main():
        runtime = onellm.Runtime(
            store=FileInstanceStore(os.path.join(folder, "instances"), durable=False),
            capabilities=onellm.Capabilities.files(folder),
            environ={},
        )
        provider = ScriptedProvider("anthropic")
        runtime.providers.set("anthropic", provider)
        runtime.tools.add(deploy)
        if mode == "hold":
            provider.enqueue(step("d1", "deploy", {"target": "prod"}))
            result = await runtime.run_agent(os.path.join(folder, "agent.yaml"))
            print(result.instance.id, flush=True)
            return
        provider.enqueue(step("t" + str(os.getpid()), "task_complete", {"result": "shipped", "summary": "ok"}))
        go = os.path.join(folder, "go")
        while not os.path.exists(go):
            time.sleep(0.005)
        run = await runtime.get_agent(sys.argv[3])
        try:
            await run.approve("d1")
            print("approved", flush=True)
        except OnellmError as error:
            assert sys.argv[3] in str(error), error
            print("refused", type(error).__name__, flush=True)
        for _ in range(400):
            try:
                result = await run.result()
            except InstanceLockedError as error:
                assert sys.argv[3] in str(error), error
                await anyio.sleep(0.01)
                continue
            print(result.stop_reason.value, flush=True)
            return
        print("never got the lease", flush=True)

    anyio.run(main)
    """
)


@pytest.mark.slow
def test_two_processes_approve_and_run_one_held_call_at_once_it_runs_once(tmp_path: Path) -> None:
    (tmp_path / "racer.py").write_text(PROCESS, encoding="utf-8")
    (tmp_path / "agent.yaml").write_text(
        "model: claude-sonnet\nreferences:\n  - tools: [deploy, task_complete]\n"
        "initialPrompts:\n  - user:\n      - text: Do it.\n",
        encoding="utf-8",
    )
    command = [sys.executable, str(tmp_path / "racer.py"), str(tmp_path)]
    held_run = subprocess.run([*command, "hold"], capture_output=True, text=True, timeout=60)
    assert held_run.returncode == 0, held_run.stderr
    instance_id = held_run.stdout.strip()
    racers = [
        subprocess.Popen([*command, "race", instance_id], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    time.sleep(0.3)  # let them start up and wait at the line
    (tmp_path / "go").write_text("", encoding="utf-8")
    outputs = []
    for racer in racers:
        out, err = racer.communicate(timeout=60)
        assert racer.returncode == 0, err
        outputs.append(out.split("\n"))
    decisions = [lines[0] for lines in outputs]
    assert decisions.count("approved") >= 1, outputs
    # a loser is told the call is decided already, or that the winner holds the instance
    assert all(d in ("approved", "refused AgentStateError", "refused InstanceLockedError") for d in decisions), outputs
    assert all(lines[1] == "completed" for lines in outputs), outputs
    assert len((tmp_path / "effects.txt").read_text().splitlines()) == 1


# ------------------------------------------------------------------------------------------------- a follower leaving

PAUSES = ["TurnStarted", "CostIncurred", "TurnEnded", "ToolCallStarted", "ToolCallEnded"]


@pytest.mark.parametrize("store", ["harness", "file_harness"])
@pytest.mark.parametrize("tool", ["echo", "write_note"])
@pytest.mark.parametrize("at", PAUSES)
@pytest.mark.parametrize("wait", [False, True])
async def test_leaving_the_events_loop_at_any_event_then_result_runs_every_call_once_and_keeps_its_result(
    request: pytest.FixtureRequest, store: str, tool: str, at: str, wait: bool
) -> None:
    h: Harness = request.getfixturevalue(store)
    with anyio.fail_after(LIMIT):
        h.script(
            calls(("a", tool, {"text": "one"}), ("b", tool, {"text": "two"}), usage=(10, 5)),
            done("over"),
        )
        run = await h.runtime.start_agent(h.agent(tools=f"[{tool}, task_complete]"))
        async for event in run.events():
            if type(event).__name__ == at:
                break
        if wait:
            await anyio.sleep(0.01)  # the left loop is closed meanwhile, from another task
        result = await run.result()
        assert result.stop_reason is StopReason.COMPLETED
        assert sorted(text for _, args in h.ran for text in args.values()) == ["one", "two"]
        answered = {c.id: c for m in result.instance.messages for c in m.tool_calls}
        expected = "noted" if tool == "write_note" else None
        assert answered["a"].result == [TextPart(expected or "echo: one")]
        assert answered["b"].result == [TextPart(expected or "echo: two")]
        saved = await h.runtime.store.load(run.instance_id)  # type: ignore[arg-type]
        assert saved is not None
        assert [c.result for m in saved.messages for c in m.tool_calls] == [
            c.result for m in result.instance.messages for c in m.tool_calls
        ]


@pytest.mark.parametrize("at", ["ToolCallStarted", "ToolCallEnded"])
async def test_leaving_the_events_loop_while_approved_calls_run_then_result_runs_the_rest(
    file_harness: Harness, at: str
) -> None:
    h = file_harness
    with anyio.fail_after(LIMIT):
        h.script(calls(("d", "deploy", {"target": "a"}), ("e", "deploy", {"target": "b"})), done("over"))
        run = await h.runtime.start_agent(h.agent(tools="[deploy, task_complete]"))
        assert (await run.result()).stop_reason is StopReason.WAITING_FOR_APPROVAL
        await run.approve()
        async for event in run.events():
            if type(event).__name__ == at:
                break
        result = await run.result()
        assert result.stop_reason is StopReason.COMPLETED
        # each once; the two run at once (worker threads), so either may start first
        assert sorted(h.ran, key=str) == [("deploy", {"target": "a"}), ("deploy", {"target": "b"})]
        assert [c.result for c in result.instance.messages[0].tool_calls] == [
            [TextPart("deployed to a")],
            [TextPart("deployed to b")],
        ]


async def test_a_run_paused_by_its_follower_and_picked_up_elsewhere_answers_the_unrun_calls(
    file_harness: Harness,
) -> None:
    h = file_harness
    with anyio.fail_after(LIMIT):
        h.script(calls(("a", "write_note", {"text": "one"}), ("b", "write_note", {"text": "two"})))
        run = await h.runtime.start_agent(h.agent(tools="[write_note, task_complete]"))
        async for event in run.events():
            if isinstance(event, onellm.agents.ToolCallEnded):
                break
        await anyio.sleep(0.01)
        other, other_provider, other_ran = second_runtime(h)
        other_provider.enqueue(done("elsewhere"))
        result = await (await other.get_agent(run.instance_id)).result()  # type: ignore[arg-type]
        assert result.stop_reason is StopReason.COMPLETED
        first, second = result.instance.messages[0].tool_calls
        assert first.result == [TextPart("noted")]  # ran before the pause: kept
        assert second.is_error  # never ran here, and another runner cannot know that: not run
        assert h.ran == [("write_note", {"text": "one"})]
        assert other_ran == []


async def test_cancel_while_approved_calls_run_keeps_the_results_of_those_that_finished(file_harness: Harness) -> None:
    h = file_harness
    started = anyio.Event()
    ran: list[str] = []

    @onellm.tool(requires_approval=True, parallel_safe=False)
    async def ship(target: str) -> str:
        """Ships; the second target never finishes.

        Args:
            target: Where.
        """
        ran.append(target)
        if target == "b":
            started.set()
            await anyio.sleep_forever()
        return f"shipped {target}"

    h.runtime.tools.add(ship)
    with anyio.fail_after(LIMIT):
        h.script(calls(("a", "ship", {"target": "a"}), ("b", "ship", {"target": "b"})))
        run = await h.runtime.start_agent(h.agent(tools="[ship, task_complete]"))
        assert (await run.result()).stop_reason is StopReason.WAITING_FOR_APPROVAL
        await run.approve()
        failures: list[BaseException] = []

        async with anyio.create_task_group() as group:
            group.start_soon(drive_catching, run, failures)
            await started.wait()
            await run.cancel()
        (failure,) = failures
        assert isinstance(failure, onellm.errors.RunCancelledError)
        saved = await assert_saved_cancelled(h, run)
        first, second = saved.messages[0].tool_calls
        assert first.result == [TextPart("shipped a")]
        assert second.is_error
        assert saved.pending_approvals == []
        run.resume()
        h.script(done("over"))
        assert (await run.result()).stop_reason is StopReason.COMPLETED
        assert ran == ["a", "b"]
        final = await h.runtime.store.load(run.instance_id)  # type: ignore[arg-type]
        assert final is not None
        assert final.messages[0].tool_calls[0].result == [TextPart("shipped a")]


# ------------------------------------------------------------------------------------------------- leases that wait


class SlowLease(InstanceLease):
    """A lease whose release waits (as a database's does)."""

    def __init__(self, inner: InstanceLease) -> None:
        super().__init__(inner.instance_id)
        self.inner = inner

    async def _release(self) -> None:
        await anyio.sleep(0.01)
        await self.inner.release()


class LeaseCheckingStore(MemoryInstanceStore):
    """Instances in memory, leased through `SlowLease`; a save without the lease held is noted."""

    def __init__(self) -> None:
        super().__init__()
        self.unleased: list[str | None] = []

    async def acquire(self, instance_id: str) -> InstanceLease:
        return SlowLease(await super().acquire(instance_id))

    async def save(self, instance: Instance) -> None:
        if instance.id not in self._held:
            self.unleased.append(instance.id)
        await super().save(instance)


async def test_a_decision_waiting_for_the_run_to_rest_is_saved_under_a_lease(tmp_path: Path) -> None:
    ran: list[tuple[str, dict[str, Any]]] = []
    store = LeaseCheckingStore()
    runtime, provider = make_runtime(tmp_path, store, ran, [])
    h = Harness(runtime, provider, tmp_path, [], ran)
    with anyio.fail_after(LIMIT):
        h.script(calls(("d", "deploy", {"target": "prod"})))
        run = await h.runtime.start_agent(h.agent(tools="[deploy, task_complete]"))
        results: list[Any] = []
        async with anyio.create_task_group() as group:
            group.start_soon(_append, results, run.result())
            await anyio.lowlevel.checkpoint()  # the run is going
            await run.approve("d")  # waits for it to rest, then decides
        assert results[0].stop_reason is StopReason.WAITING_FOR_APPROVAL
        assert store.unleased == []
        saved = await store.load(run.instance_id)  # type: ignore[arg-type]
        assert saved is not None
        assert [e.decision for e in saved.pending_approvals] == ["approved"]
        h.script(done("over"))
        assert (await run.result()).stop_reason is StopReason.COMPLETED
        assert ran == [("deploy", {"target": "prod"})]
        assert store.unleased == []


# ------------------------------------------------------------------------------------------------- from inside


@pytest.mark.parametrize("follow", [False, True])
async def test_a_tool_deciding_its_own_runs_held_call_is_refused_not_left_waiting_for_itself(
    harness: Harness, follow: bool
) -> None:
    h = harness
    handle: list[AgentRun[Any]] = []

    @onellm.tool
    async def self_approve() -> str:
        """Approves what its own run holds."""
        try:
            await handle[0].approve()
        except AgentStateError as error:
            return f"refused: {error} ({error.instance_id})"
        return "approved"

    h.runtime.tools.add(self_approve)
    with anyio.fail_after(LIMIT):
        h.script(calls(("d", "deploy", {"target": "x"}), ("s", "self_approve", {})))
        run = await h.runtime.start_agent(h.agent(tools="[deploy, self_approve, task_complete]"))
        handle.append(run)
        if follow:
            async for _ in run.events():
                pass
        result = await run.result()
        assert result.stop_reason is StopReason.WAITING_FOR_APPROVAL
        (answer,) = (c.result for c in result.instance.messages[0].tool_calls if c.id == "s")
        assert answer is not None
        assert f"({run.instance_id})" in answer[0].text  # type: ignore[union-attr]
        assert h.ran == []


async def test_a_hook_deciding_its_own_runs_held_call_is_refused_not_left_waiting_for_itself(harness: Harness) -> None:
    h = harness
    handle: list[AgentRun[Any]] = []
    refusals: list[str] = []

    @h.runtime.hooks.on_state_change
    async def auto_approve(ctx: onellm.agents.OnStateChange) -> None:
        if ctx.state == "waiting_for_approval":  # told as the run comes to rest, still inside it
            try:
                await handle[0].deny()
            except AgentStateError as error:
                refusals.append(str(error))

    with anyio.fail_after(LIMIT):
        h.script(calls(("d", "deploy", {"target": "x"})))
        run = await h.runtime.start_agent(h.agent(tools="[deploy, task_complete]"))
        handle.append(run)
        result = await run.result()
        assert result.stop_reason is StopReason.WAITING_FOR_APPROVAL
        assert len(refusals) == 1
        assert run.instance_id in refusals[0]  # type: ignore[operator]


# ------------------------------------------------------------------------------------------------- stale handles


class GatedLoads:
    """Holds the store's loads at a gate once `armed`, until `open` is set."""

    def __init__(self, store: Any) -> None:
        self.armed = False
        self.reached = anyio.Event()
        self.open = anyio.Event()
        self._load = store.load
        store.load = self.load

    async def load(self, instance_id: str) -> Any:
        if self.armed and not self.open.is_set():
            self.reached.set()
            await self.open.wait()
        return await self._load(instance_id)


async def test_cancel_while_a_stale_handle_reads_the_instance_again_keeps_what_another_runner_saved(
    file_harness: Harness,
) -> None:
    h = file_harness
    with anyio.fail_after(LIMIT):
        h.script(say("first"))
        run = await h.runtime.start_agent(h.agent())
        assert (await run.result()).stop_reason is StopReason.WAITING
        other, other_provider, other_ran = second_runtime(h)
        other_provider.enqueue(calls(("e", "echo", {"text": "x"})), say("went on elsewhere"))
        theirs = await other.get_agent(run.instance_id)  # type: ignore[arg-type]
        await theirs.message("go on")
        elsewhere = await theirs.result()
        assert other_ran == [("echo", {"text": "x"})]
        await run.message("and from here")  # the handle's copy is older than the file
        gate = GatedLoads(h.runtime.store)
        gate.armed = True
        failures = await cancel_at_gate(run, gate)
        saved = await other.store.load(run.instance_id)  # type: ignore[arg-type]
        assert saved is not None
        assert [m.id for m in saved.messages] == [m.id for m in elsewhere.instance.messages]
        assert [c.result for m in saved.messages for c in m.tool_calls] == [
            c.result for m in elsewhere.instance.messages for c in m.tool_calls
        ]
        assert h.ran == []
        for failure in failures:
            assert isinstance(failure, onellm.errors.RunCancelledError)
            names(failure, run.instance_id)


async def test_cancel_while_result_waits_for_a_decision_being_written_cancels_that_drive(file_harness: Harness) -> None:
    h = file_harness
    with anyio.fail_after(LIMIT):
        run = await held(h)
        gate = GatedSaves(h.runtime.store, lambda i: any(e.decision == "approved" for e in i.pending_approvals))
        failures: list[BaseException] = []

        async def drive() -> None:
            await gate.reached.wait()
            await drive_catching(run, failures)

        async def stop() -> None:
            await gate.reached.wait()
            for _ in range(3):
                await anyio.lowlevel.checkpoint()  # the drive waits for the decision now
            await run.cancel()
            gate.open.set()

        async with anyio.create_task_group() as group:
            group.start_soon(drive)
            group.start_soon(stop)
            await run.approve("d")
        (failure,) = failures
        assert isinstance(failure, onellm.errors.RunCancelledError), repr(failure)
        names(failure, run.instance_id)
        # cancelled as the approved call was about to run: answered as cancelled, and never run after
        saved = await assert_saved_cancelled(h, run)
        assert saved.messages[0].tool_calls[0].is_error
        assert saved.pending_approvals == []
        h.script(done("over"))
        run.resume()
        assert (await run.result()).stop_reason is StopReason.COMPLETED
        assert h.ran == []


@pytest.mark.parametrize("store", ["harness", "file_harness"])
async def test_approve_and_deny_through_two_handles_of_one_runtime_at_once(
    request: pytest.FixtureRequest, store: str
) -> None:
    h: Harness = request.getfixturevalue(store)
    with anyio.fail_after(LIMIT):
        run = await held(h)
        one = await h.runtime.get_agent(run.instance_id)  # type: ignore[arg-type]
        two = await h.runtime.get_agent(run.instance_id)  # type: ignore[arg-type]
        ended = await outcomes(lambda: one.approve("d"), lambda: two.deny("d", reason="no"))
        assert ended.count(None) == 1, ended
        (lost,) = [e for e in ended if e is not None]
        assert isinstance(lost, AgentStateError | InstanceLockedError), repr(lost)
        names(lost, run.instance_id)
        saved = await h.runtime.store.load(run.instance_id)  # type: ignore[arg-type]
        assert saved is not None
        assert [e.decision for e in saved.pending_approvals] == [["approved", "denied"][ended.index(None)]]
        h.script(done("over"))
        ended = await outcomes(run.result, one.result, two.result)
        assert ended.count(None) >= 1, ended
        for error in ended:
            if error is not None:
                assert isinstance(error, InstanceLockedError), repr(error)
                names(error, run.instance_id)
        assert h.ran == ([("deploy", {"target": "prod"})] if saved.pending_approvals[0].decision == "approved" else [])


def test_run_agent_sync_from_many_threads_at_once_each_gets_its_own_instance(tmp_path: Path) -> None:
    runtime, provider = make_runtime(tmp_path, FileInstanceStore(tmp_path / "instances", durable=False), [], [])
    path = tmp_path / "agent.yaml"
    path.write_text(
        "model: claude-sonnet\nreferences:\n  - tools: [echo, task_complete]\n"
        "initialPrompts:\n  - user:\n      - text: go\n"
    )
    provider.enqueue(*(say("hello") for _ in range(6)))
    results: list[Any] = []
    ended = in_threads(*(lambda: results.append(runtime.run_agent_sync(path)) for _ in range(6)))
    assert ended == [None] * 6
    assert len({r.instance.id for r in results}) == 6
    assert all(r.text == "hello" for r in results)
    assert len(list((tmp_path / "instances").glob("*.yaml"))) == 6


@pytest.mark.parametrize("durable", [False, True])
async def test_leaving_the_events_loop_after_any_number_of_events_loses_and_repeats_nothing(
    tmp_path: Path, durable: bool
) -> None:
    def script(provider: Any) -> None:
        provider.enqueue(
            calls(("a", "echo", {"text": "one"}), ("b", "echo", {"text": "two"}), text="first"),
            calls(("c", "write_note", {"text": "three"}), ("d", "write_note", {"text": "four"})),
            say("between"),
            done("over"),
        )

    def harness(n: int) -> Harness:
        ran: list[tuple[str, dict[str, Any]]] = []
        folder = tmp_path / str(n)
        folder.mkdir()
        store = FileInstanceStore(folder / "instances", durable=False) if durable else MemoryInstanceStore()
        runtime, provider = make_runtime(folder, store, ran, [])
        script(provider)
        return Harness(runtime, provider, folder, [], ran)

    async def whole(h: Harness) -> tuple[list[Any], list[Any]]:
        run = await h.runtime.start_agent(h.agent(tools="[echo, write_note, task_complete]"))
        await run.message("and then")
        events = [type(e).__name__ async for e in run.events()]
        result = await run.result()
        return events, result.instance.messages

    with anyio.fail_after(LIMIT * 3):
        reference = harness(-1)
        events, messages = await whole(reference)
        shape = [(m.user_text, m.text, [(c.id, c.result) for c in m.tool_calls]) for m in messages]
        for n in range(len(events)):
            h = harness(n)
            run = await h.runtime.start_agent(h.agent(tools="[echo, write_note, task_complete]"))
            await run.message("and then")
            seen = 0
            async for _ in run.events():
                if seen == n:
                    break
                seen += 1
            result = await run.result()
            got = [(m.user_text, m.text, [(c.id, c.result) for c in m.tool_calls]) for m in result.instance.messages]
            assert got == shape, (n, events[n])
            assert sorted(map(str, h.ran)) == sorted(map(str, reference.ran)), (n, events[n])


@pytest.mark.parametrize("durable", [False, True])
async def test_cancel_after_any_number_of_checkpoints_keeps_the_file_whole_and_runs_nothing_twice(
    tmp_path: Path, durable: bool
) -> None:
    with anyio.fail_after(LIMIT * 3):
        for k in range(0, 60, 2):
            ran: list[tuple[str, dict[str, Any]]] = []
            folder = tmp_path / str(k)
            folder.mkdir()
            store = FileInstanceStore(folder / "instances", durable=False) if durable else MemoryInstanceStore()
            runtime, provider = make_runtime(folder, store, ran, [])
            h = Harness(runtime, provider, folder, [], ran)
            h.script(
                calls(("a", "echo", {"text": "one"}), ("b", "echo", {"text": "two"})),
                calls(("c", "write_note", {"text": "three"}), ("d", "write_note", {"text": "four"})),
                done("over"),
            )
            run = await h.runtime.start_agent(h.agent(tools="[echo, write_note, task_complete]"))
            failures: list[BaseException] = []

            async def drive(run: AgentRun[Any] = run, failures: list[BaseException] = failures) -> None:
                try:
                    await run.result()
                except OnellmError as error:
                    failures.append(error)

            async with anyio.create_task_group() as group:
                group.start_soon(drive)
                for _ in range(k):
                    await anyio.lowlevel.checkpoint()
                await run.cancel()
            for failure in failures:
                assert isinstance(failure, onellm.errors.RunCancelledError), (k, failure)
                names(failure, run.instance_id)
            if run.instance_id is not None and failures:
                saved = await store.load(run.instance_id)
                if saved is not None:
                    assert (saved.state, saved.cancelled) == ("stopped", True), k
                    assert all(c.result is not None for m in saved.messages for c in m.tool_calls), k
            while (await run.result()).stop_reason is not StopReason.COMPLETED:
                run.resume()
                if not h.provider.pending:
                    break
            texts = [text for _, args in ran for text in args.values()]
            assert len(texts) == len(set(texts)), (k, ran)


@pytest.mark.parametrize("store", ["harness", "file_harness"])
async def test_a_stale_handle_of_a_deleted_instance_neither_decides_nor_runs_it_back_into_the_store(
    request: pytest.FixtureRequest, store: str
) -> None:
    h: Harness = request.getfixturevalue(store)
    with anyio.fail_after(LIMIT):
        run = await held(h)
        assert await h.runtime.store.delete(run.instance_id)  # type: ignore[arg-type]
        for attempt in (lambda: run.approve("d"), run.result):
            with pytest.raises(onellm.errors.InstanceNotFoundError) as gone:
                await attempt()
            names(gone.value, run.instance_id)
        await run.message("still there?")
        run.resume()
        with pytest.raises(onellm.errors.InstanceNotFoundError):
            await run.result()
        assert await h.runtime.store.load(run.instance_id) is None  # type: ignore[arg-type]
        assert h.ran == []


async def test_approve_and_deny_at_once_at_the_approval_event_then_leaving_the_loop(file_harness: Harness) -> None:
    h = file_harness
    with anyio.fail_after(LIMIT):
        h.script(calls(("d", "deploy", {"target": "prod"})), done("over"))
        run = await h.runtime.start_agent(h.agent(tools="[deploy, task_complete]"))
        ended: list[BaseException | None] = []
        async for event in run.events():
            if isinstance(event, onellm.agents.ApprovalNeeded):
                ended = await outcomes(lambda: run.approve("d"), lambda: run.deny("d", reason="no"))
                break
        assert ended.count(None) == 1, ended
        (lost,) = [e for e in ended if e is not None]
        assert isinstance(lost, AgentStateError), repr(lost)
        names(lost, run.instance_id)
        result = await run.result()
        assert result.stop_reason is StopReason.COMPLETED
        assert h.ran == ([("deploy", {"target": "prod"})] if ended[0] is None else [])
        saved = await h.runtime.store.load(run.instance_id)  # type: ignore[arg-type]
        assert saved is not None
        assert saved.pending_approvals == []
        assert saved.messages[0].tool_calls[0].is_error is (ended[0] is not None)


@pytest.mark.parametrize("durable", [False, True])
async def test_leaving_the_events_loop_after_any_event_of_a_run_with_held_calls(tmp_path: Path, durable: bool) -> None:
    def harness(n: int) -> Harness:
        ran: list[tuple[str, dict[str, Any]]] = []
        folder = tmp_path / str(n)
        folder.mkdir()
        store = FileInstanceStore(folder / "instances", durable=False) if durable else MemoryInstanceStore()
        runtime, provider = make_runtime(folder, store, ran, [])
        provider.enqueue(
            calls(
                ("a", "echo", {"text": "one"}), ("d", "deploy", {"target": "two"}), ("b", "write_note", {"text": "3"})
            ),
            calls(("e", "deploy", {"target": "four"})),
            done("over"),
        )
        return Harness(runtime, provider, folder, [], ran)

    async def finish(run: AgentRun[Any]) -> Any:
        while True:
            result = await run.result()
            if result.stop_reason is not StopReason.WAITING_FOR_APPROVAL:
                return result
            await run.approve()

    def shape(result: Any) -> list[Any]:
        return [(m.text, [(c.id, c.result) for c in m.tool_calls]) for m in result.instance.messages]

    tools = "[echo, deploy, write_note, task_complete]"
    with anyio.fail_after(LIMIT * 3):
        reference = harness(-1)
        run = await reference.runtime.start_agent(reference.agent(tools=tools))
        events: list[str] = []
        while True:
            events += [type(e).__name__ async for e in run.events()]
            if run.pending_approvals:
                await run.approve()
                continue
            break
        expected = shape(await run.result())
        for n in range(len(events)):
            h = harness(n)
            run = await h.runtime.start_agent(h.agent(tools=tools))
            seen = 0
            done_following = False
            while not done_following:
                done_following = True
                async for event in run.events():
                    if seen == n:
                        break
                    seen += 1
                    if (
                        isinstance(event, onellm.agents.ApprovalNeeded)
                        and event.call_id == run.pending_approvals[-1].tool_call_id
                    ):
                        await run.approve()
                        done_following = False
            result = await finish(run)
            assert shape(result) == expected, (n, events[n])
            assert sorted(map(str, h.ran)) == sorted(map(str, reference.ran)), (n, events[n])
            assert result.instance.pending_approvals == []


def test_leaving_the_blocking_events_loop_then_a_blocking_result_runs_every_call_once(tmp_path: Path) -> None:
    ran: list[tuple[str, dict[str, Any]]] = []
    runtime, provider = make_runtime(tmp_path, FileInstanceStore(tmp_path / "instances", durable=False), ran, [])
    path = tmp_path / "agent.yaml"
    path.write_text(
        "model: claude-sonnet\nreferences:\n  - tools: [write_note, task_complete]\n"
        "initialPrompts:\n  - user:\n      - text: go\n"
    )
    provider.enqueue(calls(("a", "write_note", {"text": "one"}), ("b", "write_note", {"text": "two"})), done("over"))
    run = runtime.start_agent_sync(path)
    events = run.events()
    for event in events:
        if isinstance(event, onellm.agents.ToolCallEnded):
            break
    events.close()  # type: ignore[attr-defined]
    assert ran == [("write_note", {"text": "one"})]
    outcome: list[Any] = []
    ended = in_threads(lambda: outcome.append(run.result()))
    assert ended == [None]
    assert outcome[0].stop_reason is StopReason.COMPLETED
    assert ran == [("write_note", {"text": "one"}), ("write_note", {"text": "two"})]
    assert [c.result for c in outcome[0].instance.messages[0].tool_calls] == [[TextPart("noted")], [TextPart("noted")]]
